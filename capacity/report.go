package capacity

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/stormsim/stormsim/metrics"
)

// Report is everything `stormsim capacity` says: the capacity search and
// the what-if solves, with the context needed to read them.
type Report struct {
	Scenario string
	// Param is the load parameter searched (workload.rate).
	Param string
	// Current is Param's value in the scenario as written.
	Current float64
	// Capacity is the capacity search (nil when only solving).
	Capacity *Outcome
	// Solves are the what-if searches, in the order asked.
	Solves []Solve
	// Interrupted says a signal stopped the plan: the last search holds
	// what it found so far (Outcome.Interrupted) and later ones are missing.
	Interrupted bool
}

// Solve is one what-if search: the smallest (or largest) value of Path
// that meets the SLO at the target load.
type Solve struct {
	Path    string
	Target  float64
	Outcome *Outcome
}

// Answer is what a search found, in words and numbers.
type Answer struct {
	// Status is "bracketed" (a boundary was found), "holds everywhere" (the
	// SLO holds across the range), "holds nowhere", or "interrupted" (a
	// signal stopped the search before it had a bracket).
	Status string `json:"status"`
	// HoldsAt is the value nearest the boundary shown to hold (NaN if none).
	HoldsAt float64 `json:"holds_at"`
	// NotShownAt is the value beyond it where the SLO was not shown to hold.
	NotShownAt float64 `json:"not_shown_at"`
	// FailsAt is the value nearest the boundary where the SLO was shown to
	// fail (NaN if the search saw none).
	FailsAt float64 `json:"fails_at"`
}

// Answer summarizes the outcome.
func (o *Outcome) Answer() Answer {
	a := Answer{HoldsAt: math.NaN(), NotShownAt: math.NaN(), FailsAt: math.NaN()}
	p, f := o.PassPoint(), o.FailPoint()
	switch {
	case o.Interrupted && (p == nil || f == nil):
		a.Status = "interrupted"
	case p != nil && f != nil:
		a.Status = "bracketed"
	case p != nil:
		a.Status = "holds everywhere"
	default:
		a.Status = "holds nowhere"
	}
	if p != nil {
		a.HoldsAt = p.Value
	}
	if f != nil {
		a.NotShownAt = f.Value
	}
	// The confidently failing point nearest the holding side.
	for i := range o.Points {
		j := i
		if o.Orientation == HoldsAbove {
			j = len(o.Points) - 1 - i
		}
		if o.Points[j].Verdict == Fails {
			a.FailsAt = o.Points[j].Value
			break
		}
	}
	return a
}

// SteadyHoldsTo returns the value farthest from the holding end up to which
// every evaluated point met the SLO in steady state (ignoring recovery):
// what the capacity would be without the faults, as far as the points
// evaluated show.
func (o *Outcome) SteadyHoldsTo() (float64, bool) {
	v, ok := 0.0, false
	for i := range o.Points {
		j := i
		if o.Orientation == HoldsAbove {
			j = len(o.Points) - 1 - i
		}
		if o.Points[j].Steady != Holds {
			break
		}
		v, ok = o.Points[j].Value, true
	}
	return v, ok
}

// Bottleneck is the service that saturates first.
type Bottleneck struct {
	Service string `json:"service"`
	// At is the parameter's value the figures are from: the point beyond
	// the boundary, where saturation shows.
	At          float64 `json:"at"`
	Utilization float64 `json:"utilization"`
	QueueMean   float64 `json:"queue_mean"`
	// QueueGrowth is the mean queue at At minus the one at the holding
	// point.
	QueueGrowth float64 `json:"queue_growth"`
	// WithFaults says the figures are from the runs with faults.
	WithFaults bool `json:"with_faults,omitempty"`
}

