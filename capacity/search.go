package capacity

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/stormsim/stormsim/analysis"
)

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
	// DefaultPrecision is the bracket's half-width, as a share of its
	// midpoint, that the search adds replicas near the boundary to reach.
	DefaultPrecision = 0.02
	// DefaultMaxRuns bounds the simulations of a search that adds
	// replicas for precision: about 15 s of M/M/1 runs on two cores.
	DefaultMaxRuns = 1000
	// NoRefine as Precision keeps the replicas at Replicas everywhere.
	NoRefine = -1
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
	// Precision is the half-width, as a share of its midpoint, of the
	// bracket [holds at, fails at] the search aims for: while the bracket
	// is wider, the points between its ends (whose bounds straddle the
	// threshold) are judged again with twice the replicas, on common
	// random numbers, and the bisection resumes. 0 means
	// DefaultPrecision; NoRefine (negative) turns this off.
	Precision float64
	// MaxRuns bounds the simulations of the search when it adds replicas
	// for precision; 0 means DefaultMaxRuns. A round that would pass it is
	// not started, and the outcome says so (Outcome.Imprecise).
	MaxRuns int
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
	if s.Precision == 0 {
		s.Precision = DefaultPrecision
	}
	if s.MaxRuns <= 0 {
		s.MaxRuns = DefaultMaxRuns
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
	case s.Replicas > MaxReplicas:
		// Each step lays its runs out in memory before they start.
		return fmt.Errorf("capacity: replicas must be at most %d, got %d", MaxReplicas, s.Replicas)
	case s.Confidence < 0 || s.Confidence >= 1:
		return fmt.Errorf("capacity: confidence must be in (0, 1), got %g", s.Confidence)
	case len(s.SLO) == 0:
		return errors.New("capacity: no SLO")
	case math.IsNaN(s.Precision) || s.Precision >= 1:
		return fmt.Errorf("capacity: precision must be below 1 (a share of the answer), got %g", s.Precision)
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
	// Interrupted says the search was stopped (a signal) before it
	// finished: Points are the ones evaluated, Pass and Fail the bracket it
	// had narrowed to.
	Interrupted bool `json:"interrupted,omitempty"`
	// Imprecise, when not empty, says why the bracket is wider than the
	// search's Precision: the run bound or the replica bound stopped the
	// rounds that add replicas near the boundary.
	Imprecise string `json:"imprecise,omitempty"`
	// MaxReplicas is the most replicas any point was judged with.
	MaxReplicas int `json:"max_replicas"`
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
// "steady state and recovery", "failed runs" (the point beyond the
// boundary could not be run), or "" when the range has no boundary.
func (o *Outcome) Bound() string {
	f := o.FailPoint()
	if f == nil {
		return ""
	}
	if f.Failed != "" {
		return "failed runs"
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

// Failed returns the points whose runs failed, in increasing order.
func (o *Outcome) Failed() []Point {
	var out []Point
	for _, p := range o.Points {
		if p.Failed != "" {
			out = append(out, p)
		}
	}
	return out
}

// Run performs the search: it evaluates both ends of the range, decides
// the orientation, then bisects the bracket until it is no wider than the
// resolution. A point counts as holding only when it is shown to hold (an
// unsure point is on the failing side, and so is a point whose runs
// failed: see Point.Failed), so the answer errs low. Only ctx ending stops
// the search early (see stopped). Unless
// PassOnly, a second bisection then narrows the gap between the answer's
// first point not shown to hold and the nearest point shown to fail.
func Run(ctx context.Context, run analysis.Runner, build analysis.Builder, s Search, opt Options) (*Outcome, error) {
	e, base, err := newEvaluator(run, build, s, opt)
	if err != nil {
		return nil, err
	}
	s = e.s
	if err := s.SLO.Check(base); err != nil {
		return nil, err
	}
	out := &Outcome{Search: s, Pass: -1, Fail: -1, HasFaults: e.faults}
	if e.faults {
		if out.Trigger, err = checkFaults(base); err != nil {
			return nil, err
		}
	}
	e.total = len(s.Runs(s.Lo, e.faults)) * (2 + s.MaxSteps())
	if s.Precision > 0 && !s.PassOnly {
		// refine stops its rounds at MaxRuns runs in all.
		e.total = max(e.total, s.MaxRuns)
	}

	ends, err := e.points(ctx, 0, s.Lo, s.Hi)
	if err != nil {
		return e.stopped(ctx, out, err, math.NaN(), math.NaN())
	}
	out.Points = append(out.Points, ends...)
	o, pass, fail, bracketed := orient(s, ends[0], ends[1])
	out.Orientation = o
	if bracketed {
		step := 1
		if pass, fail, err = e.narrow(ctx, out, &step, pass, fail); err != nil {
			return e.stopped(ctx, out, err, pass, fail)
		}
		if pass, fail, err = e.refine(ctx, out, &step, pass, fail); err != nil {
			return e.stopped(ctx, out, err, pass, fail)
		}
	}
	out.MaxReplicas = e.s.Replicas
	out.Runs = e.runs
	out.finish()
	if bracketed {
		out.bracket(pass, fail)
	}
	return out, nil
}

// orient decides the orientation from the verdicts at the two ends of the
// range and, when the ends bracket a boundary, returns its holding end
// (pass) and its other end (fail). Without a bracket — the SLO holds
// across the range, or nowhere in it, or at the wrong end — ok is false.
func orient(s Search, lo, hi Point) (o Orientation, pass, fail float64, ok bool) {
	loOK, hiOK := lo.Verdict == Holds, hi.Verdict == Holds
	o = s.Orientation
	if o == Auto {
		switch {
		case loOK && !hiOK:
			o = HoldsBelow
		case hiOK && !loOK:
			o = HoldsAbove
		}
	}
	switch {
	case o == HoldsBelow && loOK && !hiOK:
		return o, s.Lo, s.Hi, true
	case o == HoldsAbove && hiOK && !loOK:
		return o, s.Hi, s.Lo, true
	}
	return o, 0, 0, false
}

// narrow bisects the bracket (pass, fail) in two phases and returns the
// boundary's holding side and its other side (on an error, the bracket as
// far as it got). Phase 1 finds where the SLO stops being shown to hold
// (unsure points count as not holding); unless PassOnly, phase 2 then
// narrows the gap between that point and the nearest point shown to fail.
func (e *evaluator) narrow(ctx context.Context, out *Outcome, step *int, pass, fail float64) (float64, float64, error) {
	pass, fail, err := e.bisect(ctx, out, step, pass, fail, func(p Point) bool { return p.Verdict == Holds })
	if err != nil {
		return pass, fail, err
	}
	if e.s.PassOnly {
		return pass, fail, nil
	}
	sure, ok := nearestFailing(out.Points, fail, out.Orientation)
	if ok && sure != fail {
		if _, _, err = e.bisect(ctx, out, step, fail, sure, func(p Point) bool { return p.Verdict != Fails }); err != nil {
			return pass, fail, err
		}
	}
	return pass, fail, nil
}

// bracket points Pass and Fail at the evaluated points of those values.
func (o *Outcome) bracket(pass, fail float64) {
	for i, p := range o.Points {
		if p.Value == pass {
			o.Pass = i
		}
		if p.Value == fail {
			o.Fail = i
		}
	}
}

// stopped ends a search that failed with err. A search stopped by ctx
// (interrupted) returns what it found with err: the points evaluated and
// the bracket (pass, fail) so far (NaN before the first bracket), so the
// caller can report them; any other failure returns only err.
func (e *evaluator) stopped(ctx context.Context, out *Outcome, err error, pass, fail float64) (*Outcome, error) {
	if ctx.Err() == nil {
		return nil, err
	}
	out.Interrupted = true
	out.Runs = e.runs
	out.finish()
	out.bracket(pass, fail)
	return out, err
}

// MaxReplicas bounds the runs per point (--replicas 1e9 ran out of memory).
const MaxReplicas = 10_000

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
		if e.limit > 0 && e.runs+len(s.Runs(mid, e.faults)) > e.limit {
			e.limited = true // refine's run bound: it says so
			break
		}
		pts, err := e.points(ctx, *step, mid)
		if err != nil {
			return good, bad, err
		}
		out.put(pts[0])
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
	// Two ends only: name whatever boundary the orientation implies,
	// looking first at the end where the SLO should hold.
	lo, hi := 0, 1
	switch o.Orientation {
	case HoldsBelow, HoldsAbove:
		ends := [2]int{lo, hi}
		if o.Orientation == HoldsAbove {
			ends = [2]int{hi, lo}
		}
		for _, i := range ends {
			if o.Points[i].Verdict == Holds {
				o.Pass = i
			} else if o.Fail < 0 {
				o.Fail = i
			}
		}
	default:
		// Undecided orientation: both ends hold (any value will do; the
		// lower end is named) or neither does.
		if o.Points[lo].Verdict == Holds && o.Points[hi].Verdict == Holds {
			o.Pass = lo
		}
	}
}
