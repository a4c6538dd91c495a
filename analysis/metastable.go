package analysis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/stormsim/stormsim/shard"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/topology"
)

// Metastable is a metastability search: at each level of a parameter
// (usually workload.rate), and under each variant, run the scenario with its
// trigger and judge whether goodput comes back after the trigger ends.
type Metastable struct {
	// Param and Values are the levels; an empty Param judges the scenario
	// as written only.
	Param  string
	Values []string
	// Variants are judged at every level; Variants[0] is usually the baseline.
	Variants []Variant
	Detector DetectorConfig
}

// Level is the verdict of one (level, variant).
type Level struct {
	Point       int
	Value       string
	VariantName string
	Verdict     Verdict
	Measures    Measures
}

// MetastableReport holds every level's verdict, point-major then variant.
type MetastableReport struct {
	Param    string
	Variants []Variant
	Values   []string
	Levels   []Level
	Detector DetectorConfig
	// Interrupted says the search was stopped (a signal) before every
	// level ran: Levels holds the ones that finished, and the table says so.
	Interrupted bool
}

// judgedBuilder builds a scenario long enough to judge: the arrival window
// is extended, if needed, to the trigger's end plus the recovery bound plus
// K+1 intervals.
func judgedBuilder(b Builder, cfg DetectorConfig) Builder {
	return func(v Variant, extra []string) (*topology.Scenario, error) {
		sc, err := b(v, extra)
		if err != nil {
			return nil, err
		}
		t, err := TriggerOf(sc)
		if err != nil {
			return nil, err
		}
		iv := sc.Interval
		if iv <= 0 {
			iv = time.Second
		}
		need := t.End + cfg.RecoveryBound + time.Duration(cfg.Consecutive+1)*iv
		sc.Duration = max(sc.Duration, need)
		return sc, nil
	}
}

// RunMetastable runs the search (in parallel, as RunSweep does) and judges
// every run with Detect. A run that diverged (the simulator stopped a
// runaway storm) does not recover by definition.
func RunMetastable(ctx context.Context, run Runner, b Builder, m *Metastable, opt SweepOptions) (*MetastableReport, error) {
	cfg := m.Detector.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(m.Variants) == 0 {
		return nil, fmt.Errorf("metastable: no variants")
	}
	jb := judgedBuilder(b, cfg)
	s := &Sweep{Param: m.Param, Values: m.Values, Variants: m.Variants, Replicas: 1}
	if s.Param == "" {
		// One level: the scenario as written, expressed as a no-op override.
		base, err := b(m.Variants[0], nil)
		if err != nil {
			return nil, fmt.Errorf("metastable: %w", err)
		}
		s.Param, s.Values = "workload.rate", []string{strconv.FormatFloat(base.Workload.Rate, 'g', -1, 64)}
	}
	results := make([]*metrics.Result, len(s.Units()))
	opt.Keep = func(u Unit, r *metrics.Result) { results[u.Index] = r }
	opt.Shard = shard.Spec{}
	rows, runErr := RunSweep(ctx, run, jb, s, opt)
	if runErr != nil && ctx.Err() == nil && !errors.Is(runErr, ErrUnitsFailed) {
		return nil, fmt.Errorf("metastable: %w", runErr)
	}
	// Interrupted: judge the levels that finished, and return them with
	// the error, so that what was found is not lost.
	rep := &MetastableReport{Param: s.Param, Variants: m.Variants, Values: s.Values, Detector: cfg, Interrupted: runErr != nil && ctx.Err() != nil}
	for _, row := range rows {
		lv := Level{Point: row.Point, Value: row.Value, VariantName: row.VariantName, Measures: row.Measures}
		where := fmt.Sprintf("metastable: %s=%s, variant %s", s.Param, row.Value, row.VariantName)
		sc, err := jb(m.Variants[row.Variant], []string{s.Param + "=" + row.Value})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		t, _ := TriggerOf(sc)
		lv.Verdict.Trigger = t
		if row.Status == metrics.StatusDiverged || row.Status == StatusFailed {
			lv.Verdict.Recovers = false
		} else {
			series, err := SeriesOf(results[row.Index], sc.Duration)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			if lv.Verdict, err = Detect(series, sc.Warmup, t, cfg); err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
		}
		rep.Levels = append(rep.Levels, lv)
	}
	if runErr != nil {
		return rep, fmt.Errorf("metastable: %w", runErr)
	}
	return rep, nil
}