// Bottleneck names the service with the highest utilization (then the
// longest queue) at the point beyond the boundary, or at the holding point
// when there is none. When recovery bound the answer the figures are those
// of the runs with faults, where the saturation happened.
func (o *Outcome) Bottleneck() (Bottleneck, bool) {
	at := o.FailPoint()
	if at == nil {
		at = o.PassPoint()
	}
	if at == nil {
		return Bottleneck{}, false
	}
	loads := func(p *Point) []ServiceLoad { return p.Services }
	if o.Bound() == "recovery" {
		loads = func(p *Point) []ServiceLoad { return p.FaultServices }
	}
	svcs := loads(at)
	if len(svcs) == 0 {
		return Bottleneck{}, false
	}
	b, ok := bottleneckOf(svcs), true
	b.At = at.Value
	b.WithFaults = o.Bound() == "recovery"
	if p := o.PassPoint(); p != nil && p != at {
		for _, s := range loads(p) {
			if s.Name == b.Service {
				b.QueueGrowth = b.QueueMean - s.QueueMean
			}
		}
	}
	return b, ok
}

func bottleneckOf(svcs []ServiceLoad) Bottleneck {
	best := svcs[0]
	for _, s := range svcs[1:] {
		if s.Utilization > best.Utilization+1e-9 || (math.Abs(s.Utilization-best.Utilization) <= 1e-9 && s.QueueMean > best.QueueMean) {
			best = s
		}
	}
	return Bottleneck{Service: best.Name, Utilization: best.Utilization, QueueMean: best.QueueMean}
}

// Headroom is the current load against the capacity: (capacity − current)
// / current, negative when the scenario is already past capacity.
func (r *Report) Headroom() (float64, bool) {
	if r.Capacity == nil || r.Current <= 0 {
		return 0, false
	}
	p := r.Capacity.PassPoint()
	if p == nil {
		return 0, false
	}
	return (p.Value - r.Current) / r.Current, true
}

// RetryShare is the share of the attempts at the most amplified service
// that are not first attempts: 1 − 1/amplification (0 for amplification
// ≤ 1).
func RetryShare(amplification float64) float64 {
	if amplification <= 1 {
		return 0
	}
	return 1 - 1/amplification
}

// FormatValue writes a value of the searched parameter as the report does
// (an integer, a duration, or a number rounded to the search's resolution),
// "-" for NaN.
func (s Search) FormatValue(v float64) string { return s.valueFormat()(v) }

// valueFormat writes values of a search at a precision that shows its
// resolution.
func (s Search) valueFormat() func(v float64) string {
	f := s.kindFormat()
	return func(v float64) string {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return "-"
		}
		return f(v)
	}
}

// valueFormat writes the values of an outcome's points so that no two
// evaluated points print alike: the refinement rounds bisect below the
// search's resolution (Precision times the boundary), and a table that
// showed 157 twice for 157.19 and 157.43 would read as one point run twice.
func (o *Outcome) valueFormat() func(v float64) string {
	s := o.Search
	if s.withDefaults().Kind != Real || len(o.Points) < 2 {
		return s.valueFormat()
	}
	vals := make([]float64, 0, len(o.Points))
	for _, p := range o.Points {
		vals = append(vals, p.Value)
	}
	slices.Sort(vals)
	res := s.withDefaults().Resolution
	for i := 1; i < len(vals); i++ {
		if gap := vals[i] - vals[i-1]; gap > 0 && gap < res {
			res = gap
		}
	}
	s.Resolution = res
	return s.valueFormat()
}

func (s Search) kindFormat() func(v float64) string {
	s = s.withDefaults()
	switch s.Kind {
	case Integer:
		return func(v float64) string { return strconv.FormatInt(int64(v), 10) }
	case Duration:
		return func(v float64) string {
			d := time.Duration(v * float64(time.Second))
			step := time.Duration(s.Resolution * float64(time.Second))
			for _, r := range []time.Duration{time.Second, time.Millisecond, time.Microsecond} {
				if step >= r {
					return d.Round(r).String()
				}
			}
			return d.String()
		}
	}
	dec := 0
	if s.Resolution > 0 && s.Resolution < 1 {
		dec = min(int(math.Ceil(-math.Log10(s.Resolution))), 6)
	}
	return func(v float64) string { return strconv.FormatFloat(v, 'f', dec, 64) }
}

