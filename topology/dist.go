package topology

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stormsim/stormsim/inputfile"
	"github.com/stormsim/stormsim/policies"
)

// maxBadSampleLines bounds how many bad lines of one sample file are
// reported individually; the rest are counted.
const maxBadSampleLines = 3

// distParams lists the parameter keys each distribution kind reads.
var distParams = map[DistKind][]string{
	"constant":    {"value"},
	"exponential": {"mean"},
	"uniform":     {"min", "max"},
	"normal":      {"mean", "stddev"},
	"lognormal":   {"p50", "p99", "mean", "stddev"},
	"mixture":     {"modes"},
	"empirical":   {"file", "unit"},
}

// setParams returns the parameter keys of d that hold a value.
func setParams(d *Dist) []string {
	var out []string
	for _, p := range []struct {
		key string
		set bool
	}{
		{"value", d.Value != 0}, {"mean", d.Mean != 0}, {"stddev", d.Stddev != 0},
		{"min", d.Min != 0}, {"max", d.Max != 0}, {"p50", d.P50 != 0}, {"p99", d.P99 != 0},
		{"modes", len(d.Modes) > 0}, {"file", d.File != ""}, {"unit", d.Unit != ""},
	} {
		if p.set {
			out = append(out, p.key)
		}
	}
	return out
}

// dist validates a distribution and loads an empirical one's samples.
func (v *validator) dist(d *Dist, p string) {
	checkDist(d, p, v.add, v.loadSamples)
}

// Check reports the first reason distribution d, already decoded (an
// empirical one's samples loaded), is not one a scenario may hold: the
// same rule, the one rule, that validation applies to a scenario file's
// distributions (package dist builds its samplers only from what it
// accepts). Its error names the parameter: "mean: must be > 0, got 0s".
func (d *Dist) Check() error {
	var first error
	add := func(path, format string, args ...any) {
		if first == nil {
			msg := fmt.Sprintf(format, args...)
			if path = strings.TrimPrefix(path, "."); path != "" {
				msg = path + ": " + msg
			}
			first = errors.New(msg)
		}
	}
	checkDist(d, "", add, func(d *Dist, p string) {
		if len(d.Samples) == 0 {
			add(p+".file", "no samples loaded (file %q)", d.File)
		}
	})
	return first
}

// checkDist is the rule of a valid distribution, reporting each problem
// to add at its path under p; empirical is given each empirical
// distribution met (to load or check its samples).
func checkDist(d *Dist, p string, add func(path, format string, args ...any), empirical func(d *Dist, p string)) {
	if d.Dist == "" {
		add(p+".dist", "required (one of %s)", policies.OrList(policies.Names(distKinds)))
		return
	}
	if !slices.Contains(distKinds, d.Dist) {
		add(p+".dist", "unknown %q (want %s)", d.Dist, policies.OrList(policies.Names(distKinds)))
		return
	}
	for _, k := range setParams(d) {
		if !slices.Contains(distParams[d.Dist], k) {
			add(p+"."+k, "does not apply to dist %s (it takes %s)", d.Dist, policies.OrList(distParams[d.Dist]))
		}
	}
	for _, k := range []struct {
		key string
		d   time.Duration
	}{{"value", d.Value}, {"mean", d.Mean}, {"stddev", d.Stddev}, {"min", d.Min}, {"max", d.Max}, {"p50", d.P50}, {"p99", d.P99}} {
		if k.d < 0 {
			add(p+"."+k.key, "must be ≥ 0, got %v", k.d)
		}
	}
	positive := func(key string, x time.Duration) {
		if x <= 0 {
			add(p+"."+key, "must be > 0, got %v", x)
		}
	}
	switch d.Dist {
	case "exponential":
		positive("mean", d.Mean)
	case "uniform":
		if d.Min > d.Max {
			add(p+".max", "must be ≥ min (%v), got %v", d.Min, d.Max)
		}
	case "normal":
		// mean ≥ 0 (checked above): drawn truncated at 0, a normal of
		// mean 0 is the half-normal.
	case "lognormal":
		switch {
		case d.P50 == 0 && d.P99 == 0 && (d.Mean != 0 || d.Stddev != 0):
			if d.Mean <= 0 || d.Stddev <= 0 {
				add(p, "lognormal by mean and stddev needs both > 0, got mean %v, stddev %v", d.Mean, d.Stddev)
			}
		case d.Mean != 0 || d.Stddev != 0:
			add(p, "lognormal takes p50 and p99, or mean and stddev, not both")
		case d.P50 <= 0:
			add(p+".p50", "must be > 0, got %v", d.P50)
		case d.P99 <= d.P50:
			add(p+".p99", "must be > p50 (%v), got %v", d.P50, d.P99)
		}
	case "mixture":
		if len(d.Modes) == 0 {
			add(p+".modes", "required: at least one {weight, dist, ...}")
		}
		for i := range d.Modes {
			mp := fmt.Sprintf("%s.modes[%d]", p, i)
			switch w := d.Modes[i].Weight; {
			case !(w > 0):
				add(mp+".weight", "must be > 0, got %v", w)
			case math.IsInf(w, 0):
				add(mp+".weight", "must be finite, got %v", w)
			}
			checkDist(&d.Modes[i].Dist, mp, add, empirical)
		}
	case "empirical":
		empirical(d, p)
	}
}

// loadSamples reads an empirical distribution's file, one sample per line
// in d.Unit (default ms); blank lines and lines starting with # are skipped.
func (v *validator) loadSamples(d *Dist, p string) {
	if v.brokenUnder(p + ".unit") {
		return // an unknown unit: the samples cannot be read
	}
	unit := time.Millisecond
	if d.Unit != "" {
		unit = units[d.Unit]
	}
	if d.File == "" {
		v.add(p+".file", "required: a file of samples, one per line")
		return
	}
	path := d.File
	if !filepath.IsAbs(path) && v.sc.File != "" {
		path = filepath.Join(filepath.Dir(v.sc.File), path)
	}
	data, err := inputfile.Read(path, maxSampleFile)
	if err != nil {
		v.add(p+".file", "%v", err)
		return
	}
	var samples []time.Duration
	bad := 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for line := 1; sc.Scan(); line++ {
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		x, err := strconv.ParseFloat(s, 64)
		msg := ""
		switch {
		case err != nil:
			// Never quote the line: the file may not be what the
			// scenario's author says it is (empirical: {file: /etc/shadow}).
			msg = fmt.Sprintf("not a sample: want one number of %s per line", unitName(d.Unit))
		case x < 0 || math.IsNaN(x) || x*float64(unit) >= math.MaxInt64:
			msg = "sample out of range: want a non-negative duration"
		}
		if msg != "" {
			if bad++; bad <= maxBadSampleLines {
				v.probs = append(v.probs, Problem{File: path, Line: line, Path: p + ".file", Msg: msg})
			}
			continue
		}
		samples = append(samples, time.Duration(x*float64(unit)))
	}
	if err := sc.Err(); err != nil {
		v.add(p+".file", "%s: %v", path, err)
		return
	}
	if bad > maxBadSampleLines {
		v.add(p+".file", "%s: %d more bad lines", path, bad-maxBadSampleLines)
	}
	if bad == 0 && len(samples) == 0 {
		v.add(p+".file", "%s holds no samples", path)
	}
	if bad == 0 {
		d.Samples = samples
	}
}

// maxSampleFile bounds an empirical sample file's size.
const maxSampleFile = 64 << 20

func unitName(u TimeUnit) string {
	if u == "" {
		return "ms"
	}
	return string(u)
}
