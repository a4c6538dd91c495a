package policies

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The tests in this file pin the divergences of issue 15: each is the
// minimal script that showed stormsim counting at another moment than the
// real library, with the real library's answer as the expectation.

func mustBudget(t *testing.T, c BudgetConfig) Budget {
	t.Helper()
	b, err := NewBudget(c)
	require.NoError(t, err)
	return b
}

func mustBreaker(t *testing.T, c BreakerConfig) Breaker {
	t.Helper()
	b, err := NewBreaker(c)
	require.NoError(t, err)
	return b
}

func mustRetry(t *testing.T, name string) RetryConfig {
	t.Helper()
	r, err := RetryPreset(name)
	require.NoError(t, err)
	return r
}

// Divergence 1: a hedge that loses the race is cancelled, not failed. gRPC
// (A6) neither charges the throttling bucket for it nor may a breaker count
// it: 20 healthy calls hedged at 10 ms and answered at 15 ms all hedge, and
// the bucket stays full.
func TestLosingHedgesAreNotFailures(t *testing.T) {
	healthy := scriptedCall{out: []Outcome{OK}, lat: []time.Duration{15 * ms}}
	e := newTestEdge(t, EdgeConfig{Hedge: &HedgeConfig{Delay: 10 * ms, MaxAttempts: 2}})
	e.Budget = mustBudget(t, BudgetConfig{Preset: "grpc"})
	drive(t, e, same(20, 0, 100*ms, scriptedCall{out: healthy.out, lat: healthy.lat, opt: CallOptions{Counted: true}}))
	require.EqualValues(t, 20, e.Stats.HedgesSent)
	require.InDelta(t, 10, e.Budget.Level(0), 1e-9)

	for _, preset := range []string{"hystrix", "resilience4j", "gobreaker"} {
		e := newTestEdge(t, EdgeConfig{Hedge: &HedgeConfig{Delay: 10 * ms, MaxAttempts: 2}})
		e.Breaker = mustBreaker(t, BreakerConfig{Preset: preset, MinCalls: 10, WindowSize: 10})
		d := drive(t, e, same(200, 0, 20*ms, healthy))
		require.Zero(t, e.Breaker.Opens(), "%s: a healthy hedged edge opened the breaker", preset)
		require.Equal(t, Succeeded, d.results[199])
	}
}

// Divergence 2: a fatal status on any hedged attempt ends the call (A6:
// "If a fatal status code is received, the hedged RPC fails").
func TestFatalStatusEndsHedgedCall(t *testing.T) {
	e := newTestEdge(t, EdgeConfig{Retry: RetryConfig{On: []RetryClass{"unavailable"}}, Hedge: &HedgeConfig{Delay: 10 * ms, MaxAttempts: 2}})
	d := drive(t, e, []scriptedCall{{out: []Outcome{Error, OK}, lat: []time.Duration{20 * ms, 20 * ms}}})
	require.Equal(t, Error, d.outcomes[0])
	require.Equal(t, 20*ms, d.ended[0])
}

// Divergence 3: grpc-go calls throttle() only after the retryable-code
// check, so non-retryable failures cost no token.
func TestTokenBucketIgnoresNonRetryableFailures(t *testing.T) {
	e := newTestEdge(t, EdgeConfig{Retry: mustRetry(t, "grpc")})
	e.Budget = mustBudget(t, BudgetConfig{Preset: "grpc"})
	calls := same(5, 0, 10*ms, scriptedCall{out: []Outcome{Error}, lat: []time.Duration{ms}})
	calls = append(calls, scriptedCall{start: 100 * ms, out: []Outcome{Unavailable, OK}, lat: []time.Duration{ms}})
	d := drive(t, e, calls)
	require.Equal(t, 2, d.attempts[5], "the UNAVAILABLE call must be retried")
	require.Equal(t, Succeeded, d.results[5])
}

// Divergence 4: budgets are asked at the failure, before the backoff.
func TestBudgetsAskedAtTheFailure(t *testing.T) {
	t.Run("grpc", func(t *testing.T) {
		r := mustRetry(t, "grpc")
		r.Backoff.Jitter = "none"
		e := newTestEdge(t, EdgeConfig{Retry: r})
		e.Budget = mustBudget(t, BudgetConfig{Preset: "grpc"})
		warm := scriptedCall{out: []Outcome{Unavailable, Unavailable, Unavailable, OK}, lat: []time.Duration{ms}}
		d := drive(t, e, []scriptedCall{warm})
		require.InDelta(t, 7.1, e.Budget.Level(0), 1e-9)
		d = drive(t, e, same(3, 0, 30*ms, scriptedCall{out: []Outcome{Unavailable, OK}, lat: []time.Duration{ms}}))
		require.Equal(t, []int{2, 2, 1}, d.attempts, "grpc-go makes 5 attempts")
	})
	t.Run("aws", func(t *testing.T) {
		e := newTestEdge(t, EdgeConfig{Retry: RetryConfig{MaxAttempts: 3, On: []RetryClass{"error"}, Backoff: BackoffConfig{Initial: 40 * ms, Multiplier: 1}}})
		e.Budget = mustBudget(t, BudgetConfig{Preset: "aws-2026", Capacity: 28})
		d := drive(t, e, same(3, 0, 10*ms, scriptedCall{out: []Outcome{Error, OK}, lat: []time.Duration{ms}}))
		require.Equal(t, []int{2, 2, 1}, d.attempts, "the SDK takes the retry cost before sleeping")
	})
	t.Run("envoy", func(t *testing.T) {
		r := mustRetry(t, "envoy")
		r.Backoff.Jitter = "none"
		e := newTestEdge(t, EdgeConfig{Retry: r})
		e.Budget = mustBudget(t, BudgetConfig{Preset: "envoy"})
		calls := make([]scriptedCall, 4)
		for i := range calls {
			// Asked after the backoff, each retry would find the previous
			// one answered and its slot free again.
			calls[i] = scriptedCall{start: time.Duration(i) * 10 * time.Microsecond, out: []Outcome{Unavailable, OK},
				lat: []time.Duration{ms, time.Microsecond}}
		}
		d := drive(t, e, calls)
		require.Equal(t, []int{2, 2, 2, 1}, d.attempts, "Envoy admits 3 retries (min_concurrency) scheduled at once")
	})
}

