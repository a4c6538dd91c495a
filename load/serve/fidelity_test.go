package serve

import (
	"context"
	"math"
	"testing"
	"testing/synctest"

	"github.com/stormsim/stormsim/internal/memnet"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/sim"
	"github.com/stormsim/stormsim/topology"
)

// fidelityScenario is a three-hop chain at moderate load with a capacity
// drop at the bottom and retries on errors at every hop. Arrivals are
// evenly spaced, so both runs offer exactly the same requests and goodput
// differs only by what happened to them. The database runs
// at ρ ≈ 0.3, and ≈ 0.6 while it has half its workers. Retries are driven
// by injected errors, not by timeouts or rejections, so that the comparison
// does not hinge on how punctual a test machine's timers are: a real sleep
// overshoots by a millisecond or two on a busy machine, and a CPU starved by
// other processes stalls every service at once, which the simulator never
// does. The generous queues absorb such a stall without rejecting.
const fidelityScenario = `
name: fidelity
seed: 3
duration: 4s
warmup: 1s
workload:
  entry: gateway
  arrival: constant
  rate: 150
  deadline: 3s
  client:
    timeout: 2s
    retry: {max_attempts: 2, on: [error]}
services:
  - name: gateway
    workers: 256
    queue: 1000
    service_time: {dist: exponential, mean: 1ms}
    calls:
      - to: orders
        timeout: 1s
        retry: {max_attempts: 3, on: [error]}
  - name: orders
    workers: 256
    queue: 1000
    service_time: {dist: exponential, mean: 2ms}
    calls:
      - to: db
        timeout: 1s
        retry: {max_attempts: 3, on: [error]}
  - name: db
    workers: 6
    queue: 200
    error_rate: 0.15
    service_time: {dist: constant, value: 10ms}
faults:
  - {service: db, at: 2s, for: 1s, capacity: 0.5}
`

// fidelityWritesScenario exercises what the callee machine decides and
// the first fidelity scenario does not: writes with idempotency keys,
// replies lost at the store (5 %), contention slowdown, and a rate step.
// The slowdown is mild (50 µs per attempt in flight): a steeper one makes
// the store metastable, and a machine busy with other processes, which
// stalls every service at once, can tip the real run over the edge.
// A lost reply times the gateway's attempt out after 100 ms and is retried:
// with keys the retry replays the saved result, without them it executes
// the write again, a duplicate. The store runs at ρ ≈ 0.25, 0.5 after the
// step, so the comparison does not hinge on a starved machine's timers.
const fidelityWritesScenario = `
name: fidelity-writes
seed: 11
duration: 4s
warmup: 1s
workload:
  entry: gw
  arrival: constant
  rate: 100
  schedule: [{at: 2s, rate: 200}]
  deadline: 3s
  write_fraction: 0.5
  idempotency_keys: true
  client:
    timeout: 2s
    retry: {max_attempts: 2, on: [error]}
services:
  - name: gw
    workers: 256
    queue: 1000
    service_time: {dist: exponential, mean: 1ms}
    calls:
      - to: store
        timeout: 100ms
        retry: {max_attempts: 3, on: [timeout, error]}
  - name: store
    workers: 8
    queue: 500
    slowdown_per_inflight: 50us
    service_time: {dist: exponential, mean: 10ms}
faults:
  - {service: store, at: 0s, for: 4s, drop_response: 0.05}
`

