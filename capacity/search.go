package capacity

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/stormsim/stormsim/analysis"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/topology"
)

// Runner runs one scenario to its result. The command line passes the
// simulator (sim.Run); tests pass fakes. It must be safe for concurrent use
// when Options.Workers > 1; each call gets its own Scenario.
type Runner func(ctx context.Context, sc *topology.Scenario) (*metrics.Result, error)

// Builder builds a fresh scenario with overrides (path=value, the --set
// syntax) laid over the base scenario, for example topology.Scenario.WithSets.
type Builder func(sets []string) (*topology.Scenario, error)

// Orientation says on which side of the boundary the SLO holds.
type Orientation int

// Orientations. Auto decides from the two ends of the range: a search for
// the smallest sufficient resource finds HoldsAbove, a capacity search
// HoldsBelow.
const (
	Auto Orientation = iota
	// HoldsBelow: the SLO holds up to the boundary (load).
	HoldsBelow
	// HoldsAbove: the SLO holds from the boundary up (workers).
	HoldsAbove
)

// String returns "auto", "holds below" or "holds above".
func (o Orientation) String() string {
	switch o {
	case HoldsBelow:
		return "holds below"
	case HoldsAbove:
		return "holds above"
	}
	return "auto"
}

// Defaults of a Search.
const (
	DefaultReplicas   = 3
	DefaultConfidence = 0.95
	// DefaultSteps is how many halvings of the range the default resolution
	// allows: resolution = (Hi − Lo) / 2^DefaultSteps.
	DefaultSteps = 7
)

// Search is one boundary search: the value of Param, between Lo and Hi, at
// which the SLO (and recovery after the scenario's faults) stops holding.
type Search struct {
	// Param is the searched scenario path (workload.rate).
	Param string
	// Kind is the path's kind (see PathOf); Integer searches integers.
	Kind Kind
	// Lo and Hi bound the search (Duration values in seconds).
	Lo, Hi float64
	// Resolution ends the search when the bracket is this narrow. 0 means
	// (Hi − Lo)/2^DefaultSteps, and at least 1 for integers.
	Resolution float64
	// Replicas per point; 0 means DefaultReplicas. Replica r runs with
	// analysis.ReplicaSeed(seed, r) at every point: common random numbers.
	Replicas int
	// Confidence of the statements made at each point; 0 means 0.95.
	Confidence float64
	SLO        SLO
	// Detector judges recovery after the faults (analysis.Detect); its
	// zero value uses analysis' defaults.
	Detector analysis.DetectorConfig
	// Fixed overrides are applied to every run before Param: the target
	// load of a what-if solve.
	Fixed []string
	// Orientation is the side on which the SLO holds; Auto decides from
	// the ends of the range.
	Orientation Orientation
	// PassOnly stops after locating where the SLO stops being shown to
	// hold. By default a second bisection then locates where it is shown
	// to fail, so the answer is bracketed by two confident statements.
	PassOnly bool
}

// withDefaults returns s with defaults filled in.
func (s Search) withDefaults() Search {
	if s.Replicas <= 0 {
		s.Replicas = DefaultReplicas
	}
	if s.Confidence == 0 {
		s.Confidence = DefaultConfidence
	}
	if s.Resolution <= 0 {
		s.Resolution = (s.Hi - s.Lo) / math.Exp2(DefaultSteps)
	}
	if s.Kind == Integer {
		s.Resolution = max(1, math.Ceil(s.Resolution))
		s.Lo, s.Hi = math.Ceil(s.Lo), math.Floor(s.Hi)
	}
	s.Detector = s.Detector.WithDefaults()
	return s
}

// Validate reports a search that cannot run.
func (s Search) Validate() error {
	switch {
	case s.Param == "":
		return errors.New("capacity: no parameter to search")
	case !(s.Lo < s.Hi):
		return fmt.Errorf("capacity: %s: range %s:%s: want lo < hi", s.Param, s.Kind.Format(s.Lo), s.Kind.Format(s.Hi))
	case s.Kind == Integer && math.Ceil(s.Lo) >= math.Floor(s.Hi):
		return fmt.Errorf("capacity: %s: range %g:%g holds fewer than two integers", s.Param, s.Lo, s.Hi)
	case s.Replicas < 0:
		return fmt.Errorf("capacity: replicas must be ≥ 1, got %d", s.Replicas)
	case s.Confidence < 0 || s.Confidence >= 1:
		return fmt.Errorf("capacity: confidence must be in (0, 1), got %g", s.Confidence)
	case len(s.SLO) == 0:
		return errors.New("capacity: no SLO")
	case s.Resolution < 0 || math.IsNaN(s.Resolution):
		return fmt.Errorf("capacity: resolution must be ≥ 0, got %g", s.Resolution)
	}
	return s.Detector.WithDefaults().Validate()
}

