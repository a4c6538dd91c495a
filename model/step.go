package model

import "github.com/stormsim/stormsim/policies"

// Quorum is the clock-free machine of one step of downstream calls made
// at once: a fan-out of one edge or a parallel group, which succeeds when
// Need of its Total members succeeded and fails as soon as that can no
// longer be. The driver (sim's group, serve's callDownstream) starts the
// members in order while Start allows it, reports each member's end with
// Done, and acts on Verdict: wait, or end the step (succeeded, or failed
// with the last failure's class) and abort the members still running.
//
// Start refuses once the verdict is in: a member that fails as it starts
// (a breaker open, a budget spent, a deadline passed) can make the quorum
// impossible before the rest start, and those are then never started, as
// a service that checks its errgroup before each launch would. The zero
// value is not usable: a Quorum comes from NewQuorum. Not safe for
// concurrent use.
type Quorum struct {
	need, total int
	started     int
	succeeded   int
	failed      int
	last        policies.Outcome
}

// NewQuorum returns the machine of a step needing need of total members
// (need ≤ 0, or beyond total: all of them, as topology's wait_for 0).
func NewQuorum(need, total int) Quorum {
	if need <= 0 || need > total {
		need = total
	}
	return Quorum{need: need, total: total}
}

// Need returns how many members must succeed.
func (q *Quorum) Need() int { return q.need }

// Start reports whether the next member may start, and counts it started:
// one is left and no verdict is in.
func (q *Quorum) Start() bool {
	if q.started == q.total {
		return false
	}
	if _, _, decided := q.Verdict(); decided {
		return false
	}
	q.started++
	return true
}

// Done records that a member ended: succeeded, or failed with class o.
func (q *Quorum) Done(succeeded bool, o policies.Outcome) {
	if succeeded {
		q.succeeded++
		return
	}
	q.failed++
	q.last = o
}

// Verdict is the step's result once decided: succeeded when Need
// members succeeded, else failed with the class o of the last failure
// once too many failed.
func (q *Quorum) Verdict() (succeeded bool, o policies.Outcome, decided bool) {
	switch {
	case q.succeeded >= q.need:
		return true, policies.OK, true
	case q.failed > q.total-q.need:
		return false, q.last, true
	}
	return false, policies.OK, false
}

// AfterStep is the sequence rule of a started attempt's downstream steps:
// after step i of n ended — succeeded, or failed with class o — the
// attempt goes on to step next (more), or answers with answer: OK after
// the last step, else the failed step's class as downstream_failure maps
// it (DownstreamFailure). The steps after a failed one are not made.
func (c *callee) AfterStep(i, n int, succeeded bool, o policies.Outcome) (next int, more bool, answer policies.Outcome) {
	switch {
	case !succeeded:
		return i, false, c.DownstreamFailure(o)
	case i+1 < n:
		return i + 1, true, policies.OK
	}
	return i, false, policies.OK
}
