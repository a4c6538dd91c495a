package idempotency

import "fmt"

// CallerView is how the caller saw a logical request end.
type CallerView uint8

const (
	// Succeeded: the caller received a success.
	Succeeded CallerView = iota
	// Failed: the caller received a definite failure.
	Failed
	// Unknown: the caller gave up or timed out; the effect may or may not
	// have happened.
	Unknown
)

// String returns the view's lower-case name.
func (v CallerView) String() string {
	switch v {
	case Succeeded:
		return "succeeded"
	case Failed:
		return "failed"
	case Unknown:
		return "unknown"
	}
	return fmt.Sprintf("caller_view(%d)", v)
}

// Totals are the ledger's counts over finished logical requests.
type Totals struct {
	// Requests counts finished logical requests, by the caller's view.
	Requests, Succeeded, Failed, Unknown int64
	// Executions counts side-effect executions; Duplicates counts those
	// beyond the first of each request: Σ max(0, n−1).
	Executions, Duplicates int64
	// UnknownCommitted and UnknownNotCommitted split the Unknown requests by
	// whether the effect executed at least once.
	UnknownCommitted, UnknownNotCommitted int64
	// FailedCommitted counts requests the caller saw fail although the
	// effect executed.
	FailedCommitted int64
}

// Ledger is the server side's truth about side effects: it folds each
// finished logical request — how many times its effect executed, and how
// its caller saw it end — into Totals. The drivers count a live request's
// executions themselves (the simulator in its request record, load mode at
// the committing service) and Fold it once the request is over, so memory
// does not grow with the requests.
//
// The zero Ledger is ready to use. It is not safe for concurrent use.
type Ledger struct {
	t Totals
}

// Fold adds one finished request whose side effect executed n times, as
// its caller saw it end, to the totals; a view outside the three constants
// is counted as Unknown. The simulator keeps a request's executions in its
// request record, load mode reads them from the committing service when
// the run is over: both derive duplicates and unknown outcomes by this one
// rule.
func (l *Ledger) Fold(n int64, v CallerView) {
	t := &l.t
	t.Requests++
	t.Executions += n
	if n > 1 {
		t.Duplicates += n - 1
	}
	switch v {
	case Succeeded:
		t.Succeeded++
	case Failed:
		t.Failed++
		if n > 0 {
			t.FailedCommitted++
		}
	default:
		t.Unknown++
		if n > 0 {
			t.UnknownCommitted++
		} else {
			t.UnknownNotCommitted++
		}
	}
}

// Totals returns the counts over finished requests.
func (l *Ledger) Totals() Totals { return l.t }
