package policies

import (
	"errors"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sony/gobreaker/v2"
)

var errCancelled = errors.New("cancelled")

// TestConformsToGobreaker runs the consecutive breaker side by side with
// sony/gobreaker v2 (v2.4.0, TwoStepCircuitBreaker) on random scripts of
// overlapping attempts, outcomes and cancellations (gobreaker's IsExcluded). gobreaker reads time.Now, so it runs in
// a testing/synctest bubble whose fake clock the script advances; the two
// must agree on every admission and every state.
func TestConformsToGobreaker(t *testing.T) {
	for seed := range uint64(40) {
		synctest.Test(t, func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 15))
			openFor := time.Duration(1+r.IntN(300)) * time.Millisecond
			probes := 1 + r.IntN(3)
			failures := 1 + r.IntN(6)
			real := gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
				MaxRequests: uint32(probes),
				Timeout:     openFor,
				ReadyToTrip: func(c gobreaker.Counts) bool { return int(c.ConsecutiveFailures) >= failures },
				IsExcluded:  func(err error) bool { return errors.Is(err, errCancelled) },
			})
			ours := mustBreaker(t, BreakerConfig{Kind: BreakerConsecutive, Failures: failures, OpenFor: openFor, HalfOpenCalls: probes})
			type flight struct {
				done   func(error)
				ticket uint64
				sent   time.Duration
			}
			var inFlight []flight
			epoch := time.Now()
			pFail := r.Float64()
			states := map[gobreaker.State]BreakerState{gobreaker.StateClosed: Closed, gobreaker.StateOpen: Open, gobreaker.StateHalfOpen: HalfOpen}
			for step := range 2000 {
				time.Sleep(time.Duration(r.IntN(20)) * time.Millisecond)
				now := time.Since(epoch)
				if len(inFlight) == 0 || r.IntN(2) == 0 {
					done, err := real.Allow()
					tk, ok := ours.Allow(now)
					if ok != (err == nil) {
						t.Fatalf("seed %d step %d at %v: stormsim admits %v, gobreaker %v", seed, step, now, ok, err)
					}
					if ok {
						inFlight = append(inFlight, flight{done, tk, now})
					}
				} else {
					i := r.IntN(len(inFlight))
					f := inFlight[i]
					inFlight = append(inFlight[:i], inFlight[i+1:]...)
					switch {
					case r.IntN(10) == 0: // a hedge that lost the race
						f.done(errCancelled)
						ours.Cancel(now, f.ticket)
					case r.Float64() < pFail:
						f.done(errors.New("unavailable"))
						ours.Done(now, f.ticket, Unavailable, now-f.sent)
					default:
						f.done(nil)
						ours.Done(now, f.ticket, OK, now-f.sent)
					}
				}
				if got, want := ours.State(now), states[real.State()]; got != want {
					t.Fatalf("seed %d step %d at %v: stormsim %v, gobreaker %v", seed, step, now, got, want)
				}
			}
		})
	}
}
