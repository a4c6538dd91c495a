package policies

import "time"

// Budget limits retries and hedges. All methods take the time explicitly and
// never block: a denied retry fails the call instead of waiting.
//
// The caller reports every first attempt (OnRequest), asks for a retry at
// the moment of the failure it follows — before any backoff, as grpc-go,
// the AWS SDKs and Envoy do — and for a hedge when it is due (TryRetry),
// and reports how every attempt ended (OnResult). Every attempt started by
// OnRequest or an admitted TryRetry is reported exactly once: one failed
// locally as BreakerOpen or Throttled, one the caller abandoned as Timeout,
// and one cancelled because its call ended without it (a losing hedge, or
// an admitted retry never sent) with Cancelled set. The concurrency budget
// counts attempts in flight and the AWS quota settles charges from these
// reports; a missing one leaks an in-flight slot or a charge.
type Budget interface {
	// OnRequest records the first attempt of a logical call on the edge.
	OnRequest(now time.Duration)
	// TryRetry asks to schedule a retry after an attempt ended with cause,
	// or to send a hedge (cause OK). True means admitted and charged.
	TryRetry(now time.Duration, cause Outcome) bool
	// OnResult records how an attempt ended.
	OnResult(now time.Duration, r Report)
	// OnRequestDone records that a logical call ended (all its attempts).
	OnRequestDone(now time.Duration)
	// Level reports the budget's remaining capacity for time series
	// (tokens, quota, or allowed retries), in the budget's own unit.
	Level(now time.Duration) float64
}

// Report is how one attempt ended, as a Budget hears of it.
type Report struct {
	// Outcome is the attempt's class (for a cancelled attempt, the class
	// the call ended with).
	Outcome Outcome
	// Retry says the attempt was admitted by TryRetry (a retry or hedge),
	// not a first attempt.
	Retry bool
	// Cause is the outcome TryRetry was asked with for this attempt, so a
	// budget that charges by cause settles the charge this attempt made.
	Cause Outcome
	// Retryable says the edge's retry policy retries this failure's class
	// (whether or not attempts remain); grpc-go charges its throttling
	// bucket only for such failures.
	Retryable bool
	// DontRetry says the callee asked, and the caller agreed, not to retry
	// (gRPC's negative pushback, which gRPC counts as a failure).
	DontRetry bool
	// Cancelled says the attempt was abandoned unanswered because its call
	// ended without needing it: a hedge that lost the race, the attempts
	// still in flight when a fatal answer ended the call, or a retry that
	// was admitted but never sent. It is neither a success nor a failure.
	Cancelled bool
	// Unsent says the attempt never left the caller: failed locally
	// (BreakerOpen, Throttled) or admitted and then dropped.
	Unsent bool
}

// sendCounter is implemented by budgets that count attempts in flight:
// the caller tells them when an admitted retry or hedge is actually sent,
// after its backoff.
type sendCounter interface {
	onSend(now time.Duration)
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
// by Done or Cancel exactly once (one the caller gave up on as Timeout): a
// half-open breaker
// waits for all its probes' results before it closes or reopens.
type Breaker interface {
	// Allow asks to send an attempt now. ok false means fail fast with
	// BreakerOpen. The ticket identifies the breaker generation, so a result
	// that arrives after a state change does not count twice.
	Allow(now time.Duration) (ticket uint64, ok bool)
	// Done records the result and latency of an allowed attempt.
	Done(now time.Duration, ticket uint64, o Outcome, latency time.Duration)
	// Cancel records that an allowed attempt was abandoned unanswered
	// because its call no longer needed it (a hedge that lost the race):
	// neither a success nor a failure, as gobreaker's IsExcluded and
	// resilience4j's releasePermission treat it. A half-open breaker frees
	// the probe's place.
	Cancel(now time.Duration, ticket uint64)
	// State returns the state at now (an open breaker becomes half-open
	// lazily once its open time has passed).
	State(now time.Duration) BreakerState
	// Opens counts transitions to Open.
	Opens() int64
}