// Rule states the rule a point is judged by and the confidence it allows.
func (s Search) Rule(hasFaults bool) string {
	s = s.withDefaults()
	var b strings.Builder
	if s.Replicas == 1 {
		fmt.Fprintf(&b, "a point holds when every SLO term is met in its one run (1 replica: no confidence is claimed; use --replicas ≥ 3)")
	} else {
		fmt.Fprintf(&b, "a point holds when, for every SLO term, the one-sided %s bound on the mean over %d replicas (mean ± t·sd/√n, Student's t, %d df) meets the threshold",
			pct(s.TermLevel()), s.Replicas, s.Replicas-1)
		if len(s.SLO) > 1 {
			fmt.Fprintf(&b, " (%d terms at %s each: jointly %s, Bonferroni)", len(s.SLO), pct(s.TermLevel()), pct(s.Confidence))
		}
		b.WriteString("; it fails when a bound on the other side misses it, and is unsure in between (counted as not holding)")
	}
	if hasFaults {
		cfg := s.Detector
		fmt.Fprintf(&b, ".\nWith the faults, every replica must recover within %v of the fault window's end (analysis.Detect: goodput ≥ (1−%g)×its pre-fault baseline and amplification ≤ (1+%g)×baseline, %d intervals in a row);",
			cfg.RecoveryBound, cfg.Tolerance, cfg.AmpTolerance, cfg.Consecutive)
		fmt.Fprintf(&b, " %d of %d recovering bounds the per-run recovery probability below by %s at %s confidence (Clopper–Pearson)",
			s.Replicas, s.Replicas, pct(RecoveryLowerBound(s.Replicas, s.Replicas, s.Confidence)), pct(s.Confidence))
	}
	b.WriteString(".")
	return b.String()
}

func pct(f float64) string {
	return strconv.FormatFloat(roundSig(100*f, 3), 'f', -1, 64) + "%"
}

func (r *Report) unit() string {
	if r.Param == "workload.rate" {
		return "/s"
	}
	return ""
}

// WriteText writes the report for people.
func (r *Report) WriteText(w io.Writer) error {
	bw := metrics.NewErrWriter(w)
	if r.Interrupted {
		bw.Printf("partial: interrupted; each answer below is as far as its search got (a wider bracket), later searches did not run\n\n")
	}
	if o := r.Capacity; o != nil {
		r.writeCapacity(bw, o)
	}
	for i, s := range r.Solves {
		if i == 0 {
			if r.Capacity != nil {
				bw.Printf("\n")
			}
			bw.Printf("what-if at %s=%s (smallest or largest setting that meets the SLO):\n", r.Param, strconv.FormatFloat(s.Target, 'g', -1, 64))
		}
		bw.Printf("  %s%s\n", map[bool]string{true: "", false: "or "}[i == 0], s.Sentence())
	}
	if len(r.Solves) > 0 {
		bw.Printf("\n")
		tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "path\tanswer\tholds at\tnot shown at\tfails at\tbound\truns\n")
		for _, s := range r.Solves {
			o := s.Outcome
			a := o.Answer()
			f := o.valueFormat()
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\n", s.Path, s.Short(), f(a.HoldsAt), f(a.NotShownAt), f(a.FailsAt), orDash(o.Bound()), o.Runs)
		}
		tw.Flush()
		for _, s := range r.Solves {
			f := s.Outcome.valueFormat()
			for _, p := range s.Outcome.Failed() {
				bw.Printf("failed point of %s (counted as not meeting the SLO): %s: %s\n", s.Path, f(p.Value), p.Failed)
			}
		}
	}
	return bw.Err()
}

