package sim

import (
	"context"
	"fmt"
	"testing"

	"github.com/stormsim/stormsim/topology"
)

// convergeScenario builds a small convergence scenario from fuzz bytes:
// lost replies, owner crashes, a slow downstream, cancellation, and every
// convergence key on or off.
func convergeScenario(b []byte) string {
	at := func(i int) int {
		if i < len(b) {
			return int(b[i])
		}
		return 0
	}
	on := func(i int) bool { return at(i)%2 == 1 }
	jitters := []string{"none", "full", "equal", "decorrelated"}
	src := fmt.Sprintf(`
name: fuzz-converge
seed: %d
duration: 3s
warmup: 500ms
workload:
  entry: gw
  rate: %d
  write_fraction: 0.%d
  idempotency_keys: true
  deadline: 1s
  alert_after: %dms
  client: {timeout: %dms, retry: {max_attempts: %d, on: [timeout, unavailable, in_progress]}}
  query: {first_delay: %dms, interval: %dms, multiplier: %d, jitter: %s, max_interval: 2s, deadline: %dms, random_phase: %v, resubmit: %v, call: {timeout: 50ms}}
services:
  - name: gw
    workers: 8
    service_time: {dist: exponential, mean: 1ms}
    calls: [{to: orders, timeout: 300ms%s}]
  - name: orders
    workers: %d
    queue: 50
    commits: true
    cancel_on_timeout: %v
    service_time: {dist: exponential, mean: 5ms}
    query_time: {dist: constant, value: 1ms}
    idempotency: {lease: %dms}
`, at(0)+1, 20+at(1)%100, 1+at(2)%9, at(3)%2*500, 50+at(4)%400, 1+at(5)%3,
		at(6)%200, 10+at(7)%200, 1+at(8)%3, jitters[at(9)%4], 500+at(10)*20, on(11), on(12),
		gwQuery(on(28), 20+at(29)%200, on(30)), 1+at(13)%8, on(14), 50+at(15)*4)
	if on(16) {
		src += "    recovery: {on_absent: " + []string{"fail", "resume"}[at(17)%2] + ", fact_query: {to: wh, timeout: 40ms}}\n"
	}
	if on(18) {
		src += fmt.Sprintf("    reconciliation: {interval: %dms, batch: %d, cost_per_item: %dms, max_tries: %d, fact_query: {to: wh, timeout: 40ms}}\n",
			100+at(19)*4, 1+at(20)%5, at(21)%3, 1+at(22)%3)
	}
	src += "    calls: [{to: wh, timeout: " + fmt.Sprint(10+at(23)%100) + "ms}]\n"
	src += "  - name: wh\n    workers: 4\n    service_time: {dist: exponential, mean: " + fmt.Sprint(1+at(24)%30) + "ms}\n"
	if on(25) {
		src += "    query_time: {dist: constant, value: 1ms}\n"
	}
	src += fmt.Sprintf("faults:\n  - {service: orders, at: 1s, for: 1s, drop_response: 0.%d, crash_owner: 0.%d}\n", at(26)%10, at(27)%5)
	return src
}

// gwQuery is gw's call's own status queries (calls[].query), when on.
func gwQuery(on bool, intervalMs int, resubmit bool) string {
	if !on {
		return ""
	}
	return fmt.Sprintf(", query: {interval: %dms, deadline: 2s, resubmit: %v}", intervalMs, resubmit)
}

// FuzzConverge checks convergence's invariants on any mix: the run
// completes and drains (no attempt, request or intent held), every intent
// is resolved exactly one way, nothing is repaired twice, and the fence
// holds: with recovery, and without a resume, no write executes twice.
func FuzzConverge(f *testing.F) {
	for _, seed := range [][]byte{{}, {1, 50, 5, 1, 100, 2, 0, 50, 1, 0, 10, 1, 1, 4, 0, 50, 1, 0, 1, 100, 3, 1, 2, 30, 20, 0, 5, 4},
		{7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7},
		{3, 80, 5, 1, 100, 2, 0, 50, 1, 0, 10, 1, 1, 4, 0, 50, 1, 0, 1, 100, 3, 1, 2, 30, 20, 1, 5, 4, 1, 30, 1}} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		src := convergeScenario(b)
		sc, err := topology.Parse("fuzz-converge.yaml", []byte(src), nil)
		if err != nil {
			t.Fatalf("generated scenario rejected: %v\n%s", err, src)
		}
		m, err := build(sc)
		if err != nil {
			t.Fatal(err)
		}
		res := m.run(context.Background(), Options{})
		s := res.Summary
		if s.Status != StatusComplete {
			t.Fatalf("status %s\n%s", s.Status, src)
		}
		if m.alive != 0 || m.liveReqs != 0 || m.cv.active != 0 {
			t.Fatalf("left alive: %d attempts, %d requests, %d intents\n%s", m.alive, m.liveReqs, m.cv.active, src)
		}
		c := s.Certainty
		rb := c.ResolvedBy
		if rb.Reply+rb.Query+rb.Recovery+rb.Reconciliation+rb.Manual+rb.Never != c.Intents {
			t.Fatalf("resolutions %+v do not add up to %d intents\n%s", rb, c.Intents, src)
		}
		if r := c.Reconciliation; r != nil && r.Rerepaired != 0 {
			t.Fatalf("repaired twice: %+v\n%s", *r, src)
		}
		resume := sc.Services[1].Recovery != nil && sc.Services[1].Recovery.OnAbsent == "resume"
		if sc.Services[1].Recovery != nil && !resume && s.Duplicates != 0 {
			t.Fatalf("%d duplicates with recovery: the fence did not hold\n%s", s.Duplicates, src)
		}
	})
}