// TermLevel is the one-sided confidence level at which each term is judged:
// 1 − (1 − Confidence)/k for k terms (Bonferroni), so that all k
// statements hold together with probability at least Confidence.
func (s Search) TermLevel() float64 {
	c := s.Confidence
	if c == 0 {
		c = DefaultConfidence
	}
	return 1 - (1-c)/float64(max(len(s.SLO), 1))
}

// MaxSteps is the most bisection steps the search takes after its two
// end points: ⌈log2((Hi − Lo)/Resolution)⌉ per phase, two phases unless
// PassOnly.
func (s Search) MaxSteps() int {
	s = s.withDefaults()
	span := s.Hi - s.Lo
	if span <= s.Resolution {
		return 0
	}
	n := int(math.Ceil(math.Log2(span / s.Resolution)))
	if !s.PassOnly {
		n *= 2
	}
	return n
}

// RunSpec is one run of a search: a value of the parameter, a replica, and
// whether it is the steady-state run (faults removed) or the recovery run
// (faults as written). The runs of a point are a pure function of the
// search and the value, so that they can be sharded across machines.
type RunSpec struct {
	Value   float64
	Replica int
	// Faults marks the recovery run.
	Faults bool
	// Sets are the overrides the run is built with, Param's last.
	Sets []string
}

// Runs returns the runs that evaluate one value: for every replica the
// steady-state run, then, when the scenario has faults, the recovery run.
func (s Search) Runs(value float64, faults bool) []RunSpec {
	s = s.withDefaults()
	sets := append(slices.Clone(s.Fixed), s.Param+"="+s.Kind.Format(value))
	var out []RunSpec
	for r := range s.Replicas {
		out = append(out, RunSpec{Value: value, Replica: r, Sets: sets})
		if faults {
			out = append(out, RunSpec{Value: value, Replica: r, Faults: true, Sets: sets})
		}
	}
	return out
}

// Options control how a search runs; none changes its outcome.
type Options struct {
	// Workers run a step's runs in parallel; 0 means GOMAXPROCS.
	Workers int
	// Progress, if not nil, is called after every run with the runs done
	// and an upper bound on the runs the search will take. Calls are
	// serialized.
	Progress func(done, total int)
	// Exchange, if not nil, shares the search with other processes: this
	// one runs only the runs of each step it owns and gets the others'
	// results from the exchange (see Exchange).
	Exchange Exchange
	// Key prefixes the step names given to Exchange, to tell apart several
	// searches sharing one exchange (Plan sets it).
	Key string
}

// Exchange splits the runs of every search step between processes — the
// shards of a Kubernetes Indexed Job, say. Since the runs of a step are a
// pure function of the inputs and of the verdicts of the steps before it,
// every shard computes the same list; each runs the runs it owns, the
// exchange gives every shard all of the step's results, and every shard
// then reaches the same verdicts and takes the same next step. The
// outcome is identical to the unsharded one.
type Exchange interface {
	// Owns reports whether this process runs run k (0-based) of a step.
	Owns(k int) bool
	// Share publishes this process's results of the step named key and
	// returns every result of the step, by run index, once all total are
	// available.
	Share(ctx context.Context, key string, mine map[int]RunRecord, total int) (map[int]RunRecord, error)
}

// Recaller is an Exchange that remembers what this process shared before
// it was restarted: Recall returns this process's own results of a step of
// total runs when it has them, and the step is not run again.
type Recaller interface {
	Recall(key string, total int) (map[int]RunRecord, bool)
}

// ServiceLoad is one service's load at a point, averaged over the
// steady-state replicas.
type ServiceLoad struct {
	Name          string  `json:"name"`
	Utilization   float64 `json:"utilization"`
	QueueMean     float64 `json:"queue_mean"`
	Amplification float64 `json:"amplification"`
}

