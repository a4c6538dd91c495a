package model

import (
	"fmt"
	"time"

	"github.com/stormsim/stormsim/metrics"
)

// Resolution is what first made an intent's outcome certain
// (metrics.ResolvedBy).
type Resolution uint8

const (
	// ByReply: the caller's own call answered SUCCEEDED or FAILED.
	ByReply Resolution = iota
	// ByQuery: a status query by key answered a terminal state (or the
	// write resubmitted after NOT_FOUND answered).
	ByQuery
	// ByRecovery: a recovery task settled the record from the facts.
	ByRecovery
	// ByReconciliation: the reconciliation job settled it.
	ByReconciliation
	// ByManual: it reached the manual queue (certain only after a person).
	ByManual
	// ByNever: still unknown when the run ended.
	ByNever
)

var resolutionNames = [...]string{"reply", "query", "recovery", "reconciliation", "manual", "never"}

// String names the resolution as metrics.ResolvedBy's JSON does.
func (r Resolution) String() string {
	if int(r) < len(resolutionNames) {
		return resolutionNames[r]
	}
	return fmt.Sprintf("Resolution(%d)", uint8(r))
}

// Certain is the certainty of one logical write (an intent), kept by the driver in its
// record of the request: when it was first attempted, whether its caller's
// view became unknown, and whether (and how) it has become certain.
type Certain struct {
	First    time.Duration
	unknown  bool
	resolved bool
	By       Resolution
	queried  bool
}

// Tally is the run's certainty: it follows each counted intent through
// Tally's transitions and yields metrics.Certainty. Times to certainty
// are returned to the driver, which records them in its histogram. The
// zero Tally, with AlertAfter set, is ready; it is not safe for concurrent
// use.
//
//	Begin(first attempt)           an intent is followed
//	Unknown                        its call ended unknown
//	Queried                        one status query was sent for it
//	Resolve(by)                    first resolution wins: time to certainty
//	Manual                         it went to the manual queue
//	End                            nothing follows it any more: never certain
type Tally struct {
	// AlertAfter alerts on an intent unknown this long after its first
	// attempt (0: no alerts).
	AlertAfter time.Duration
	c          metrics.Certainty
	unknown    int64 // intents unknown now
	manual     int64
	queried    int64 // intents that sent a query
	// open holds the first attempts of the intents that ended never
	// certain or in the manual queue, whose alerts Certainty counts
	open []time.Duration
}

// Begin follows a new intent first attempted at first.
func (t *Tally) Begin(in *Certain, first time.Duration) {
	*in = Certain{First: first}
	t.c.Intents++
}

// Unknown records that in's outcome became unknown to its caller.
func (t *Tally) Unknown(in *Certain) {
	if in.unknown || in.resolved {
		return
	}
	in.unknown = true
	t.unknown++
	t.c.UnknownMax = max(t.c.UnknownMax, t.unknown)
}

// Queried counts one status query sent for in.
func (t *Tally) Queried(in *Certain) {
	t.c.Queries++
	if !in.queried {
		in.queried = true
		t.queried++
	}
}

// Resubmitted counts a write sent again with the same key.
func (t *Tally) Resubmitted() { t.c.Resubmits++ }

// Resolve records at now that by made in certain. Only the first
// resolution counts: first is false, and took 0, for a later one.
func (t *Tally) Resolve(in *Certain, now time.Duration, by Resolution) (took time.Duration, first bool) {
	if !t.settle(in, by) {
		return 0, false
	}
	took = now - in.First
	if t.AlertAfter > 0 && took > t.AlertAfter {
		t.c.Alerts++ // it was still unknown when the alert was due
	}
	return took, true
}

// Manual records that in went to the manual queue: it stays
// uncertain (never timed), and alerts once its age passes AlertAfter.
func (t *Tally) Manual(in *Certain) {
	if !t.settle(in, ByManual) {
		return
	}
	t.manual++
	t.c.ManualQueueMax = max(t.c.ManualQueueMax, t.manual)
	t.open = append(t.open, in.First)
}

// Resolved reports whether in is certain (or in the manual queue).
func (in *Certain) Resolved() bool { return in.resolved }

// End records that in will not become certain: nothing follows it any
// more (the run ended, or its last query and job are over). It is counted
// as never certain, and alerts if the run ends AlertAfter past its first
// attempt (Certainty). A never-certain intent is unknown to its caller
// from then to the end of the run — including one whose call was still
// open when a run diverged or was interrupted — so it stays among the
// intents unknown now, and UnknownMax is at least the count of them.
func (t *Tally) End(in *Certain) {
	if in.resolved {
		return
	}
	t.Unknown(in)
	if t.settle(in, ByNever) {
		t.open = append(t.open, in.First)
	}
}

// settle ends in's uncertainty by by, unless it already ended: the one
// transition every resolution shares. Only a resolution that makes in
// certain, or sends it to the manual queue, takes it off the unknown
// count; ByNever leaves it there.
func (t *Tally) settle(in *Certain, by Resolution) bool {
	if in.resolved {
		return false
	}
	in.resolved, in.By = true, by
	if in.unknown && by != ByNever {
		t.unknown--
	}
	t.add(by)
	return true
}

func (t *Tally) add(by Resolution) {
	r := &t.c.ResolvedBy
	switch by {
	case ByReply:
		r.Reply++
	case ByQuery:
		r.Query++
	case ByRecovery:
		r.Recovery++
	case ByReconciliation:
		r.Reconciliation++
	case ByManual:
		r.Manual++
	default:
		r.Never++
	}
}

// UnknownNow is the number of intents unknown now: those whose call ended
// unknown and are not yet certain nor in the manual queue, and those that
// ended never certain.
func (t *Tally) UnknownNow() int64 { return t.unknown }

// ManualNow is the manual queue's length now.
func (t *Tally) ManualNow() int64 { return t.manual }

// Certainty returns the counts of a run that ended at end; the driver
// fills the time to certainty (MeanMs … MaxMs), Recoveries and
// Reconciliation.
func (t *Tally) Certainty(end time.Duration) metrics.Certainty {
	c := t.c
	if t.AlertAfter > 0 {
		for _, first := range t.open {
			if end-first > t.AlertAfter {
				c.Alerts++
			}
		}
	}
	c.ManualQueueEnd = t.manual
	if t.queried > 0 {
		c.QueriesPerIntent = float64(c.Queries) / float64(t.queried)
	}
	return c
}