// Failed returns the points of the report's searches whose runs failed:
// the capacity search's, then each solve's, each in increasing order.
func (r *Report) Failed() []Point {
	var out []Point
	if r.Capacity != nil {
		out = append(out, r.Capacity.Failed()...)
	}
	for _, s := range r.Solves {
		out = append(out, s.Outcome.Failed()...)
	}
	return out
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Short is the solve's answer as "≥ 24", "≤ 0.1", "any" or "none".
func (s Solve) Short() string {
	o := s.Outcome
	a := o.Answer()
	f := o.valueFormat()
	switch {
	case a.Status == "holds nowhere":
		return "none in range"
	case a.Status == "holds everywhere":
		return "any in range"
	case o.Orientation == HoldsAbove:
		return "≥ " + f(a.HoldsAt)
	}
	return "≤ " + f(a.HoldsAt)
}

// Sentence is the solve's answer in words.
func (s Solve) Sentence() string {
	o := s.Outcome
	a := o.Answer()
	f := o.valueFormat()
	lo, hi := f(o.Search.withDefaults().Lo), f(o.Search.withDefaults().Hi)
	switch a.Status {
	case "holds nowhere":
		return fmt.Sprintf("%s: no value in %s:%s meets the SLO", s.Path, lo, hi)
	case "holds everywhere":
		return fmt.Sprintf("%s: every value in %s:%s meets the SLO", s.Path, lo, hi)
	}
	return fmt.Sprintf("%s %s (%s is not shown to hold; %d runs)", s.Path, s.Short(), f(a.NotShownAt), o.Runs)
}

func (r *Report) writeCapacity(bw *metrics.ErrWriter, o *Outcome) {
	s := o.Search
	f := o.valueFormat()
	u := r.unit()
	rf := s.valueFormat() // the range as given, not at the points' precision
	bw.Printf("capacity of %s: %s=%s:%s, SLO %s, %d replicas per point\n", r.Scenario, s.Param, rf(s.Lo), rf(s.Hi), s.SLO, s.Replicas)
	bw.Printf("rule: %s\n\n", s.Rule(o.HasFaults))
	a := o.Answer()
	conf := pct(s.Confidence)
	switch a.Status {
	case "bracketed":
		bw.Printf("capacity: holds at %s%s: the steady-state SLO with %s confidence", f(a.HoldsAt), u, conf)
		if pp := o.PassPoint(); o.HasFaults && pp != nil {
			bw.Printf("; %s", newRecoveryClaim(pp.Recovered, len(pp.Replicas), s.Confidence))
		}
		bw.Printf("; not shown to hold at %s%s", f(a.NotShownAt), u)
		if !math.IsNaN(a.FailsAt) && a.FailsAt != a.NotShownAt {
			bw.Printf("; fails at %s%s", f(a.FailsAt), u)
		}
		bw.Printf("\n")
	case "holds everywhere":
		bw.Printf("capacity: at least %s%s: the SLO holds across the range (raise --range)\n", f(a.HoldsAt), u)
	case "interrupted":
		bw.Printf("capacity: unknown: interrupted before the ends of the range were judged\n")
	default:
		bw.Printf("capacity: below %s%s: the SLO is not shown to hold anywhere in the range (lower --range)\n", f(s.Lo), u)
	}
	if fp := o.FailPoint(); fp != nil {
		bw.Printf("bound by: %s at %s%s", o.Bound(), f(fp.Value), u)
		var why []string
		if fp.Failed != "" {
			why = append(why, fp.Failed)
		}
		for _, t := range fp.Terms {
			if t.Verdict != Holds {
				why = append(why, fmt.Sprintf("%s %s (mean %s, bound %s)", t.Name, t.Verdict, t.Term.Format(roundSig(t.Mean, 4)), t.Term.Format(roundSig(farBound(t), 4))))
			}
		}
		if fp.Recovery != Holds && fp.Failed == "" {
			why = append(why, fmt.Sprintf("recovered in %d of %d replicas", fp.Recovered, len(fp.Replicas)))
		}
		if len(why) > 0 {
			bw.Printf(": %s", strings.Join(why, "; "))
		}
		bw.Printf("\n")
	}
	if a.Status == "bracketed" && !math.IsNaN(a.FailsAt) {
		o.writePrecision(bw, a)
	}
	if st, ok := o.SteadyHoldsTo(); ok && o.Bound() == "recovery" {
		bw.Printf("steady state alone: holds at least to %s%s", f(st), u)
		if !math.IsNaN(a.FailsAt) {
			bw.Printf("; with the faults the SLO fails at %s%s, %s lower", f(a.FailsAt), u, pct(math.Abs(st-a.FailsAt)/st))
		}
		bw.Printf("\n")
	}
	if o.HasFaults {
		bw.Printf("recovery: judged after %s, within %v of its end\n", o.Trigger.Label, s.withDefaults().Detector.RecoveryBound)
	} else {
		bw.Printf("recovery: not checked (the scenario has no faults)\n")
	}
	if h, ok := r.Headroom(); ok {
		cur := strconv.FormatFloat(r.Current, 'g', -1, 64)
		if h >= 0 {
			bw.Printf("headroom: the scenario's %s%s is %s below capacity (capacity is %.2f× it)\n", cur, u, pct(h/(1+h)), 1+h)
		} else {
			bw.Printf("headroom: NONE: the scenario's %s%s is %s above capacity\n", cur, u, pct(-h/(1+h)))
		}
	}
	if pp := o.PassPoint(); pp != nil {
		bw.Printf("amplification at %s%s: %.2f in steady state (%s of attempts at the busiest hop are retries)", f(pp.Value), u, pp.Amplification, pct(RetryShare(pp.Amplification)))
		if o.HasFaults {
			bw.Printf(", %.2f with the faults (%s)", pp.FaultAmplification, pct(RetryShare(pp.FaultAmplification)))
		}
		bw.Printf("\n")
	}
	if b, ok := o.Bottleneck(); ok {
		with := ""
		if b.WithFaults {
			with = ", with the faults"
		}
		bw.Printf("bottleneck: %s (utilization %s, mean queue %.3g at %s%s%s", b.Service, pct(b.Utilization), b.QueueMean, f(b.At), u, with)
		if b.QueueGrowth != 0 {
			bw.Printf(", %+.3g from the holding point", b.QueueGrowth)
		}
		bw.Printf(")\n")
	}
	bw.Printf("\n")
	tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "%s\tverdict\t", s.Param)
	for _, t := range s.SLO {
		fmt.Fprintf(tw, "%s\t", t.String())
	}
	if o.HasFaults {
		fmt.Fprintf(tw, "recovered\t")
	}
	fmt.Fprintf(tw, "amplification\n")
	for _, p := range o.Points {
		if p.Failed != "" {
			// Not judged: a dash for every figure, the reason below.
			fmt.Fprintf(tw, "%s\tfailed\t%s", f(p.Value), strings.Repeat("-\t", len(s.SLO)))
			if o.HasFaults {
				fmt.Fprintf(tw, "-\t")
			}
			fmt.Fprintf(tw, "-\n")
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t", f(p.Value), p.Verdict)
		for _, t := range p.Terms {
			half := t.Upper - t.Mean
			if half > 0 && !math.IsInf(half, 0) {
				fmt.Fprintf(tw, "%s ± %s\t", t.Term.Format(roundSig(t.Mean, 4)), t.Term.Format(roundSig(half, 2)))
			} else {
				fmt.Fprintf(tw, "%s\t", t.Term.Format(roundSig(t.Mean, 4)))
			}
		}
		if o.HasFaults {
			fmt.Fprintf(tw, "%d/%d\t", p.Recovered, len(p.Replicas))
		}
		fmt.Fprintf(tw, "%.3g\n", p.Amplification)
	}
	tw.Flush()
	if failed := o.Failed(); len(failed) > 0 {
		bw.Printf("\nfailed points (counted as not meeting the SLO):\n")
		for _, p := range failed {
			bw.Printf("  %s%s: %s\n", f(p.Value), u, p.Failed)
		}
	}
	bw.Printf("\nruns: %d simulations (%d points: the two ends and %d bisection steps)\n", o.Runs, len(o.Points), o.Steps)
}

// farBound is the confidence bound that must meet the threshold.
func farBound(t TermStat) float64 {
	if t.Term.Upper() {
		return t.Upper
	}
	return t.Lower
}

// jsonNum writes NaN and ±Inf as null.
type jsonNum float64

func (n jsonNum) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(n)) || math.IsInf(float64(n), 0) {
		return []byte("null"), nil
	}
	return []byte(strconv.FormatFloat(float64(n), 'g', -1, 64)), nil
}

