package analysis

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/shard"
)

// Sweep is a parameter sweep: one scenario path varied over values, under
// several variants, with replicas per point.
type Sweep struct {
	// Param is the swept path in --set syntax, e.g. workload.rate.
	Param string
	// Values are the parameter's values as --set takes them.
	Values []string
	// Variants are the columns of the experiment; Variants[0] is usually
	// the baseline (see Variants).
	Variants []Variant
	// Replicas per (point, variant); 0 means 1.
	Replicas int
}

// Unit is one run of a sweep: a point, a variant and a replica. Units are
// numbered point-major (then variant, then replica), and that numbering is
// the order of every output.
type Unit struct {
	Index   int
	Point   int
	Variant int
	Replica int
}

func (s *Sweep) replicas() int { return max(s.Replicas, 1) }

// Units returns every work unit of the sweep in index order. It is a pure
// function of the sweep's shape, so that shards of one sweep agree on it.
func (s *Sweep) Units() []Unit {
	nr := s.replicas()
	units := make([]Unit, 0, len(s.Values)*len(s.Variants)*nr)
	for p := range s.Values {
		for v := range s.Variants {
			for r := range nr {
				units = append(units, Unit{Index: len(units), Point: p, Variant: v, Replica: r})
			}
		}
	}
	return units
}

// IncompleteSweepError says that rows, merged from a sweep's shards, do
// not make the whole sweep: Have of its Want units are there, and unit
// First is the first missing one.
type IncompleteSweepError struct{ Have, Want, First int }

func (e *IncompleteSweepError) Error() string {
	return fmt.Sprintf("the shards hold %d of the sweep's %d units (unit %d is missing): a shard is unfinished or missing", e.Have, e.Want, e.First)
}

// CheckWhole checks that rows in unit order (as MergeRows returns them)
// make one whole sweep: every unit 0 … P·V·R−1 exactly once, for the P
// points, V variants and R replicas the rows show. A shard interrupted
// before its last unit, or left out, shows up as a missing unit, reported
// as an *IncompleteSweepError.
func CheckWhole(rows []Row) error {
	points, replicas := 0, 0
	variants := map[string]bool{}
	for _, r := range rows {
		points = max(points, r.Point+1)
		replicas = max(replicas, r.Replica+1)
		variants[r.VariantName] = true
	}
	want := points * len(variants) * replicas
	for i, r := range rows {
		if r.Index != i {
			return &IncompleteSweepError{Have: len(rows), Want: max(want, r.Index+1), First: i}
		}
	}
	if len(rows) != want {
		return &IncompleteSweepError{Have: len(rows), Want: want, First: len(rows)}
	}
	return nil
}

// Validate reports a sweep that cannot run.
func (s *Sweep) Validate() error {
	switch {
	case strings.TrimSpace(s.Param) == "" || strings.Contains(s.Param, "="):
		return fmt.Errorf("sweep: param %q: want a scenario path such as workload.rate", s.Param)
	case len(s.Values) == 0:
		return errors.New("sweep: no values (use --values or --range)")
	case len(s.Variants) == 0:
		return errors.New("sweep: no variants")
	case s.Replicas < 0:
		return fmt.Errorf("sweep: replicas must be ≥ 1, got %d", s.Replicas)
	case s.Replicas > MaxUnits || len(s.Values)*len(s.Variants)*max(s.Replicas, 1) > MaxUnits:
		// The units are laid out in memory before the first run.
		return fmt.Errorf("sweep: %d values × %d variants × %d replicas is more than %d runs", len(s.Values), len(s.Variants), max(s.Replicas, 1), MaxUnits)
	}
	for i, v := range s.Values {
		if strings.TrimSpace(v) == "" || strings.ContainsAny(v, ",\n\"") {
			return fmt.Errorf("sweep: values[%d] %q: must be non-empty without commas or quotes", i, v)
		}
	}
	return nil
}

