package policies

import "fmt"

// Outcome classifies how one attempt (or one whole call) ended, as the caller
// sees it. The classes are what retry policies select on.
type Outcome uint8

const (
	// OK: the callee answered with success.
	OK Outcome = iota
	// Unavailable: the callee refused the work before doing it (queue full,
	// shed, overloaded, concurrency limit), possibly with a retry-after hint.
	Unavailable
	// Timeout: no answer in time. The caller cannot tell whether the callee
	// did the work: the result is unknown.
	Timeout
	// Error: the callee answered with a definite application error.
	Error
	// BreakerOpen: the caller's own circuit breaker failed the call locally.
	BreakerOpen
	// Throttled: the caller's own adaptive throttle rejected the call locally.
	Throttled
	// Conflict: an idempotency key was reused with a different payload; never retried.
	Conflict
	// InProgress: an idempotency key is being processed by another attempt;
	// retryable after a delay.
	InProgress
	// NotSent: the attempt failed before any byte of it left the caller
	// (waiting for a pooled connection, connecting, or in the TLS
	// handshake), so the callee cannot have done the work: safe to retry,
	// even a non-idempotent write (gRPC A6's transparent retry).
	NotSent
	numOutcomes
)

var outcomeNames = [...]string{"ok", "unavailable", "timeout", "error", "breaker_open", "throttled", "conflict", "in_progress", "not_sent"}

// String returns the outcome's name as used in scenario files and JSON.
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return fmt.Sprintf("outcome(%d)", o)
}

// ParseOutcome is the inverse of String.
func ParseOutcome[S ~string](s S) (Outcome, error) {
	for i, n := range outcomeNames {
		if n == string(s) {
			return Outcome(i), nil
		}
	}
	return 0, fmt.Errorf("unknown outcome class %q (want one of unavailable, timeout, error, ...)", s)
}

// OutcomeSet is a set of outcome classes, e.g. the classes a retry policy retries.
type OutcomeSet uint16

// Has reports whether o is in the set.
func (s OutcomeSet) Has(o Outcome) bool { return s&(1<<o) != 0 }

// With returns the set with o added.
func (s OutcomeSet) With(o Outcome) OutcomeSet { return s | 1<<o }

// ParseOutcomeSet parses class names; an empty list gives def.
func ParseOutcomeSet[S ~string](names []S, def OutcomeSet) (OutcomeSet, error) {
	if len(names) == 0 {
		return def, nil
	}
	var s OutcomeSet
	for _, n := range names {
		o, err := ParseOutcome(n)
		if err != nil {
			return 0, err
		}
		s = s.With(o)
	}
	return s, nil
}

// DefaultRetryOn is the retry classes when a scenario names none.
const DefaultRetryOn = OutcomeSet(1<<Unavailable | 1<<Timeout)
