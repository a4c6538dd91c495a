package serve

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stormsim/stormsim/topology"
)

// lostResponses is a two-hop write path whose committing service loses 20 %
// of its replies after committing: the client times out and retries.
const lostResponses = `
name: lost
seed: 5
duration: 2s
workload:
  entry: gateway
  arrival: constant
  rate: 50
  deadline: 2s
  write_fraction: 1
  client:
    timeout: 150ms
    retry: {max_attempts: 3, on: [timeout]}
services:
  - name: gateway
    workers: 64
    service_time: {dist: constant, value: 1ms}
    calls:
      - to: orders
        timeout: 100ms
        propagate_deadline: true
  - name: orders
    workers: 16
    service_time: {dist: constant, value: 2ms}
faults:
  - {service: orders, at: 0s, for: 10s, drop_response: 0.2}
`

// TestLostResponsesDuplicateWithoutKeys: every retry of a write whose reply
// was lost executes it again, unless the write carries an idempotency key.
// A write's second attempt follows a lost first reply (p = 0.2) and its
// third a second lost reply, so its duplicates D are 0, 1 or 2 with
// probabilities 0.8, 0.16, 0.04: E[D] = p + p² = 0.24 and Var[D] = 0.2624.
// Without keys the 100 writes' duplicates must lie within 4 standard
// deviations of 24; with keys there are none, the retries being replayed
// from the store.
func TestLostResponsesDuplicateWithoutKeys(t *testing.T) {
	for _, keys := range []bool{false, true} {
		sets := []string{}
		if keys {
			sets = append(sets, "workload.idempotency_keys=true")
		}
		sc, err := topology.Parse("lost.yaml", []byte(lostResponses), sets)
		if err != nil {
			t.Fatal(err)
		}
		var orders *Service
		res := runInMemory(t, sc, ScenarioOptions{Ready: func(c *Cluster) { orders = c.Service("orders") }})
		s := res.Summary
		st := orders.Stats()
		t.Logf("keys %v: offered %d succeeded %d unknown %d; executions %d duplicates %d replays %d",
			keys, s.Requests.Offered, s.Requests.Succeeded, s.Requests.Unknown, st.Executions, s.Duplicates, st.Replays)
		if s.Requests.Offered != 100 {
			t.Fatalf("offered %d, want 100", s.Requests.Offered)
		}
		switch {
		case !keys && (math.Abs(float64(s.Duplicates)-0.24*100) > 4*math.Sqrt(0.2624*100) || s.Duplicates != st.Duplicates):
			t.Errorf("without keys: %d duplicates (ledger %d), want 24 ± %.1f and equal", s.Duplicates, st.Duplicates, 4*math.Sqrt(0.2624*100))
		case keys && (s.Duplicates != 0 || st.Replays < 8 || st.Executions > 100):
			t.Errorf("with keys: %d duplicates, %d replays, %d executions; want 0, ≈ 20, ≤ 100", s.Duplicates, st.Replays, st.Executions)
		}
	}
}

func TestRunScenarioInterrupted(t *testing.T) {
	sc, err := topology.Parse("lost.yaml", []byte(lostResponses), []string{"duration=60s"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	res, err := RunScenario(ctx, sc, ScenarioOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 6*time.Second {
		t.Errorf("an interrupted 60 s scenario took %v to return", el)
	}
	if s := res.Summary; s.Status != "interrupted" || s.Requests.Offered == 0 || s.Requests.Offered > 30 {
		t.Errorf("status %q offered %d, want interrupted with about 25 requests", s.Status, s.Requests.Offered)
	}
	if res.Series.Column("attempts/orders") < 0 {
		t.Errorf("per-service series missing: %v", res.Series.Columns)
	}
}

// TestServeRecordsSucceededAttemptLatency: serve keeps, beside each
// service's attempt latency, the latency of the attempts it answered OK,
// which tune reads from a results directory. A db with one worker and no
// queue, its 4 ms service time longer than the 2.5 ms between requests at
// 400 req/s, refuses about every other one (at 200 req/s, 5 ms apart, it
// refused only when the driver dispatched late); its OK histogram holds
// exactly its counted successes, all at least its 4 ms service time.
func TestServeRecordsSucceededAttemptLatency(t *testing.T) {
	sc, err := topology.Parse("refuse.yaml", []byte(`
name: refuse
duration: 500ms
workload: {entry: db, arrival: constant, rate: 400, deadline: 1s}
services:
  - {name: db, workers: 1, queue: 0, service_time: {dist: constant, value: 4ms}}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	res := runInMemory(t, sc, ScenarioOptions{})
	db := res.Summary.Services[0]
	ok, all := res.ServiceOKLatency["db"], res.ServiceLatency["db"]
	if ok == nil || ok.TotalCount() != db.Succeeded || all.TotalCount() != db.Attempts {
		t.Fatalf("db: %d OK samples of %d attempt samples; want the %d succeeded of %d attempts", ok.TotalCount(), all.TotalCount(), db.Succeeded, db.Attempts)
	}
	if db.Rejected == 0 {
		t.Fatalf("db rejected nothing; the test needs refusals")
	}
	if lo := ok.ValueAtQuantile(0); lo < 3990 {
		t.Errorf("fastest OK attempt %d µs, want ≥ the 4 ms service time", lo)
	}
}