// CheckBuilds builds the scenario of every (point, variant) of the sweep
// with b, and reports the first that does not build: an override the
// scenario rejects is found before any run starts.
func (s *Sweep) CheckBuilds(b Builder) error {
	for _, v := range s.Values {
		for _, vr := range s.Variants {
			if _, err := b(vr, []string{s.Param + "=" + v}); err != nil {
				return fmt.Errorf("variant %s, --param %s=%s: %w", vr.Name, s.Param, v, err)
			}
		}
	}
	return nil
}

// ParseValues parses a --values list: comma-separated, kept as written.
func ParseValues(s string) ([]string, error) {
	var out []string
	for _, v := range strings.Split(s, ",") {
		v = strings.TrimSpace(v)
		if v == "" {
			return nil, fmt.Errorf("values %q: empty value", s)
		}
		out = append(out, v)
	}
	return out, nil
}

// maxRangePoints bounds a --range so that a typo in the step cannot queue
// millions of runs.
const maxRangePoints = 10000

// ParseRange expands a --range from:to:step into values from, from+step, …
// up to and including to (within a rounding error). The three parts are
// numbers, or Go durations (then all three must be). Numbers are rounded to
// 12 significant digits so that 0.1 steps print as 0.3, not
// 0.30000000000000004.
func ParseRange(s string) ([]string, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return nil, fmt.Errorf("range %q: want from:to:step", s)
	}
	var f [3]float64
	isDur := true
	var d [3]time.Duration
	for i, p := range parts {
		v, err := time.ParseDuration(strings.TrimSpace(p))
		if err != nil || strings.TrimSpace(p) == "0" {
			isDur = false
			break
		}
		d[i] = v
	}
	if !isDur {
		for i, p := range parts {
			v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("range %q: part %d %q is neither a number nor a duration (all three must be the same kind)", s, i+1, p)
			}
			f[i] = v
		}
	} else {
		for i := range d {
			f[i] = float64(d[i])
		}
	}
	from, to, step := f[0], f[1], f[2]
	if step <= 0 || to < from {
		return nil, fmt.Errorf("range %q: want from ≤ to and step > 0", s)
	}
	count := math.Floor((to-from)/step+1e-9) + 1
	if !(count <= maxRangePoints) { // also catches an infinite span
		return nil, fmt.Errorf("range %q: %g points, more than %d", s, count, maxRangePoints)
	}
	n := int(count)
	out := make([]string, n)
	for i := range n {
		x := from + float64(i)*step
		if isDur {
			out[i] = time.Duration(math.Round(x)).String()
		} else {
			out[i] = strconv.FormatFloat(roundSig(x, 12), 'g', -1, 64)
		}
	}
	return out, nil
}

// roundSig rounds x to sig significant decimal digits.
func roundSig(x float64, sig int) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', sig, 64), 64)
	return v
}

// Row is the outcome of one unit of a sweep: one line of sweep.csv.
type Row struct {
	Unit
	Param       string
	Value       string
	VariantName string
	Seed        uint64
	Measures
}

// SweepOptions control how a sweep runs; none changes its results.
type SweepOptions struct {
	// Workers run units in parallel; 0 means runtime.GOMAXPROCS(0).
	Workers int
	// Shard selects the units whose index is ≡ I (mod N), so that N
	// machines can split one sweep and MergeRows can join their CSV files
	// (zero: all units).
	Shard shard.Spec
	// Progress, if not nil, is called after each unit with the units done
	// and the units this shard runs. Calls are serialized.
	Progress func(done, total int)
	// Keep, if not nil, is given every unit's full result (from the worker
	// that ran it, serialized), e.g. to keep time series for plots.
	Keep func(u Unit, r *metrics.Result)
}

