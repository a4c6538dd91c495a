package policies

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestCallBareAnswerMatchesFinish checks the short path of an OK answer at
// a bare edge (no budget, breaker, throttle or hedger) against the general
// one: the same random scripts of writes run on a bare edge and on an edge
// that differs only by a hedger, which never hedges a write (it is not
// forced) but makes every answer go through finish. Every call must end the
// same way at the same time after the same attempts, with the same counts.
func TestCallBareAnswerMatchesFinish(t *testing.T) {
	cfg := EdgeConfig{Timeout: 30 * time.Millisecond, Retry: RetryConfig{MaxAttempts: 3,
		On:      []RetryClass{"unavailable", "timeout", "error"},
		Backoff: BackoffConfig{Initial: time.Millisecond, Jitter: "full"}}}
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 7))
		calls := make([]scriptedCall, 200)
		for i := range calls {
			c := scriptedCall{start: time.Duration(r.IntN(1000)) * time.Millisecond,
				opt: CallOptions{Write: true, Counted: r.IntN(4) != 0}}
			if r.IntN(3) == 0 {
				c.opt.HasDeadline, c.opt.Deadline = true, c.start+time.Duration(10+r.IntN(80))*time.Millisecond
			}
			for range 1 + r.IntN(4) {
				c.out = append(c.out, randomOutcome(r, 0.4))
				c.lat = append(c.lat, time.Duration(r.IntN(50))*time.Millisecond)
			}
			calls[i] = c
		}
		bare := newTestEdge(t, cfg)
		withHedger := cfg
		withHedger.Hedge = &HedgeConfig{Delay: 5 * time.Millisecond, MaxAttempts: 2}
		general := newTestEdge(t, withHedger)
		got, want := drive(t, bare, calls), drive(t, general, calls)
		require.Equal(t, want, got, "seed %d", seed)
		require.Equal(t, general.Stats, bare.Stats, "seed %d", seed)
		require.Positive(t, bare.Stats.Succeeded, "seed %d: no call took the short path", seed)
	}
}