// TestFidelityRealVersusSimulated runs scenarios simulated and through
// serve over HTTP, the latter on the bubble's clock (runInMemory). The
// first, with and without a retry budget: the amplification at each
// service and the goodput agree within 2 %. The second, with and without
// idempotency keys: goodput, attempts per service and duplicates agree as
// counts, within 1 % or 1. Both modes see the same arrivals, service-time
// draws and waits to the nanosecond, so they differ only where events due
// at the same instant are taken in another order (which attempt draws
// first); on real time the runs were independent draws, allowed 15 % and
// 4 Poisson standard deviations, and retried when the machine was busy.
func TestFidelityRealVersusSimulated(t *testing.T) {
	for _, tc := range []struct {
		name    string
		yaml    string
		sets    []string
		compare func(t *testing.T, simRes, realRes *metrics.Result)
	}{
		{"no-budget", fidelityScenario, nil, compare},
		{"budget", fidelityScenario, []string{"services.orders.calls.db.budget.kind=ratio", "services.orders.calls.db.budget.ratio=0.05"}, compare},
		{"writes-keys", fidelityWritesScenario, nil, compareCounts},
		{"writes-no-keys", fidelityWritesScenario, []string{"workload.idempotency_keys=false"}, compareCounts},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := topology.Parse("fidelity.yaml", []byte(tc.yaml), tc.sets)
			if err != nil {
				t.Fatal(err)
			}
			simRes, err := sim.Run(context.Background(), sc, sim.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if tc.name == "writes-no-keys" && simRes.Summary.Duplicates == 0 {
				t.Error("no duplicates simulated without keys: the case tests nothing")
			}
			realRes := runInMemory(t, sc, ScenarioOptions{})
			tc.compare(t, simRes, realRes)
			if t.Failed() {
				for _, e := range realRes.Summary.Edges {
					t.Logf("real edge %+v", e)
				}
				t.Logf("real load %+v", *realRes.Summary.Load)
			}
		})
	}
}

// runInMemory runs sc as RunScenario does — its services, the driver and
// the HTTP between them — in a synctest bubble on an in-memory network
// (load/internal/loadtest): on the bubble's clock, where the service times, waits
// and timeouts of the scenario are exact and a machine busy with other work
// stalls nothing, so the run is the scenario every time.
func runInMemory(t *testing.T, sc *topology.Scenario, opt ScenarioOptions) *metrics.Result {
	t.Helper()
	var res *metrics.Result
	synctest.Test(t, func(t *testing.T) {
		opt.Network = new(memnet.Network)
		var err error
		if res, err = RunScenario(context.Background(), sc, opt); err != nil {
			t.Fatal(err)
		}
	})
	if res == nil {
		t.FailNow()
	}
	return res
}

func compare(t *testing.T, simRes, realRes *metrics.Result) {
	t.Helper()
	within := func(what string, s, r float64) {
		t.Helper()
		if s == 0 && r == 0 {
			return
		}
		if d := math.Abs(r-s) / math.Max(math.Abs(s), 1e-9); d > 0.02 {
			t.Errorf("%s: simulated %.3f, real %.3f: %.1f%% apart, want ≤ 2%%", what, s, r, 100*d)
		} else {
			t.Logf("%s: simulated %.3f, real %.3f", what, s, r)
		}
	}
	within("goodput_rps", simRes.Summary.GoodputRPS, realRes.Summary.GoodputRPS)
	for _, ss := range simRes.Summary.Services {
		var rs *metrics.ServiceSummary
		for i := range realRes.Summary.Services {
			if realRes.Summary.Services[i].Name == ss.Name {
				rs = &realRes.Summary.Services[i]
			}
		}
		if rs == nil {
			t.Errorf("service %s missing from the real run", ss.Name)
			continue
		}
		within("amplification "+ss.Name, ss.Amplification, rs.Amplification)
	}
}

func compareCounts(t *testing.T, simRes, realRes *metrics.Result) {
	t.Helper()
	agree := func(what string, s, r float64) {
		t.Helper()
		tol := max(1, 0.01*s)
		if d := math.Abs(r - s); d > tol {
			t.Errorf("%s: simulated %.0f, real %.0f: %.0f apart, want ≤ %.0f", what, s, r, d, tol)
		} else {
			t.Logf("%s: simulated %.0f, real %.0f", what, s, r)
		}
	}
	ss, rs := simRes.Summary, realRes.Summary
	agree("succeeded", float64(ss.Requests.Succeeded), float64(rs.Requests.Succeeded))
	agree("duplicates", float64(ss.Duplicates), float64(rs.Duplicates))
	for _, sv := range ss.Services {
		for _, rv := range rs.Services {
			if rv.Name == sv.Name {
				agree("attempts "+sv.Name, float64(sv.Attempts), float64(rv.Attempts))
			}
		}
	}
}