type jsonAnswer struct {
	Status     string  `json:"status"`
	HoldsAt    jsonNum `json:"holds_at"`
	NotShownAt jsonNum `json:"not_shown_at"`
	FailsAt    jsonNum `json:"fails_at"`
}

type jsonTerm struct {
	Term    string  `json:"term"`
	Mean    jsonNum `json:"mean"`
	SD      jsonNum `json:"sd"`
	Lower   jsonNum `json:"lower"`
	Upper   jsonNum `json:"upper"`
	Verdict Verdict `json:"verdict"`
}

type jsonPoint struct {
	Value              float64       `json:"value"`
	Step               int           `json:"step"`
	Verdict            Verdict       `json:"verdict"`
	Steady             Verdict       `json:"steady"`
	Recovery           Verdict       `json:"recovery"`
	Recovered          int           `json:"recovered"`
	Replicas           int           `json:"replicas"`
	Terms              []jsonTerm    `json:"terms"`
	GoodputRPS         float64       `json:"goodput_rps"`
	Amplification      float64       `json:"amplification"`
	FaultAmplification float64       `json:"fault_amplification,omitempty"`
	Services           []ServiceLoad `json:"services"`
	Failed             string        `json:"failed,omitempty"`
}

type jsonSearch struct {
	Param       string      `json:"param"`
	Kind        string      `json:"kind"`
	Lo          float64     `json:"lo"`
	Hi          float64     `json:"hi"`
	Resolution  float64     `json:"resolution"`
	Orientation string      `json:"orientation"`
	Answer      jsonAnswer  `json:"answer"`
	Bound       string      `json:"bound,omitempty"`
	Runs        int         `json:"runs"`
	Steps       int         `json:"steps"`
	Bottleneck  *Bottleneck `json:"bottleneck,omitempty"`
	Points      []jsonPoint `json:"points"`
	// HoldsAtRecovery is what the recovery of the replicas at the holding
	// point shows, with its own confidence (only with faults).
	HoldsAtRecovery *RecoveryClaim `json:"holds_at_recovery,omitempty"`
}

