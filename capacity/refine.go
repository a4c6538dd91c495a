package capacity

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/stormsim/stormsim/metrics"
)

// refine adds replicas near the boundary until the bracket [holds at,
// fails at] is within the search's Precision of its midpoint. Each round
// doubles the replicas, judges again every evaluated point strictly
// between the holding point and the nearest point shown to fail (their
// bounds straddle the threshold, or they would not lie there), and
// resumes the bisection from the new bracket with the finer resolution
// the precision needs. Replica r keeps seed ReplicaSeed(seed, r), so a
// point's first replicas are the runs it already had (they are not run
// again) and every round is a pure function of the rounds before it:
// shards take the same rounds. A round that would pass MaxRuns, or
// MaxReplicas, is not started and Outcome.Imprecise says so.
func (e *evaluator) refine(ctx context.Context, out *Outcome, step *int, pass, fail float64) (float64, float64, error) {
	if e.s.Precision < 0 || e.s.PassOnly {
		return pass, fail, nil
	}
	for {
		sure, ok := nearestFailing(out.Points, fail, out.Orientation)
		if !ok || e.precise(pass, sure) {
			return pass, fail, nil
		}
		var between []float64
		for _, p := range out.Points {
			if p.Failed == "" && math.Abs(p.Value-pass) < math.Abs(sure-pass) && math.Abs(p.Value-sure) < math.Abs(sure-pass) {
				between = append(between, p.Value)
			}
		}
		n := min(2*e.s.Replicas, MaxReplicas)
		per := len(e.s.Runs(pass, e.faults)) / e.s.Replicas
		// The round's re-judged points plus a bisection of the bracket
		// at the new replica count, at least one step.
		cost := per * ((n-e.s.Replicas)*len(between) + n)
		switch {
		case n == e.s.Replicas:
			out.Imprecise = fmt.Sprintf("%d replicas per point is the most", n)
			return pass, fail, nil
		case e.runs+cost > e.s.MaxRuns:
			out.Imprecise = fmt.Sprintf("the next round (%d replicas near the boundary) would pass the bound of %d runs", n, e.s.MaxRuns)
			return pass, fail, nil
		}
		e.s.Replicas = n
		mid := math.Abs(pass+sure) / 2
		if e.s.Kind != Integer {
			e.s.Resolution = min(e.s.Resolution, e.s.Precision*mid)
		}
		if len(between) > 0 {
			pts, err := e.points(ctx, *step, between...)
			if err != nil {
				return pass, fail, err
			}
			out.Steps = *step
			*step++
			for _, p := range pts {
				out.put(p)
			}
		}
		// Walking from the holding point towards the failing one, the
		// first point not shown to hold ends the bracket, and the point
		// before it holds: the answer errs low, as in the bisection.
		pts := slices.Clone(out.Points)
		slices.SortFunc(pts, func(a, b Point) int { return cmp.Compare(math.Abs(a.Value-pass), math.Abs(b.Value-pass)) })
		fail = sure
		for _, p := range pts {
			if !between2(p.Value, pass, sure) {
				continue
			}
			if p.Verdict != Holds {
				fail = p.Value
				break
			}
			pass = p.Value
		}
		e.limit = e.s.MaxRuns
		var err error
		pass, fail, err = e.narrow(ctx, out, step, pass, fail)
		e.limit = 0
		if err != nil {
			return pass, fail, err
		}
		if e.limited {
			if sure, ok := nearestFailing(out.Points, fail, out.Orientation); !ok || !e.precise(pass, sure) {
				out.Imprecise = fmt.Sprintf("the bound of %d runs stopped the search with %d replicas near the boundary", e.s.MaxRuns, n)
			}
			return pass, fail, nil
		}
	}
}

// precise reports whether the bracket (pass, sure) is within the
// precision of its midpoint, or as narrow as an integer path allows.
func (e *evaluator) precise(pass, sure float64) bool {
	d := math.Abs(sure - pass)
	if e.s.Kind == Integer && d <= 1 {
		return true
	}
	return d/2 <= e.s.Precision*math.Abs(pass+sure)/2
}

// between2 reports whether v lies strictly between a and b.
func between2(v, a, b float64) bool {
	return math.Min(a, b) < v && v < math.Max(a, b)
}

// put adds p to the evaluated points, replacing a point of the same value
// judged before with fewer replicas.
func (o *Outcome) put(p Point) {
	for i := range o.Points {
		if o.Points[i].Value == p.Value {
			o.Points[i] = p
			return
		}
	}
	o.Points = append(o.Points, p)
}

// writePrecision prints how narrow the bracket [holds at, fails at] is
// against the precision asked, and why it is wider when a bound stopped
// the rounds that add replicas.
func (o *Outcome) writePrecision(bw *metrics.ErrWriter, a Answer) {
	s := o.Search.withDefaults()
	half := math.Abs(a.FailsAt-a.HoldsAt) / math.Abs(a.FailsAt+a.HoldsAt)
	switch {
	case s.Precision < 0:
		bw.Printf("precision: the bracket is ±%s of its midpoint, with %d replicas per point (no replicas added: --precision 0)\n", pct(half), o.MaxReplicas)
	case o.Imprecise != "":
		bw.Printf("precision: the bracket is ±%s of its midpoint, wider than the ±%s asked: %s\n", pct(half), pct(s.Precision), o.Imprecise)
	default:
		bw.Printf("precision: the bracket is ±%s of its midpoint (asked ±%s), with up to %d replicas per point near the boundary\n", pct(half), pct(s.Precision), o.MaxReplicas)
	}
}