// Boundary returns, for a variant, the index of the highest level at which
// it recovers (-1 if none) and whether some lower level failed to recover
// (a non-monotone answer worth a second look, e.g. with replicas).
func (r *MetastableReport) Boundary(variant string) (highest int, gaps bool) {
	highest = -1
	failedBelow := false
	for _, lv := range r.Levels {
		if lv.VariantName != variant {
			continue
		}
		if lv.Verdict.Recovers {
			if failedBelow {
				gaps = true
			}
			highest = lv.Point
		} else {
			failedBelow = true
		}
	}
	return highest, gaps
}

// WriteTable prints one line per level with each variant's verdict, then
// the highest level that still recovers for each variant.
func (r *MetastableReport) WriteTable(w io.Writer) error {
	cfg := r.Detector
	if r.Interrupted {
		fmt.Fprintf(w, "partial: interrupted after %d of %d levels; the others were not run\n\n", len(r.Levels), len(r.Values)*len(r.Variants))
	}
	fmt.Fprintf(w, "recovered interval: goodput ≥ (1−%g)×baseline and amplification ≤ (1+%g)×baseline (widened to %g sd of a noisy baseline); %d in a row within %v of the trigger's end\n\n",
		cfg.Tolerance, cfg.AmpTolerance, cfg.NoiseZ, cfg.Consecutive, cfg.RecoveryBound)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, r.Param)
	for _, v := range r.Variants {
		fmt.Fprintf(tw, "\t%s", v.Name)
	}
	fmt.Fprintln(tw)
	byPoint := map[int][]Level{}
	for _, lv := range r.Levels {
		byPoint[lv.Point] = append(byPoint[lv.Point], lv)
	}
	for p, val := range r.Values {
		fmt.Fprint(tw, val)
		for _, v := range r.Variants {
			cell := "not run (interrupted)"
			for _, lv := range byPoint[p] {
				if lv.VariantName == v.Name {
					cell = shortVerdict(lv)
				}
			}
			fmt.Fprintf(tw, "\t%s", cell)
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.Levels) > 0 {
		fmt.Fprintf(w, "\ntrigger: %s (%v to %v)\n", r.Levels[0].Verdict.Trigger.Label, r.Levels[0].Verdict.Trigger.Start, r.Levels[0].Verdict.Trigger.End)
	}
	fmt.Fprintln(w)
	for _, v := range r.Variants {
		hi, gaps := r.Boundary(v.Name)
		switch {
		case hi < 0 && r.Interrupted:
			fmt.Fprintf(w, "%s: recovers at none of the levels that finished\n", v.Name)
		case hi < 0:
			fmt.Fprintf(w, "%s: does not recover at any level tried\n", v.Name)
		default:
			note := ""
			if gaps {
				note = " (but fails at some lower level: check with replicas)"
			}
			fmt.Fprintf(w, "%s: highest %s that recovers: %s%s\n", v.Name, r.Param, r.Values[hi], note)
		}
	}
	return nil
}

func shortVerdict(lv Level) string {
	switch {
	case lv.Measures.Status == metrics.StatusDiverged:
		return "does not recover (diverged)"
	case lv.Measures.Status == StatusFailed:
		return "run failed"
	case lv.Verdict.Recovers:
		return fmt.Sprintf("recovers in %v", lv.Verdict.TimeToRecover)
	case lv.Verdict.Late:
		return lv.Verdict.lateString()
	}
	return fmt.Sprintf("DOES NOT RECOVER (goodput %.0f%%)", 100*lv.Verdict.Final)
}

// Ramp is the hysteresis experiment's load profile: the rate steps up
// through Levels, each held for Hold, then back down through the same
// levels. The top level is held once and belongs to both paths.
type Ramp struct {
	Levels []float64
	Hold   time.Duration
}

// Steps returns the ramp's rates in time order: up, then down.
func (r Ramp) Steps() []float64 {
	out := append([]float64(nil), r.Levels...)
	for i := len(r.Levels) - 2; i >= 0; i-- {
		out = append(out, r.Levels[i])
	}
	return out
}

// Validate reports a ramp that cannot be run.
func (r Ramp) Validate() error {
	if len(r.Levels) < 2 {
		return fmt.Errorf("ramp: need at least 2 levels, got %d", len(r.Levels))
	}
	if r.Hold <= 0 {
		return fmt.Errorf("ramp: hold must be > 0, got %v", r.Hold)
	}
	for i, l := range r.Levels {
		if l <= 0 || (i > 0 && l <= r.Levels[i-1]) {
			return fmt.Errorf("ramp: levels must be positive and increasing, got %v", r.Levels)
		}
	}
	return nil
}