// Divergence 6: with two cost classes in flight the AWS quota refunds the
// cost of the retry that succeeded.
func TestAWSRefundsTheSucceedingRetry(t *testing.T) {
	e := newTestEdge(t, EdgeConfig{Retry: RetryConfig{MaxAttempts: 2, On: []RetryClass{"unavailable", "error"}, Backoff: BackoffConfig{Initial: 10 * ms, Multiplier: 1}}})
	e.Budget = mustBudget(t, BudgetConfig{Preset: "aws-2026"})
	drive(t, e, []scriptedCall{
		{out: []Outcome{Unavailable, Error}, lat: []time.Duration{ms}},
		{out: []Outcome{Error, OK}, lat: []time.Duration{ms, 2 * ms}},
	})
	require.InDelta(t, 495, e.Budget.Level(0), 0, "SDK quota after the two calls")
}

// Divergence 7: Finagle's RequeueFilter lets each request requeue at most
// ⌈0.2 × budget balance⌉ times, the balance read when the request starts.
// Source: twitter/finagle finagle-core/src/main/scala/com/twitter/finagle/
// service/RequeueFilter.scala at commit 0e26b57635f1194eb90abf2d446a5fc6358a4b9e
// (apply: retryBudget.deposit(), then maxRetries = ceil(maxRetriesPerReq ×
// retryBudget.balance)), over RetryBudget.scala's token bucket whose balance
// is whole withdrawals. The expected counts follow that arithmetic by hand:
// balance 100 → 20 requeues, then 80 → 16, 64 → 13, 51 → 11, 41 → 9,
// 32 → 7, 25 → 5, 20 → 4.
func TestFinagleRequeuesPerRequest(t *testing.T) {
	e := newTestEdge(t, EdgeConfig{Retry: mustRetry(t, "finagle")})
	e.Budget = mustBudget(t, BudgetConfig{Preset: "finagle"})
	d := drive(t, e, same(8, 0, 10*ms, scriptedCall{out: []Outcome{Unavailable}, lat: []time.Duration{time.Microsecond}}))
	require.Equal(t, []int{21, 17, 14, 12, 10, 8, 6, 5}, d.attempts)
}

// Divergence 8: resilience4j hands every result to the current state, so a
// call admitted while closed that answers in half-open counts toward the
// half-open decision. Source: resilience4j/resilience4j
// resilience4j-circuitbreaker/src/main/java/io/github/resilience4j/
// circuitbreaker/internal/CircuitBreakerStateMachine.java at commit
// 037afe44b5661d0caa0ff01000ede43928bf097c (onSuccess and onError delegate
// to stateReference.get(); HalfOpenState records into its own metrics and
// decides once permittedNumberOfCallsInHalfOpenState are recorded).
func TestLateResultsCountInHalfOpen(t *testing.T) {
	b := mustBreaker(t, BreakerConfig{Kind: BreakerRate, WindowSize: 4, MinCalls: 4, FailureRate: 50, OpenFor: time.Second, HalfOpenCalls: 2})
	late, ok := b.Allow(0)
	require.True(t, ok)
	for range 4 {
		tk, _ := b.Allow(ms)
		b.Done(ms, tk, Error, ms)
	}
	require.Equal(t, Open, b.State(ms))
	probe, ok := b.Allow(time.Second + 2*ms)
	require.True(t, ok)
	b.Done(time.Second+3*ms, late, OK, time.Second)
	b.Done(time.Second+4*ms, probe, OK, ms)
	require.Equal(t, Closed, b.State(time.Second+4*ms), "the late OK and the probe are the two half-open calls")
}

// Divergence 5: the AWS SDKs' 2026 backoff waits from a 1 s base after a
// throttling error (aws-sdk-go-v2 v1.48.0 aws/retry/jitter_backoff.go
// backoffDelay2026: x = 1s when IsErrorThrottle) and 50 ms after others.
func TestAWS2026ThrottleBase(t *testing.T) {
	e := newTestEdge(t, EdgeConfig{Retry: mustRetry(t, "aws-standard-2026")})
	for _, tc := range []struct {
		cause Outcome
		base  time.Duration
	}{{Unavailable, time.Second}, {Error, 50 * ms}} {
		var longest time.Duration
		for i := range 200 {
			d := drive(t, e, []scriptedCall{{start: time.Duration(i) * time.Minute, out: []Outcome{tc.cause, OK}, lat: []time.Duration{0}}})
			wait := d.sendTimes[0][1] - d.sendTimes[0][0]
			require.Less(t, wait, tc.base, "first retry after %v waits U(0, %v)", tc.cause, tc.base)
			longest = max(longest, wait)
		}
		// 200 draws of U(0, base): the largest falls below 0.9·base with
		// probability 0.9^200 ≈ 7e-10.
		require.Greater(t, longest, tc.base*9/10, "after %v", tc.cause)
	}
}