// RecoveryClaim is what k of n replicas recovering shows: a run recovers
// with probability at least LowerBound, at level Confidence (one-sided
// Clopper–Pearson); ReplicasToShow replicas, all recovering, would raise
// that bound to Confidence itself. The steady-state SLO's confidence is
// the search's Confidence; this is recovery's, stated apart.
type RecoveryClaim struct {
	Recovered      int     `json:"recovered"`
	Replicas       int     `json:"replicas"`
	Confidence     float64 `json:"confidence"`
	LowerBound     float64 `json:"per_run_recovery_lower_bound"`
	ReplicasToShow int     `json:"replicas_to_show_confidence"`
}

// newRecoveryClaim is the claim k of n recovering supports at level conf.
func newRecoveryClaim(k, n int, conf float64) RecoveryClaim {
	return RecoveryClaim{Recovered: k, Replicas: n, Confidence: conf, LowerBound: RecoveryLowerBound(k, n, conf), ReplicasToShow: ReplicasToShow(conf, conf)}
}

// String states the claim in words.
func (c RecoveryClaim) String() string {
	s := fmt.Sprintf("after the faults %d of %d replicas recovered: a run recovers with probability ≥ %s at %s confidence", c.Recovered, c.Replicas, pct(c.LowerBound), pct(c.Confidence))
	if c.LowerBound < c.Confidence {
		s += fmt.Sprintf(" (%d replicas, all recovering, would show ≥ %s)", c.ReplicasToShow, pct(c.Confidence))
	}
	return s
}

type jsonRecovery struct {
	Trigger          string  `json:"trigger"`
	RecoveryBoundS   float64 `json:"recovery_bound_s"`
	PerRunLowerBound float64 `json:"per_run_recovery_lower_bound"`
}

type jsonSolve struct {
	Path   string  `json:"path"`
	Target float64 `json:"target"`
	Answer string  `json:"answer"`
	jsonSearch
}

