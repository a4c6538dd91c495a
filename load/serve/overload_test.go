package serve

import (
	"context"
	"math"
	"testing"

	"github.com/stormsim/stormsim/sim"
	"github.com/stormsim/stormsim/topology"
)

// overloadScenario offers 400 requests/s, evenly spaced, to 16 workers of
// 50 ms each (320/s) for 10 s: the queue grows by 80 requests a second, and
// the last requests wait 800 / 320 = 2.5 s before their 50 ms of work, so
// p99 ≈ 2.55 s. Every queued request's latency is the sum of the service
// times ahead of it on its worker: if each emulated service time overshot
// its timer and the overshoot accumulated, p99 would drift far above.
const overloadScenario = `
name: overload
seed: 1
duration: 10s
workload:
  entry: svc
  arrival: constant
  rate: 400
  client:
    timeout: 60s
services:
  - name: svc
    workers: 16
    service_time: {dist: constant, value: 50ms}
`

// TestOverloadP99MatchesSimulator: through serve, the open-loop overload's
// p99 is within 5 % of the simulator's over HTTP, and within 15 % over
// gRPC (issue 20's bound). The tolerances are the issues'; the latency
// histogram's resolution (3 significant digits) and the driver's own send
// jitter (≈ 1 ms against 2.5 s) are far below them.
func TestOverloadP99MatchesSimulator(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 2 × 10 s of real traffic: runs without -short (make test)")
	}
	sc, err := topology.Parse("overload.yaml", []byte(overloadScenario), nil)
	if err != nil {
		t.Fatal(err)
	}
	simRes, err := sim.Run(context.Background(), sc, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := simRes.Summary.LatencyMs.P99
	if math.Abs(want-2550) > 0.05*2550 {
		t.Fatalf("simulated p99 %.0f ms, theory 2550 ms", want)
	}
	for _, tc := range []struct {
		protocol string
		tol      float64
	}{{ProtocolHTTP, 0.05}, {ProtocolGRPC, 0.15}} {
		t.Run(tc.protocol, func(t *testing.T) {
			// On the bubble's clock (runInMemory) every service time is
			// exact and no busy machine stalls the services, so one run
			// is the scenario.
			realRes := runInMemory(t, sc, ScenarioOptions{Protocol: tc.protocol})
			got := realRes.Summary.LatencyMs.P99
			d := math.Abs(got-want) / want
			t.Logf("p99 simulated %.0f ms, serve %.0f ms (driver late for %d of %d)", want, got, realRes.Summary.Load.Late, realRes.Summary.Load.Sent)
			if d > tc.tol {
				t.Fatalf("p99 through serve %.0f ms, simulated %.0f ms: %.1f%% apart, want ≤ %.0f%%", got, want, 100*d, 100*tc.tol)
			}
		})
	}
}