// Replica is what one replica showed at a point.
type Replica struct {
	Replica int    `json:"replica"`
	Seed    uint64 `json:"seed"`
	// Status is the steady-state run's status; a diverged run fails.
	Status string `json:"status"`
	// Values are the SLO terms' metrics in the steady-state run.
	Values []float64 `json:"values"`
	// Recovery is the recovery run's verdict (nil without faults).
	Recovery *analysis.Verdict `json:"-"`
	// Recovered reports Recovery.Recovers (false when nil).
	Recovered bool `json:"recovered"`
	// FaultAmplification is the recovery run's amplification.
	FaultAmplification float64 `json:"fault_amplification,omitempty"`
	// RecoveryNote says why recovery could not be judged (a baseline too
	// noisy before the fault); the replica then counts as not recovered.
	RecoveryNote string `json:"recovery_note,omitempty"`

	// series is the recovery run as the detector read it, for plots.
	series *analysis.Series
}

// RecoverySeries returns the recovery run's goodput and amplification as
// the detector read them (nil without faults or for a diverged run).
func (r *Replica) RecoverySeries() *analysis.Series { return r.series }

// Point is the evaluation of one value of the parameter.
type Point struct {
	Value float64 `json:"value"`
	// Step is the search step that evaluated it (0 for the two ends).
	Step     int       `json:"step"`
	Replicas []Replica `json:"replicas"`
	// Terms judges each SLO term across the steady-state replicas.
	Terms []TermStat `json:"terms"`
	// Steady is the SLO's verdict in steady state: holds when every term
	// holds, fails when a term fails or a replica diverged.
	Steady Verdict `json:"steady"`
	// Recovery is the verdict after the faults: holds when every replica
	// recovered, fails when none or fewer than half did (always holds
	// without faults).
	Recovery Verdict `json:"recovery"`
	// Recovered counts the replicas that recovered.
	Recovered int `json:"recovered"`
	// Verdict combines both: holds when both hold, fails when either
	// fails.
	Verdict       Verdict       `json:"verdict"`
	Amplification float64       `json:"amplification"`
	Goodput       float64       `json:"goodput_rps"`
	Services      []ServiceLoad `json:"services"`
	// FaultServices are the same figures in the recovery runs (over the
	// whole run, fault included).
	FaultServices []ServiceLoad `json:"fault_services,omitempty"`
	// FaultAmplification is the mean amplification of the recovery runs.
	FaultAmplification float64 `json:"fault_amplification,omitempty"`
}

// Outcome is the result of a search.
type Outcome struct {
	Search Search `json:"-"`
	// Points are every evaluated value, in increasing order.
	Points []Point `json:"points"`
	// Pass and Fail index Points: the boundary's holding side and its
	// other side (Fail is the point nearest Pass where the SLO was not
	// shown to hold). -1 when the range has no such point.
	Pass int `json:"-"`
	Fail int `json:"-"`
	// Orientation is the side the SLO holds on, as found.
	Orientation Orientation `json:"-"`
	// HasFaults reports whether recovery was checked.
	HasFaults bool `json:"has_faults"`
	// Trigger is the fault window recovery is judged after.
	Trigger analysis.Trigger `json:"-"`
	// Runs counts the simulations run; Steps the bisection steps.
	Runs  int `json:"runs"`
	Steps int `json:"steps"`
}

// PassPoint returns the boundary's holding point, or nil.
func (o *Outcome) PassPoint() *Point {
	if o.Pass < 0 {
		return nil
	}
	return &o.Points[o.Pass]
}

// FailPoint returns the point beyond the boundary, or nil.
func (o *Outcome) FailPoint() *Point {
	if o.Fail < 0 {
		return nil
	}
	return &o.Points[o.Fail]
}

// Bound says which condition bound the answer: "steady state", "recovery",
// "steady state and recovery", or "" when the range has no boundary.
func (o *Outcome) Bound() string {
	f := o.FailPoint()
	if f == nil {
		return ""
	}
	steady, rec := f.Steady != Holds, f.Recovery != Holds
	switch {
	case steady && rec:
		return "steady state and recovery"
	case rec:
		return "recovery"
	}
	return "steady state"
}