// RunSweep runs the sweep's units in this shard on opt.Workers goroutines
// and returns their rows in unit order. Each unit's scenario is built from
// its variant with Param=Value laid over it, and its seed is
// ReplicaSeed(baseline seed, replica): the rows depend on the inputs only,
// never on the number of workers or the order in which units finish.
//
// On the first error (or when ctx is done) no further units start; the rows
// of the units that completed are returned with the error.
func RunSweep(ctx context.Context, run Runner, b Builder, s *Sweep, opt SweepOptions) ([]Row, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	base, err := b(s.Variants[0], nil)
	if err != nil {
		return nil, fmt.Errorf("sweep: variant %s: %w", s.Variants[0].Name, err)
	}
	baseSeed := base.Seed
	var units []Unit
	for _, u := range s.Units() {
		if opt.Shard.Owns(u.Index) {
			units = append(units, u)
		}
	}
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, max(len(units), 1))

	rows := make([]Row, len(units))
	done := make([]bool, len(units))
	var (
		mu       sync.Mutex // serializes rows, done, Keep and Progress
		finished int
		failed   []error // units whose run failed (not interrupted)
	)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	for i, u := range units {
		if gctx.Err() != nil {
			break // the first error (or ctx) stops the units not yet started
		}
		g.Go(func() error {
			if gctx.Err() != nil {
				return nil // stopped while this unit waited for a worker
			}
			row, res, err := runUnit(gctx, run, b, s, u, baseSeed)
			if err != nil && gctx.Err() == nil {
				// One point that fails (a scenario the simulator cannot
				// run) is reported failed; the rest go on.
				mu.Lock()
				defer mu.Unlock()
				failed = append(failed, err)
				rows[i], done[i] = failedRow(s, u), true
				finished++
				if opt.Progress != nil {
					opt.Progress(finished, len(units))
				}
				return nil
			}
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			rows[i], done[i] = row, true
			finished++
			if opt.Keep != nil {
				opt.Keep(u, res)
			}
			if opt.Progress != nil {
				opt.Progress(finished, len(units))
			}
			return nil
		})
	}
	firstErr := g.Wait()

	out := rows[:0]
	for i := range rows {
		if done[i] {
			out = append(out, rows[i])
		}
	}
	if firstErr == nil && len(out) < len(units) {
		firstErr = fmt.Errorf("sweep: stopped after %d of %d units: %w", len(out), len(units), context.Cause(ctx))
	}
	if firstErr == nil && len(failed) > 0 {
		firstErr = unitsFailed(failed, len(units))
	}
	return out, firstErr
}

func runUnit(ctx context.Context, run Runner, b Builder, s *Sweep, u Unit, baseSeed uint64) (_ Row, _ *metrics.Result, err error) {
	v := s.Variants[u.Variant]
	val := s.Values[u.Point]
	where := fmt.Sprintf("sweep: unit %d (%s=%s, variant %s, replica %d)", u.Index, s.Param, val, v.Name, u.Replica)
	defer func() {
		if p := recover(); p != nil {
			// A run that panics is a failed point, not a dead sweep.
			err = fmt.Errorf("%s: the run panicked: %v", where, p)
		}
	}()
	sc, err := build(b, v, []string{s.Param + "=" + val}, baseSeed, u.Replica)
	if err != nil {
		return Row{}, nil, fmt.Errorf("%s: %w", where, err)
	}
	res, err := run.Run(ctx, sc)
	if res == nil {
		if err == nil {
			err = errors.New("runner returned no result")
		}
		return Row{}, nil, fmt.Errorf("%s: %w", where, err)
	}
	if ctx.Err() != nil {
		// An interrupted run is partial: it is not a unit's result.
		return Row{}, nil, fmt.Errorf("%s: %w", where, context.Cause(ctx))
	}
	// A run that diverged still produced a result: its status says so.
	return Row{
		Unit: u, Param: s.Param, Value: val, VariantName: v.Name,
		Seed: sc.Seed, Measures: MeasuresOf(res),
	}, res, nil
}
