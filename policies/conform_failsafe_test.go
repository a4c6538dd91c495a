package policies

import (
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/failsafe-go/failsafe-go/circuitbreaker"
)

// TestConformsToFailsafeGo runs the consecutive breaker side by side with
// github.com/failsafe-go/failsafe-go v0.9.8's circuit breaker configured as
// its equivalent — WithFailureThreshold(n) (n failures in the last n
// executions, i.e. in a row), WithSuccessThreshold(m) (m probes, any
// failed probe reopens), WithDelay — on random scripts of one execution at
// a time, in a synctest bubble whose clock the script advances by random
// nanoseconds. (failsafe-go releases a half-open permit after each result,
// so with overlapping probes it admits more than m: that case differs by
// design and is not scripted. It also turns half-open at exactly the delay,
// where gobreaker waits past it; random nanosecond steps never land there.)
func TestConformsToFailsafeGo(t *testing.T) {
	for seed := range uint64(40) {
		synctest.Test(t, func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 17))
			delay := time.Duration(1+r.IntN(300)) * time.Millisecond
			failures, probes := 1+r.IntN(6), 1+r.IntN(3)
			real := circuitbreaker.NewBuilder[any]().
				WithFailureThreshold(uint(failures)).
				WithSuccessThreshold(uint(probes)).
				WithDelay(delay).Build()
			ours := mustBreaker(t, BreakerConfig{Kind: BreakerConsecutive, Failures: failures, OpenFor: delay, HalfOpenCalls: probes})
			states := map[circuitbreaker.State]BreakerState{circuitbreaker.ClosedState: Closed,
				circuitbreaker.OpenState: Open, circuitbreaker.HalfOpenState: HalfOpen}
			epoch := time.Now()
			pFail := r.Float64()
			for step := range 2000 {
				time.Sleep(time.Duration(1 + r.Int64N(int64(20*time.Millisecond))))
				now := time.Since(epoch)
				permit := real.TryAcquirePermit()
				tk, ok := ours.Allow(now)
				if ok != permit {
					t.Fatalf("seed %d step %d at %v: stormsim admits %v, failsafe-go %v", seed, step, now, ok, permit)
				}
				if ok {
					lat := time.Duration(r.Int64N(int64(5 * time.Millisecond)))
					time.Sleep(lat)
					now = time.Since(epoch)
					if r.Float64() < pFail {
						real.RecordFailure()
						ours.Done(now, tk, Error, lat)
					} else {
						real.RecordSuccess()
						ours.Done(now, tk, OK, lat)
					}
				}
				if got, want := ours.State(now), states[real.State()]; got != want {
					t.Fatalf("seed %d step %d at %v: stormsim %v, failsafe-go %v", seed, step, now, got, want)
				}
			}
		})
	}
}
