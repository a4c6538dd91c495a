package tune

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/stormsim/stormsim/topology"
)

// maxLatency bounds a single parsed latency, so that absurd values fail
// loudly instead of overflowing a time.Duration.
const maxLatency = 24 * time.Hour

// ReadSamples reads latencies from r. With column == "" the input holds one
// number per line (blank lines and lines starting with # are skipped);
// otherwise it is CSV whose header row names column. Plain numbers are in
// unit; a Go duration string such as "12.5ms" carries its own unit. name
// labels errors, which read "name:LINE: ...".
func ReadSamples(r io.Reader, name, column string, unit time.Duration) ([]time.Duration, error) {
	if unit <= 0 {
		return nil, fmt.Errorf("%s: unit must be > 0, got %v", name, unit)
	}
	r = skipBOM(r)
	var out []time.Duration
	var err error
	if column == "" {
		out, err = readLines(r, name, unit)
	} else {
		out, err = readCSV(r, name, column, unit)
	}
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: %w", name, errNoSamples)
	}
	return out, nil
}

func readLines(r io.Reader, name string, unit time.Duration) ([]time.Duration, error) {
	br := bufio.NewReader(r)
	var out []time.Duration
	for line := 1; ; line++ {
		text, err := br.ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		t := strings.TrimSpace(text)
		if t != "" && !strings.HasPrefix(t, "#") {
			d, perr := parseLatency(t, unit)
			if perr != nil {
				return nil, fmt.Errorf("%s:%d: %w", name, line, perr)
			}
			out = append(out, d)
		}
		if err != nil {
			return out, nil
		}
	}
}

func readCSV(r io.Reader, name, column string, unit time.Duration) ([]time.Duration, error) {
	cr := csv.NewReader(r)
	cr.Comment = '#'
	cr.TrimLeadingSpace = true
	cr.ReuseRecord = true
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w (empty file, expected a CSV header with column %q)", name, errNoSamples, column)
	}
	if err != nil {
		return nil, csvError(name, err)
	}
	idx := -1
	for i, h := range header {
		if strings.TrimSpace(h) == column {
			idx = i
			break
		}
	}
	if idx < 0 {
		line, _ := cr.FieldPos(0)
		return nil, fmt.Errorf("%s:%d: no column %q (columns: %s)", name, line, column, topology.Shorten(strings.Join(header, ", ")))
	}
	var out []time.Duration
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, csvError(name, err)
		}
		line, _ := cr.FieldPos(idx)
		d, err := parseLatency(strings.TrimSpace(rec[idx]), unit)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: column %q: %w", name, line, column, err)
		}
		out = append(out, d)
	}
}

// skipBOM drops a leading UTF-8 byte order mark, which spreadsheet
// exports put in front of the first header.
func skipBOM(r io.Reader) io.Reader {
	br := bufio.NewReader(r)
	if b, err := br.Peek(3); err == nil && string(b) == "\ufeff" {
		br.Discard(3)
	}
	return br
}

// csvError puts the line of a CSV syntax error in front, like every
// other error of this package.
func csvError(name string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s:%d: %w", name, pe.Line, pe.Err)
	}
	return fmt.Errorf("%s: %w", name, err)
}

// parseLatency parses a number in unit, or a Go duration string.
func parseLatency(s string, unit time.Duration) (time.Duration, error) {
	if s == "" {
		return 0, errors.New("empty value")
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		d, derr := time.ParseDuration(s)
		if derr != nil {
			return 0, fmt.Errorf("bad number %q", topology.Shorten(s))
		}
		v = float64(d) / float64(unit)
	}
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return 0, fmt.Errorf("bad number %q", topology.Shorten(s))
	case v < 0:
		return 0, fmt.Errorf("negative latency %q", topology.Shorten(s))
	case v*float64(unit) > float64(maxLatency):
		return 0, fmt.Errorf("latency %q exceeds %v", topology.Shorten(s), maxLatency)
	}
	return time.Duration(math.Round(v * float64(unit))), nil
}

// VegetaResults are the latencies read from vegeta results.
type VegetaResults struct {
	// Samples are the latencies of the successful (2xx) requests.
	Samples []time.Duration
	// Excluded counts results left out: status 0 (no response) or not 2xx.
	Excluded int
	// ByCode counts every result by status code, 0 included.
	ByCode map[int]int
}

// vegetaResult is the part of a vegeta result line this package reads.
// `vegeta encode --to json` writes one object per line with latency in
// nanoseconds and code the HTTP status (0 when no response arrived).
type vegetaResult struct {
	Code    *int   `json:"code"`
	Latency *int64 `json:"latency"`
}

// ReadVegeta reads results written by `vegeta encode --to json`: JSON lines
// with "latency" in ns and "code" the HTTP status. Only 2xx results become
// samples; the others are counted in Excluded, because the latency of a
// refused or failed request says nothing about how long a success takes.
func ReadVegeta(r io.Reader, name string) (VegetaResults, error) {
	br := bufio.NewReader(skipBOM(r))
	res := VegetaResults{ByCode: map[int]int{}}
	for line := 1; ; line++ {
		text, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return VegetaResults{}, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		if t := strings.TrimSpace(string(text)); t != "" {
			var v vegetaResult
			if jerr := json.Unmarshal([]byte(t), &v); jerr != nil {
				return VegetaResults{}, fmt.Errorf("%s:%d: not a vegeta JSON result: %w", name, line, jerr)
			}
			switch {
			case v.Latency == nil:
				return VegetaResults{}, fmt.Errorf("%s:%d: missing field \"latency\"", name, line)
			case v.Code == nil:
				return VegetaResults{}, fmt.Errorf("%s:%d: missing field \"code\"", name, line)
			case *v.Latency < 0:
				return VegetaResults{}, fmt.Errorf("%s:%d: negative latency %d", name, line, *v.Latency)
			case *v.Latency > int64(maxLatency):
				return VegetaResults{}, fmt.Errorf("%s:%d: latency %dns exceeds %v", name, line, *v.Latency, maxLatency)
			}
			res.ByCode[*v.Code]++
			if *v.Code >= 200 && *v.Code < 300 {
				res.Samples = append(res.Samples, time.Duration(*v.Latency))
			} else {
				res.Excluded++
			}
		}
		if err != nil {
			break
		}
	}
	if len(res.Samples) == 0 && res.Excluded == 0 {
		return VegetaResults{}, fmt.Errorf("%s: %w (no results)", name, errNoSamples)
	}
	if len(res.Samples) == 0 {
		return VegetaResults{}, fmt.Errorf("%s: %w (%d results, all excluded as no response or non-2xx)", name, errNoSamples, res.Excluded)
	}
	return res, nil
}
