package policies

import "time"

// Budget limits retries and hedges. All methods take the time explicitly and
// never block: a denied retry fails the call instead of waiting.
//
// The caller reports every first attempt (OnRequest), asks before every
// retry or hedge (TryRetry), and reports every attempt's result (OnResult).
// Every attempt started by OnRequest or an admitted TryRetry must be
// reported exactly once: one failed locally as BreakerOpen or Throttled, and
// one the caller abandoned as Timeout. The concurrency budget counts
// attempts in flight and the AWS quota settles charges from these reports;
// a missing one leaks an in-flight slot or a charge.
type Budget interface {
	// OnRequest records the first attempt of a logical call on the edge.
	OnRequest(now time.Duration)
	// TryRetry asks to send a retry or hedge after an attempt ended with
	// cause (OK for a hedge). True means admitted and charged.
	TryRetry(now time.Duration, cause Outcome) bool
	// OnResult records how an attempt ended; retry says whether it was a
	// retry or hedge (admitted by TryRetry) rather than a first attempt.
	OnResult(now time.Duration, o Outcome, retry bool)
	// OnRequestDone records that a logical call ended (all its attempts).
	OnRequestDone(now time.Duration)
	// Level reports the budget's remaining capacity for time series
	// (tokens, quota, or allowed retries), in the budget's own unit.
	Level(now time.Duration) float64
}

// BreakerState is a circuit breaker's state.
type BreakerState uint8

// The breaker states: Closed admits every attempt, Open fails them locally,
// HalfOpen admits a limited number of probes.
const (
	Closed BreakerState = iota
	Open
	HalfOpen
)

// String returns the state's name for output and plots.
func (s BreakerState) String() string {
	switch s {
	case Closed:
		return "closed"
	case Open:
		return "open"
	case HalfOpen:
		return "half-open"
	}
	return "unknown"
}

// Breaker is a circuit breaker in the two-step shape that suits an
// event-driven caller: Allow before an attempt, Done with its result. Each
// attempt goes through the breaker. Every admitted attempt must be reported
// by Done exactly once (an abandoned one as Timeout): a half-open breaker
// waits for all its probes' results before it closes or reopens.
type Breaker interface {
	// Allow asks to send an attempt now. ok false means fail fast with
	// BreakerOpen. The ticket identifies the breaker generation, so a result
	// that arrives after a state change does not count twice.
	Allow(now time.Duration) (ticket uint64, ok bool)
	// Done records the result and latency of an allowed attempt.
	Done(now time.Duration, ticket uint64, o Outcome, latency time.Duration)
	// State returns the state at now (an open breaker becomes half-open
	// lazily once its open time has passed).
	State(now time.Duration) BreakerState
	// Opens counts transitions to Open.
	Opens() int64
}
