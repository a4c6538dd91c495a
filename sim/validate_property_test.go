package sim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stormsim/stormsim/topology"
)

// randomScenarioYAML writes a small scenario whose keys take valid and
// invalid values at random: arrivals, rates, closed clients, workers,
// queues, distributions, error classes, slowdown, calls to known and
// unknown services, fan-out and quorum, parallel groups, and faults.
func randomScenarioYAML(r *rand.Rand) string {
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	// or: a valid value, or 1 time in 30 the invalid one
	or := func(good, bad string) string {
		if r.IntN(30) == 0 {
			return bad
		}
		return good
	}
	var b strings.Builder
	fmt.Fprintf(&b, "name: prop\nseed: %d\nduration: %s\nwarmup: 0s\ninterval: 100ms\n", r.IntN(100), or(pick("200ms", "300ms"), "-1s"))
	n := 1 + r.IntN(3)
	names := []string{"a", "b", "c"}[:n]
	fmt.Fprintf(&b, "workload:\n  entry: %s\n  arrival: %s\n  rate: %s\n", or("a", "nope"), or(pick("poisson", "constant", "closed"), "bursty"), or(pick("50", "0"), "-1"))
	if r.IntN(2) == 0 {
		fmt.Fprintf(&b, "  clients: %s\n  think_time: %s\n", or("3", "0"), or("10ms", "-1s"))
	}
	if r.IntN(2) == 0 {
		fmt.Fprintf(&b, "  schedule: [{at: %s, rate: %s}]\n", or("100ms", "-1s"), or("100", "-5"))
	}
	fmt.Fprintf(&b, "  deadline: %s\n  write_fraction: %s\n  idempotency_keys: %s\n", pick("100ms", "0s"), or(pick("0", "0.5"), "2"), pick("true", "false"))
	fmt.Fprintf(&b, "  client: {timeout: %s, retry: {max_attempts: %s}}\n", or("50ms", "-1s"), or(pick("1", "3"), "0"))
	b.WriteString("services:\n")
	for i, name := range names {
		fmt.Fprintf(&b, "  - name: %s\n    workers: %s\n", name, or("2", pick("0", "-1")))
		if r.IntN(2) == 0 {
			fmt.Fprintf(&b, "    queue: %s\n", or(pick("5", "0"), "-1"))
		}
		fmt.Fprintf(&b, "    service_time: %s\n", or(pick("{dist: exponential, mean: 1ms}", "{dist: constant, value: 2ms}", "{dist: lognormal, p50: 1ms, p99: 5ms}"), pick("{dist: weird}", "{dist: exponential, mean: -1ms}")))
		fmt.Fprintf(&b, "    error_rate: %s\n    error_class: %s\n", or(pick("0", "0.1"), "2"), or(pick("error", "unavailable", "timeout"), "boom"))
		if r.IntN(3) == 0 {
			fmt.Fprintf(&b, "    slowdown_per_inflight: %s\n", or("100us", "-1ms"))
		}
		if r.IntN(3) == 0 {
			fmt.Fprintf(&b, "    downstream_failure: %s\n", or(pick("propagate", "timeout"), "explode"))
		}
		if i+1 < n && r.IntN(4) > 0 {
			to := or(names[i+1], "nope")
			switch r.IntN(3) {
			case 0:
				fmt.Fprintf(&b, "    calls: [{to: %s, timeout: 20ms}]\n", to)
			case 1:
				fmt.Fprintf(&b, "    calls: [{to: %s, timeout: 20ms, fanout: %s, wait_for: %s}]\n", to, or("2", "-1"), or(pick("0", "1", "2"), "3"))
			default:
				fmt.Fprintf(&b, "    calls: [{parallel: [{to: %s, timeout: 20ms}, {to: %s, timeout: 20ms}], wait_for: %s}]\n", to, names[n-1], or(pick("1", "2"), "3"))
			}
		}
	}
	if r.IntN(2) == 0 {
		fmt.Fprintf(&b, "faults:\n  - {service: %s, at: %s, for: %s, capacity: %s, drop_response: %s}\n",
			or(names[0], "nope"), or("0s", "-1s"), or("100ms", "0s"), or("0.5", "-0.5"), or(pick("0", "0.5"), "2"))
	}
	return b.String()
}

// TestWhatValidateAcceptsTheSimulatorBuilds: over random scenarios, valid
// and not, topology (what `stormsim validate` runs) never panics, and every
// scenario it accepts is one the model compiles and the simulator builds
// and runs to the end. The simulator re-checks nothing topology checked, so
// this is the contract between them.
func TestWhatValidateAcceptsTheSimulatorBuilds(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	accepted := 0
	for i := range 600 {
		src := randomScenarioYAML(r)
		sc, err := parseNoPanic(t, src)
		if err != nil {
			continue
		}
		accepted++
		m, err := build(sc)
		if err != nil {
			t.Fatalf("case %d: topology accepted, the simulator refused: %v\n%s", i, err, src)
		}
		if res := m.run(context.Background(), Options{}); res == nil {
			t.Fatalf("case %d: no result\n%s", i, src)
		}
	}
	// The generator must reach both sides of the contract.
	if accepted < 20 || accepted > 580 {
		t.Fatalf("%d of 600 random scenarios valid: the generator does not exercise both sides", accepted)
	}
	t.Logf("%d of 600 random scenarios valid", accepted)
}

func parseNoPanic(t *testing.T, src string) (sc *topology.Scenario, err error) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("topology panicked: %v\n%s", p, src)
		}
	}()
	return topology.Parse("prop.yaml", []byte(src), nil)
}
