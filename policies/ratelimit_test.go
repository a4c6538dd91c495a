package policies

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRateLimiterScript(t *testing.T) {
	l, err := NewRateLimiter(RateLimitConfig{MaxTokens: 3, FillInterval: 100 * ms})
	require.NoError(t, err)
	for i := range 3 {
		ok, _ := l.Admit(0)
		require.True(t, ok, "token %d of a full bucket", i+1)
	}
	ok, ra := l.Admit(0)
	require.False(t, ok)
	require.Equal(t, 100*ms, ra, "the next token comes one fill interval later")
	ok, ra = l.Admit(60 * ms)
	require.False(t, ok)
	require.Equal(t, 40*ms, ra, "the token comes with the fill at 100 ms, not gradually")
	ok, _ = l.Admit(100 * ms)
	require.True(t, ok)
	require.Equal(t, 50*ms, l.Reserve(150*ms), "a send at 150 ms waits for the fill at 200 ms")
	require.Equal(t, 150*ms, l.Reserve(150*ms), "and the next for the fill at 300 ms")
	ok, ra = l.Admit(250 * ms)
	require.False(t, ok, "the reservations hold the fills of 200 and 300 ms")
	require.Equal(t, 50*ms, ra)
}

// envoyFills is the local rate limit's bucket as Envoy's fill timer runs it
// (source/extensions/filters/common/local_ratelimit/local_ratelimit_impl.cc,
// onFillTimer: tokens = min(max_tokens, tokens + tokens_per_fill) every
// fill_interval): it admits requests at the given times and returns how
// many.
func envoyFills(max, perFill int, fill time.Duration, at []time.Duration) int {
	tokens, next, admitted := max, fill, 0
	for _, t := range at {
		for next <= t {
			tokens = min(max, tokens+perFill)
			next += fill
		}
		if tokens > 0 {
			tokens--
			admitted++
		}
	}
	return admitted
}

// TestRateLimiterMatchesEnvoyOverWholeIntervals drives random arrival
// streams through the limiter and Envoy's timer-filled bucket (fills larger
// than the bucket included): they must admit exactly the same requests.
func TestRateLimiterMatchesEnvoyOverWholeIntervals(t *testing.T) {
	for seed := range uint64(30) {
		r := rand.New(rand.NewPCG(seed, 20))
		maxTokens, perFill := 1+r.IntN(20), 1+r.IntN(5)
		fill := time.Duration(50+r.IntN(500)) * ms
		l, err := NewRateLimiter(RateLimitConfig{MaxTokens: maxTokens, TokensPerFill: perFill, FillInterval: fill})
		require.NoError(t, err)
		var at []time.Duration
		now := time.Duration(0)
		admitted := 0
		end := 100 * fill
		for now < end {
			now += time.Duration(r.ExpFloat64() * float64(fill) / float64(perFill) / 1.5)
			if now >= end {
				break
			}
			at = append(at, now)
			if ok, _ := l.Admit(now); ok {
				admitted++
			}
			if want := envoyFills(maxTokens, perFill, fill, at); want != admitted {
				t.Fatalf("seed %d at %v: limiter admitted %d, Envoy %d", seed, now, admitted, want)
			}
		}
	}
}

func TestRateLimitValidate(t *testing.T) {
	for _, c := range []RateLimitConfig{{}, {MaxTokens: 1}, {MaxTokens: 1, FillInterval: -1}, {MaxTokens: 1, FillInterval: 1, TokensPerFill: -1}} {
		_, err := NewRateLimiter(c)
		require.Error(t, err, "%+v", c)
	}
}

// TestCallSendRate: attempts beyond the send rate wait for their token;
// retries and first attempts share the bucket, and a call ended while its
// retry waits for a token gives the budget its retry back.
func TestCallSendRate(t *testing.T) {
	e := newTestEdge(t, EdgeConfig{SendRate: &RateLimitConfig{MaxTokens: 2, FillInterval: 100 * ms},
		Retry: RetryConfig{MaxAttempts: 2, On: []RetryClass{"unavailable"}}})
	e.Budget = mustBudget(t, BudgetConfig{Kind: BudgetConcurrency, Percent: 20, MinConcurrency: 1})
	calls := []scriptedCall{
		{start: 0, out: []Outcome{Unavailable, OK}, lat: []time.Duration{ms}, opt: CallOptions{Counted: true}},
		{start: 0, out: []Outcome{OK}, lat: []time.Duration{ms}, opt: CallOptions{Counted: true}},
		{start: 0, out: []Outcome{OK}, lat: []time.Duration{ms}, opt: CallOptions{Counted: true}},
	}
	d := drive(t, e, calls)
	require.Equal(t, [][]time.Duration{{0, 200 * ms}, {0}, {100 * ms}}, d.sendTimes,
		"two tokens at 0; the third call, first in line, takes the fill at 100 ms, the retry the one at 200 ms")
	require.EqualValues(t, 2, e.Stats.SendWaits)
	require.InDelta(t, 1, e.Budget.Level(time.Second), 0, "no retry slot leaked")

	var c Call
	a := c.Start(time.Second, e, CallOptions{HasDeadline: true, Deadline: time.Second + 50*ms})
	require.Equal(t, Send, a.Kind)
	a = c.Answered(time.Second+ms, 1, Unavailable, 0, false)
	require.Equal(t, Send, a.Kind, "a token is left at 1 s")
	a = c.Answered(time.Second+2*ms, 2, OK, 0, false)
	require.Equal(t, Finish, a.Kind)
	a = c.Start(time.Second+3*ms, e, CallOptions{HasDeadline: true, Deadline: time.Second + 50*ms})
	require.Equal(t, waitUntil(time.Second+100*ms), a, "no token until the fill at 1.1 s")
	a = c.Wake(time.Second + 100*ms)
	require.Equal(t, finish(Timeout, Failed), a, "the deadline passed while it waited")
}
