package policies

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The systems below cannot be imported from Go. Each test encodes the
// behaviour of the cited source file at the cited commit — the arithmetic
// as a reference function in the test, or a time script whose expectations
// follow the source line by line — and holds stormsim to it. Hystrix is
// encoded in TestHystrixBreaker (breaker_test.go), Finagle's RequeueFilter
// in TestFinagleRequeuesPerRequest and resilience4j's state machine in
// TestLateResultsCountInHalfOpen (divergence_test.go).

// envoyInterval is the interval JitteredBackOffStrategy::nextBackOffMs
// (envoyproxy/envoy source/common/common/backoff_strategy.cc at commit
// 4280ef77469b410068d6cb7efd0f04927f9695c8) draws the n-th retry's delay
// from, as random() % interval milliseconds capped at max: it starts at
// base and doubles while below max/2, then stays at max.
func envoyInterval(base, max uint64, n int) uint64 {
	next := base
	var backoff uint64
	for range n {
		backoff = next
		if next < max/2 {
			next *= 2
		} else {
			next = max
		}
	}
	return backoff
}

func TestEnvoyBackoffSource(t *testing.T) {
	b, err := NewBackoff(mustRetry(t, "envoy").Backoff)
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(7, 7))
	for n := 1; n <= 8; n++ {
		interval := time.Duration(envoyInterval(25, 250, n)) * time.Millisecond
		require.Equal(t, interval, b.Expo(n), "retry %d: Envoy's interval is the preset's expo(n)", n)
		for range 1000 {
			d := b.Delay(n, 0, r)
			require.True(t, d >= 0 && d < interval, "retry %d drew %v outside [0, %v)", n, d, interval)
		}
	}
}

// envoyRetryMax is RetryBudgetImpl::max from envoyproxy/envoy
// source/common/upstream/resource_manager_impl.h at commit
// 01c2c1fadbc61d572c7e02568c98ff001c0bfe8f: max(uint64(percent/100 ×
// (requests + pending)), min_retry_concurrency); a retry may be created
// while count() < max().
func envoyRetryMax(percent float64, minConc, active uint64) uint64 {
	return max(uint64(percent/100*float64(active)), minConc)
}

func TestEnvoyRetryBudgetSource(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	for range 200 {
		percent := float64(1 + r.IntN(100))
		minConc := uint64(r.IntN(6))
		if minConc == 0 {
			minConc = 3 // stormsim's 0 means the default, Envoy's too
		}
		b := mustBudget(t, BudgetConfig{Kind: BudgetConcurrency, Percent: percent, MinConcurrency: int(minConc)})
		active := uint64(r.IntN(200))
		for range active {
			b.OnRequest(0)
		}
		// Schedule retries (in backoff, not yet upstream requests) until
		// refused: the refusal must come when Envoy's count() reaches max().
		var admitted uint64
		for b.TryRetry(0, Unavailable) {
			admitted++
			require.Less(t, admitted, uint64(100_000))
		}
		require.Equal(t, envoyRetryMax(percent, minConc, active), admitted,
			"percent %v min %d active %d", percent, minConc, active)
		if percent > 90 {
			continue // sent retries at 100 % fund themselves without end, in Envoy too
		}
		// Sent, the retries become upstream requests and raise max().
		for range admitted {
			b.(sendCounter).onSend(0)
		}
		var more uint64
		for b.TryRetry(0, Unavailable) {
			more++
			b.(sendCounter).onSend(0)
			require.Less(t, more, uint64(100_000))
		}
		require.Equal(t, envoyRetryMax(percent, minConc, active+admitted+more), admitted+more)
	}
}