// Run performs the search: it evaluates both ends of the range, decides
// the orientation, then bisects the bracket until it is no wider than the
// resolution. A point counts as holding only when it is shown to hold (an
// unsure point is on the failing side), so the answer errs low. Unless
// PassOnly, a second bisection then narrows the gap between the answer's
// first point not shown to hold and the nearest point shown to fail.
func Run(ctx context.Context, run Runner, build Builder, s Search, opt Options) (*Outcome, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	s = s.withDefaults()
	base, err := build(s.Fixed)
	if err != nil {
		return nil, fmt.Errorf("capacity: %w", err)
	}
	if err := s.SLO.Check(base); err != nil {
		return nil, err
	}
	e := &evaluator{run: run, build: build, s: s, opt: opt, seed: base.Seed, faults: len(base.Faults) > 0}
	out := &Outcome{Search: s, Pass: -1, Fail: -1, HasFaults: e.faults}
	if e.faults {
		if out.Trigger, err = checkFaults(base); err != nil {
			return nil, err
		}
	}
	per := len(s.Runs(s.Lo, e.faults))
	e.total = per * (2 + s.MaxSteps())

	ends, err := e.points(ctx, 0, s.Lo, s.Hi)
	if err != nil {
		return nil, err
	}
	lo, hi := ends[0], ends[1]
	out.Points = append(out.Points, lo, hi)
	loOK, hiOK := lo.Verdict == Holds, hi.Verdict == Holds
	o := s.Orientation
	if o == Auto {
		switch {
		case loOK && !hiOK:
			o = HoldsBelow
		case hiOK && !loOK:
			o = HoldsAbove
		}
	}
	out.Orientation = o
	var pass, fail float64
	switch {
	case o == HoldsBelow && loOK && !hiOK:
		pass, fail = s.Lo, s.Hi
	case o == HoldsAbove && hiOK && !loOK:
		pass, fail = s.Hi, s.Lo
	default:
		// No bracket: the SLO holds across the range, or nowhere in it, or
		// at the wrong end. Report the ends as they are.
		out.Runs = e.runs
		out.finish()
		return out, nil
	}
	// Phase 1: where the SLO stops being shown to hold. Unsure points
	// count as not holding.
	step := 1
	pass, fail, err = e.bisect(ctx, out, &step, pass, fail, func(p Point) bool { return p.Verdict == Holds })
	if err != nil {
		return nil, err
	}
	// Phase 2: where it is shown to fail, between the last point not
	// shown to hold and the nearest point shown to fail.
	if !s.PassOnly {
		sure, ok := nearestFailing(out.Points, fail, o)
		if ok && sure != fail {
			if _, _, err = e.bisect(ctx, out, &step, fail, sure, func(p Point) bool { return p.Verdict != Fails }); err != nil {
				return nil, err
			}
		}
	}
	out.Runs = e.runs
	out.finish()
	for i, p := range out.Points {
		if p.Value == pass {
			out.Pass = i
		}
		if p.Value == fail {
			out.Fail = i
		}
	}
	return out, nil
}

// bisect narrows the bracket (good, bad) until it is no wider than the
// resolution, evaluating midpoints: a midpoint for which isGood holds
// replaces good, any other replaces bad. Points are appended to out.
func (e *evaluator) bisect(ctx context.Context, out *Outcome, step *int, good, bad float64, isGood func(Point) bool) (float64, float64, error) {
	s := e.s
	for math.Abs(good-bad) > s.Resolution {
		mid := (good + bad) / 2
		if s.Kind == Integer {
			mid = math.Floor(mid)
			if mid == math.Min(good, bad) { // two adjacent integers
				break
			}
		}
		pts, err := e.points(ctx, *step, mid)
		if err != nil {
			return 0, 0, err
		}
		out.Points = append(out.Points, pts[0])
		out.Steps = *step
		*step++
		if isGood(pts[0]) {
			good = mid
		} else {
			bad = mid
		}
	}
	return good, bad, nil
}

// nearestFailing returns the value, on the failing side of from, of the
// evaluated point nearest from that was shown to fail.
func nearestFailing(points []Point, from float64, o Orientation) (float64, bool) {
	best, ok := 0.0, false
	for _, p := range points {
		if p.Verdict != Fails {
			continue
		}
		beyond := p.Value >= from
		if o == HoldsAbove {
			beyond = p.Value <= from
		}
		if beyond && (!ok || math.Abs(p.Value-from) < math.Abs(best-from)) {
			best, ok = p.Value, true
		}
	}
	return best, ok
}

