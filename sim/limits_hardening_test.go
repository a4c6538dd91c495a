package sim

import (
	"context"
	"testing"
	"time"

	"github.com/stormsim/stormsim/topology"
)

// stoppedEarly is a steady chain well below capacity (utilization 0.25)
// over a long arrival window, so a run stopped part-way has served nearly
// everything it was offered.
const stoppedEarly = `name: stopped-early
seed: 1
duration: 1h
warmup: 1s
workload:
  entry: api
  rate: 500
  deadline: 1s
services:
  - name: api
    workers: 4
    service_time: {dist: exponential, mean: 2ms}
`

// TestStoppedRunRatesUseTheTimeSimulated checks that a run stopped early,
// interrupted or diverged, reports goodput over the window it measured
// (from the warm-up to where it stopped), not over the arrival window the
// scenario asked for.
func TestStoppedRunRatesUseTheTimeSimulated(t *testing.T) {
	sc, err := topology.Parse("stopped-early.yaml", []byte(stoppedEarly), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("interrupted", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		// Cancel from the progress callback: the stop lands at the same
		// simulated time on every machine.
		res, err := Run(ctx, sc, Options{Progress: func(now, _ time.Duration) {
			if now >= 20*time.Second {
				cancel()
			}
		}})
		if err != nil {
			t.Fatal(err)
		}
		s := res.Summary
		if s.Status != StatusInterrupted {
			t.Fatalf("status %q, want interrupted", s.Status)
		}
		if s.SimTimeS < 20 || s.SimTimeS > 22 {
			t.Fatalf("stopped at %gs, want just after 20s", s.SimTimeS)
		}
		checkWindow(t, s.WindowS, s.SimTimeS-1, s.GoodputRPS, s.Requests.Succeeded)
		// Offered ~ Poisson(500 × 19 s): the goodput is the rate within
		// a few standard deviations (√9500 ≈ 97 requests, 5 req/s).
		if s.GoodputRPS < 500-25 || s.GoodputRPS > 500+25 {
			t.Fatalf("goodput %g req/s, want 500 ± 25", s.GoodputRPS)
		}
	})
	t.Run("diverged", func(t *testing.T) {
		over := *sc
		over.Limits.MaxEvents = 200_000
		res, err := Run(context.Background(), &over, Options{})
		if err != nil {
			t.Fatal(err)
		}
		s := res.Summary
		if s.Status != StatusDiverged || s.Diverged == nil {
			t.Fatalf("status %q (%+v), want diverged", s.Status, s.Diverged)
		}
		checkWindow(t, s.WindowS, s.SimTimeS-1, s.GoodputRPS, s.Requests.Succeeded)
	})
}

func checkWindow(t *testing.T, window, want, goodput float64, succeeded int64) {
	t.Helper()
	if d := window - want; d < -1e-9 || d > 1e-9 {
		t.Fatalf("window %gs, want %gs (warm-up to the stop)", window, want)
	}
	if g := float64(succeeded) / want; goodput < g*(1-1e-9) || goodput > g*(1+1e-9) {
		t.Fatalf("goodput %g, want succeeded/window = %g", goodput, g)
	}
}
