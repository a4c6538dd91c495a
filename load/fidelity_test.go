package load

import (
	"context"
	"math"
	"testing"

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

// TestFidelityRealVersusSimulated runs scenarios simulated and for real
// over loopback HTTP. The first, with and without a retry budget: the
// amplification at each service and the goodput agree within 15 %. The
// second, with and without idempotency keys: goodput, attempts per service
// and duplicates agree as counts. Each is a count over the run; the two
// runs are independent draws of the same process, so their difference has
// variance at most the sum of the counts (Poisson bound; a binomial count
// varies less) and must stay within 4 standard deviations of it.
func TestFidelityRealVersusSimulated(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 4 × 4 s of real traffic: runs without -short (make test)")
	}
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
			realRes := runUnstarved(t, sc)
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

// runUnstarved runs sc for real. A real run shares the machine: when other
// processes starve it of CPU for a second, all services stall together and
// the run is not the scenario any more. Such a run is told apart by its
// driver falling behind its own schedule; it is repeated, at most three
// times in all, and the last is returned anyway. A wrong implementation
// disagrees every time, so the tests comparing it still fail.
func runUnstarved(t *testing.T, sc *topology.Scenario) *metrics.Result {
	t.Helper()
	return runUnstarvedWith(t, sc, ScenarioOptions{})
}

// runUnstarvedWith is runUnstarved with the run's options (its protocol).
func runUnstarvedWith(t *testing.T, sc *topology.Scenario, opt ScenarioOptions) *metrics.Result {
	t.Helper()
	for try := 1; ; try++ {
		realRes, err := RunScenario(context.Background(), sc, opt)
		if err != nil {
			t.Fatal(err)
		}
		lr := realRes.Summary.Load
		starved := lr.Late > lr.Sent/10
		if !starved || try == 3 {
			if starved {
				t.Logf("try %d: the driver was late for %d of %d requests (a starved CPU); comparing anyway", try, lr.Late, lr.Sent)
			}
			return realRes
		}
		t.Logf("try %d: the driver was late for %d of %d requests (a starved CPU): running again", try, lr.Late, lr.Sent)
	}
}

func compare(t *testing.T, simRes, realRes *metrics.Result) {
	t.Helper()
	within := func(what string, s, r float64) {
		t.Helper()
		if s == 0 && r == 0 {
			return
		}
		if d := math.Abs(r-s) / math.Max(math.Abs(s), 1e-9); d > 0.15 {
			t.Errorf("%s: simulated %.3f, real %.3f: %.0f%% apart, want ≤ 15%%", what, s, r, 100*d)
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
		tol := 4 * math.Sqrt(s+r)
		if d := math.Abs(r - s); d > tol {
			t.Errorf("%s: simulated %.0f, real %.0f: %.0f apart, want ≤ %.0f (4σ)", what, s, r, d, tol)
		} else {
			t.Logf("%s: simulated %.0f, real %.0f (4σ = %.0f)", what, s, r, tol)
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