// Evaluate judges the given values of the search's parameter as the search
// would, each with all its replicas: the building block of Run, exposed so
// that an answer can be checked (a solve's value and the one next to it)
// and so that a step can be run elsewhere.
func Evaluate(ctx context.Context, run Runner, build Builder, s Search, opt Options, values ...float64) ([]Point, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	s = s.withDefaults()
	base, err := build(s.Fixed)
	if err != nil {
		return nil, fmt.Errorf("capacity: %w", err)
	}
	e := &evaluator{run: run, build: build, s: s, opt: opt, seed: base.Seed, faults: len(base.Faults) > 0}
	e.total = len(values) * len(s.Runs(s.Lo, e.faults))
	return e.points(ctx, 0, values...)
}

// finish sorts the points by value and, when there is no bracket, points
// Pass/Fail at what the ends showed.
func (o *Outcome) finish() {
	slices.SortStableFunc(o.Points, func(a, b Point) int {
		switch {
		case a.Value < b.Value:
			return -1
		case a.Value > b.Value:
			return 1
		}
		return 0
	})
	if len(o.Points) != 2 {
		return
	}
	// Two ends only: name whatever boundary the orientation implies.
	lo, hi := 0, 1
	switch o.Orientation {
	case HoldsBelow:
		if o.Points[lo].Verdict == Holds {
			o.Pass = lo
		} else {
			o.Fail = lo
		}
		if o.Points[hi].Verdict == Holds {
			o.Pass = hi
		} else if o.Fail < 0 {
			o.Fail = hi
		}
	case HoldsAbove:
		if o.Points[hi].Verdict == Holds {
			o.Pass = hi
		} else {
			o.Fail = hi
		}
		if o.Points[lo].Verdict == Holds {
			o.Pass = lo
		} else if o.Fail < 0 {
			o.Fail = lo
		}
	default:
		// Undecided orientation: both ends hold (any value will do; the
		// lower end is named) or neither does.
		if o.Points[lo].Verdict == Holds && o.Points[hi].Verdict == Holds {
			o.Pass = lo
		}
	}
}

// evaluator runs the points of one search.
type evaluator struct {
	run    Runner
	build  Builder
	s      Search
	opt    Options
	seed   uint64
	faults bool

	// runs counts the runs of the search (all shards'); known, the runs
	// whose results this process has, for Progress.
	runs, total int
	mu          sync.Mutex
	known       int
}

// progress records n more known results and reports them.
func (e *evaluator) progress(n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.known += n
	if e.opt.Progress != nil {
		e.opt.Progress(e.known, e.total)
	}
}

// points evaluates values (one search step) with all their runs in
// parallel, and judges each.
func (e *evaluator) points(ctx context.Context, step int, values ...float64) ([]Point, error) {
	var specs []RunSpec
	for _, v := range values {
		specs = append(specs, e.s.Runs(v, e.faults)...)
	}
	results := make([]runResult, len(specs))
	var owned []int
	for i := range specs {
		if e.opt.Exchange == nil || e.opt.Exchange.Owns(i) {
			owned = append(owned, i)
		}
	}
	key := fmt.Sprintf("%sstep-%d", e.opt.Key, step)
	if r, ok := e.opt.Exchange.(Recaller); ok {
		// A shard restarted after a failure takes up its own finished
		// steps instead of running them again.
		if mine, ok := r.Recall(key, len(specs)); ok {
			for k, rec := range mine {
				results[k] = runResult{spec: specs[k], RunRecord: rec}
			}
			e.progress(len(mine))
			owned = nil
		}
	}
	workers := e.opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = max(1, min(workers, len(owned)))
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				results[i] = e.one(ctx, specs[i])
				if results[i].err != nil {
					cancel(results[i].err)
					continue
				}
				e.progress(1)
			}
		}()
	}
feed:
	for _, i := range owned {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		// The first failure cancelled the others: report it, not them.
		for _, r := range results {
			if r.err != nil && errors.Is(err, r.err) {
				return nil, r.err
			}
		}
		return nil, fmt.Errorf("capacity: %w", err)
	}
	if x := e.opt.Exchange; x != nil {
		mine := make(map[int]RunRecord)
		for i := range specs {
			if x.Owns(i) {
				mine[i] = results[i].RunRecord
			}
		}
		all, err := x.Share(ctx, key, mine, len(specs))
		if err != nil {
			return nil, fmt.Errorf("capacity: %s: %w", key, err)
		}
		for i := range specs {
			rec, ok := all[i]
			if !ok {
				return nil, fmt.Errorf("capacity: %s: the exchange returned no result for run %d of %d", key, i, len(specs))
			}
			results[i] = runResult{spec: specs[i], RunRecord: rec}
		}
		e.progress(len(specs) - len(mine))
	}
	e.runs += len(specs)
	out := make([]Point, len(values))
	per := len(specs) / len(values)
	for i, v := range values {
		out[i] = e.judge(step, v, results[i*per:(i+1)*per])
	}
	return out, nil
}