// Apply makes sc run the ramp instead of its own workload profile and
// trigger: its rate schedule becomes the ramp, its faults are removed (the
// overload itself is the trigger), the warm-up is dropped and its duration
// becomes the ramp's length.
func (r Ramp) Apply(sc *topology.Scenario) {
	steps := r.Steps()
	sc.Workload.Rate = steps[0]
	sc.Workload.Schedule = nil
	for i, rate := range steps[1:] {
		sc.Workload.Schedule = append(sc.Workload.Schedule, topology.RateStep{At: time.Duration(i+1) * r.Hold, Rate: rate})
	}
	sc.Faults = nil
	sc.Warmup = 0
	sc.Duration = time.Duration(len(steps)) * r.Hold
}

// HysteresisPoint is one hold of the ramp: its target rate and what was
// measured over the last half of the hold (after the system settled).
type HysteresisPoint struct {
	Rate float64
	// Offered and Goodput are in requests per second.
	Offered, Goodput float64
}

// Hysteresis is one variant's ramp: goodput against offered load going up
// and coming back down. A metastable system shows two different curves: on
// the way down goodput stays low at loads it handled on the way up.
type Hysteresis struct {
	VariantName string
	Up, Down    []HysteresisPoint
}

// HysteresisOf reads a ramp run's time series into the two paths.
func HysteresisOf(res *metrics.Result, r Ramp) (Hysteresis, error) {
	ts := res.Series
	if ts == nil || ts.Interval <= 0 {
		return Hysteresis{}, fmt.Errorf("hysteresis: result has no time series")
	}
	perSec := 1 / ts.Interval.Seconds()
	good := ts.Values(metrics.ColGoodput)
	goodScale := 1.0
	if good == nil {
		good, goodScale = ts.Values(metrics.ColSucceeded), perSec
	}
	offered := ts.Values(metrics.ColOffered)
	if good == nil || offered == nil {
		return Hysteresis{}, fmt.Errorf("hysteresis: time series lacks goodput or offered (columns: %s)", strings.Join(ts.Columns, ", "))
	}
	steps := r.Steps()
	var h Hysteresis
	for j, rate := range steps {
		from := time.Duration(j)*r.Hold + r.Hold/2
		to := time.Duration(j+1) * r.Hold
		var g, o float64
		n := 0
		for i := range ts.Rows {
			st := ts.Start + time.Duration(i)*ts.Interval
			if st >= from && st+ts.Interval <= to {
				g += good[i] * goodScale
				o += offered[i] * perSec
				n++
			}
		}
		if n == 0 {
			return Hysteresis{}, fmt.Errorf("hysteresis: hold %d (%v to %v) has no whole interval in its second half; make the hold at least 2 intervals", j, from-r.Hold/2, to)
		}
		p := HysteresisPoint{Rate: rate, Offered: o / float64(n), Goodput: g / float64(n)}
		if j < len(r.Levels) {
			h.Up = append(h.Up, p)
		}
		if j >= len(r.Levels)-1 {
			h.Down = append(h.Down, p)
		}
	}
	return h, nil
}

// RunHysteresis runs the ramp under each variant (sequentially, with the
// baseline's seed) and returns each variant's two paths, with the results.
func RunHysteresis(ctx context.Context, run Runner, b Builder, variants []Variant, r Ramp) ([]Hysteresis, []*metrics.Result, error) {
	if err := r.Validate(); err != nil {
		return nil, nil, err
	}
	var seed uint64
	var hs []Hysteresis
	var results []*metrics.Result
	for i, v := range variants {
		sc, err := b(v, nil)
		if err != nil {
			return nil, nil, fmt.Errorf("hysteresis: variant %s: %w", v.Name, err)
		}
		if i == 0 {
			seed = sc.Seed
		}
		sc.Seed = seed
		r.Apply(sc)
		res, err := run.Run(ctx, sc)
		if res == nil || (err != nil && ctx.Err() != nil) {
			if err == nil {
				err = fmt.Errorf("runner returned no result")
			}
			return nil, nil, fmt.Errorf("hysteresis: variant %s: %w", v.Name, err)
		}
		h, err := HysteresisOf(res, r)
		if err != nil {
			return nil, nil, fmt.Errorf("hysteresis: variant %s: %w", v.Name, err)
		}
		h.VariantName = v.Name
		hs = append(hs, h)
		results = append(results, res)
	}
	return hs, results, nil
}