type jsonReport struct {
	Scenario      string        `json:"scenario"`
	SLO           string        `json:"slo"`
	Confidence    float64       `json:"confidence"`
	TermLevel     float64       `json:"term_level"`
	Replicas      int           `json:"replicas"`
	Rule          string        `json:"rule"`
	Current       float64       `json:"current"`
	Capacity      *jsonSearch   `json:"capacity,omitempty"`
	Headroom      *float64      `json:"headroom,omitempty"`
	Recovery      *jsonRecovery `json:"recovery,omitempty"`
	Amplification *struct {
		Steady     float64 `json:"steady"`
		WithFaults float64 `json:"with_faults,omitempty"`
		RetryShare float64 `json:"retry_share"`
	} `json:"amplification_at_capacity,omitempty"`
	Solves      []jsonSolve `json:"solves,omitempty"`
	Interrupted bool        `json:"interrupted,omitempty"`
}

func searchJSON(o *Outcome) jsonSearch {
	s := o.Search.withDefaults()
	a := o.Answer()
	js := jsonSearch{
		Param: s.Param, Kind: s.Kind.String(), Lo: s.Lo, Hi: s.Hi, Resolution: s.Resolution,
		Orientation: o.Orientation.String(),
		Answer:      jsonAnswer{Status: a.Status, HoldsAt: jsonNum(a.HoldsAt), NotShownAt: jsonNum(a.NotShownAt), FailsAt: jsonNum(a.FailsAt)},
		Bound:       o.Bound(), Runs: o.Runs, Steps: o.Steps,
	}
	if b, ok := o.Bottleneck(); ok {
		js.Bottleneck = &b
	}
	if pp := o.PassPoint(); o.HasFaults && pp != nil {
		c := newRecoveryClaim(pp.Recovered, len(pp.Replicas), s.Confidence)
		js.HoldsAtRecovery = &c
	}
	for _, p := range o.Points {
		jp := jsonPoint{Value: p.Value, Step: p.Step, Verdict: p.Verdict, Steady: p.Steady, Recovery: p.Recovery,
			Recovered: p.Recovered, Replicas: len(p.Replicas), GoodputRPS: p.Goodput, Amplification: p.Amplification,
			FaultAmplification: p.FaultAmplification, Services: p.Services, Failed: p.Failed}
		for _, t := range p.Terms {
			jp.Terms = append(jp.Terms, jsonTerm{Term: t.Name, Mean: jsonNum(t.Mean), SD: jsonNum(t.SD), Lower: jsonNum(t.Lower), Upper: jsonNum(t.Upper), Verdict: t.Verdict})
		}
		js.Points = append(js.Points, jp)
	}
	return js
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	var first *Outcome
	if r.Capacity != nil {
		first = r.Capacity
	} else if len(r.Solves) > 0 {
		first = r.Solves[0].Outcome
	}
	jr := jsonReport{Scenario: r.Scenario, Current: r.Current, Interrupted: r.Interrupted}
	if first != nil {
		s := first.Search.withDefaults()
		jr.SLO, jr.Confidence, jr.TermLevel, jr.Replicas = s.SLO.String(), s.Confidence, s.TermLevel(), s.Replicas
		jr.Rule = s.Rule(first.HasFaults)
		if first.HasFaults {
			jr.Recovery = &jsonRecovery{Trigger: first.Trigger.Label, RecoveryBoundS: s.Detector.RecoveryBound.Seconds(),
				PerRunLowerBound: RecoveryLowerBound(s.Replicas, s.Replicas, s.Confidence)}
		}
	}
	if o := r.Capacity; o != nil {
		js := searchJSON(o)
		jr.Capacity = &js
		if h, ok := r.Headroom(); ok {
			jr.Headroom = &h
		}
		if pp := o.PassPoint(); pp != nil {
			jr.Amplification = &struct {
				Steady     float64 `json:"steady"`
				WithFaults float64 `json:"with_faults,omitempty"`
				RetryShare float64 `json:"retry_share"`
			}{pp.Amplification, pp.FaultAmplification, RetryShare(pp.Amplification)}
		}
	}
	for _, s := range r.Solves {
		jr.Solves = append(jr.Solves, jsonSolve{Path: s.Path, Target: s.Target, Answer: s.Short(), jsonSearch: searchJSON(s.Outcome)})
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // SLO terms are full of < and >
	enc.SetIndent("", "  ")
	return enc.Encode(jr)
}