// RunRecord is what one run contributes to the judgement of its point: the
// part of its result that Exchange passes between processes, as JSON.
type RunRecord struct {
	Seed    uint64          `json:"seed"`
	Summary metrics.Summary `json:"summary"`
	// Verdict is the recovery run's verdict (nil for a steady-state run).
	Verdict *analysis.Verdict `json:"verdict,omitempty"`
	// Series is the recovery run as the detector read it.
	Series *analysis.Series `json:"series,omitempty"`
	// Note says why recovery could not be judged.
	Note string `json:"note,omitempty"`
}

// runResult is one finished run of a point.
type runResult struct {
	spec RunSpec
	RunRecord
	err error
}

// one builds and runs one spec, and for a recovery run judges recovery.
func (e *evaluator) one(ctx context.Context, spec RunSpec) runResult {
	where := fmt.Sprintf("capacity: %s=%s replica %d", e.s.Param, e.s.Kind.Format(spec.Value), spec.Replica)
	if spec.Faults {
		where += " (with faults)"
	}
	sc, err := e.build(spec.Sets)
	if err != nil {
		return runResult{err: fmt.Errorf("%s: %w", where, err)}
	}
	sc.Seed = analysis.ReplicaSeed(e.seed, spec.Replica)
	// Capacity is about a constant load: a rate schedule would override
	// the searched rate, so both runs drop it.
	sc.Workload.Schedule = nil
	var trig analysis.Trigger
	if spec.Faults {
		if trig, err = analysis.TriggerOf(sc); err != nil {
			return runResult{err: fmt.Errorf("%s: %w", where, err)}
		}
		sc.Duration = max(sc.Duration, RecoveryDuration(sc, trig, e.s.Detector))
	} else {
		sc.Faults = nil
	}
	res, err := e.run(ctx, sc)
	if err != nil || res == nil || ctx.Err() != nil {
		if err == nil {
			err = context.Cause(ctx)
		}
		if err == nil {
			err = errors.New("runner returned no result")
		}
		return runResult{err: fmt.Errorf("%s: %w", where, err)}
	}
	rr := runResult{spec: spec, RunRecord: RunRecord{Seed: sc.Seed, Summary: res.Summary}}
	if !spec.Faults {
		return rr
	}
	v := analysis.Verdict{Trigger: trig}
	if res.Summary.Status != metrics.StatusDiverged {
		series, err := analysis.SeriesOf(res, sc.Duration)
		if err != nil {
			return runResult{err: fmt.Errorf("%s: %w", where, err)}
		}
		rr.Series = &series
		if v, err = analysis.Detect(series, sc.Warmup, trig, e.s.Detector); err != nil {
			// The run's shape was checked before the search (checkFaults),
			// so what remains is a baseline too noisy or too empty to
			// judge: the system was not steady before the fault, which
			// is no recovery.
			v = analysis.Verdict{Trigger: trig}
			rr.Note = err.Error()
		}
	}
	rr.Verdict = &v
	return rr
}

// checkFaults finds the scenario's trigger and checks that the detector
// can judge it: at least two whole intervals between the warm-up and the
// first fault, for a baseline.
func checkFaults(sc *topology.Scenario) (analysis.Trigger, error) {
	t, err := analysis.TriggerOf(sc)
	if err != nil {
		return t, fmt.Errorf("capacity: %w", err)
	}
	iv := sc.Interval
	if iv <= 0 {
		iv = time.Second
	}
	first := (sc.Warmup + iv - 1) / iv * iv // the first whole interval after the warm-up
	if first+2*iv > t.Start {
		return t, fmt.Errorf("capacity: %s: faults start at %v, but judging recovery needs a baseline of two whole %v intervals between the warm-up (%v) and the first fault", sc.Name, t.Start, iv, sc.Warmup)
	}
	return t, nil
}

// addLoads adds each service's figures into loads, keeping first-seen order
// in names.
func addLoads(loads map[string]*ServiceLoad, names []string, svcs []metrics.ServiceSummary) []string {
	for _, svc := range svcs {
		l, ok := loads[svc.Name]
		if !ok {
			l = &ServiceLoad{Name: svc.Name}
			loads[svc.Name] = l
			names = append(names, svc.Name)
		}
		l.Utilization += svc.Utilization
		l.QueueMean += svc.QueueMean
		l.Amplification += svc.Amplification
	}
	return names
}

// meanLoads divides the summed figures by n, in names order.
func meanLoads(loads map[string]*ServiceLoad, names []string, n float64) []ServiceLoad {
	var out []ServiceLoad
	for _, name := range names {
		l := loads[name]
		out = append(out, ServiceLoad{Name: name, Utilization: l.Utilization / n, QueueMean: l.QueueMean / n, Amplification: l.Amplification / n})
	}
	return out
}

// RecoveryDuration is the arrival window a recovery run needs for the
// detector to judge it: the trigger's end, plus the recovery bound, plus
// K+1 intervals.
func RecoveryDuration(sc *topology.Scenario, t analysis.Trigger, cfg analysis.DetectorConfig) time.Duration {
	cfg = cfg.WithDefaults()
	iv := sc.Interval
	if iv <= 0 {
		iv = time.Second
	}
	return t.End + cfg.RecoveryBound + time.Duration(cfg.Consecutive+1)*iv
}

// judge turns a point's runs into its verdicts.
func (e *evaluator) judge(step int, value float64, runs []runResult) Point {
	s := e.s
	p := Point{Value: value, Step: step, Steady: Holds, Recovery: Holds}
	byReplica := map[int]int{}
	loads, faultLoads := map[string]*ServiceLoad{}, map[string]*ServiceLoad{}
	var names, faultNames []string
	diverged := false
	for _, r := range runs {
		idx, ok := byReplica[r.spec.Replica]
		if !ok {
			idx = len(p.Replicas)
			p.Replicas = append(p.Replicas, Replica{Replica: r.spec.Replica, Seed: r.Seed})
			byReplica[r.spec.Replica] = idx
		}
		rep := &p.Replicas[idx]
		if r.spec.Faults {
			rep.Recovery = r.Verdict
			rep.Recovered = r.Verdict != nil && r.Verdict.Recovers
			rep.FaultAmplification = r.Summary.Amplification
			rep.RecoveryNote = r.Note
			if rep.Recovered {
				p.Recovered++
			}
			p.FaultAmplification += r.Summary.Amplification
			rep.series = r.Series
			faultNames = addLoads(faultLoads, faultNames, r.Summary.Services)
			continue
		}
		sum := r.Summary
		rep.Status = string(sum.Status)
		if sum.Status == metrics.StatusDiverged {
			diverged = true
		}
		for _, t := range s.SLO {
			v, err := t.Value(&sum)
			if err != nil {
				v = math.NaN() // Check rejected absent services; a run may still drop one
			}
			rep.Values = append(rep.Values, v)
		}
		p.Amplification += sum.Amplification
		p.Goodput += sum.GoodputRPS
		names = addLoads(loads, names, sum.Services)
	}
	n := float64(len(p.Replicas))
	p.Amplification /= n
	p.Goodput /= n
	p.Services = meanLoads(loads, names, n)
	p.FaultServices = meanLoads(faultLoads, faultNames, n)
	level := s.TermLevel()
	for i, t := range s.SLO {
		vals := make([]float64, len(p.Replicas))
		for j, rep := range p.Replicas {
			vals[j] = rep.Values[i]
		}
		ts := judgeTerm(t, vals, level)
		p.Terms = append(p.Terms, ts)
		switch {
		case ts.Verdict == Fails:
			p.Steady = Fails
		case ts.Verdict == Unsure && p.Steady == Holds:
			p.Steady = Unsure
		}
	}
	if diverged {
		p.Steady = Fails
	}
	if e.faults {
		p.FaultAmplification /= n
		switch {
		case p.Recovered == len(p.Replicas):
			p.Recovery = Holds
		case 2*p.Recovered < len(p.Replicas):
			p.Recovery = Fails
		default:
			p.Recovery = Unsure
		}
	}
	switch {
	case p.Steady == Holds && p.Recovery == Holds:
		p.Verdict = Holds
	case p.Steady == Fails || p.Recovery == Fails:
		p.Verdict = Fails
	default:
		p.Verdict = Unsure
	}
	return p
}
