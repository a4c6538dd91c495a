package serve

import (
	"context"
	"testing"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/sim"
)

// replicaScenario runs three api replicas (round robin from a fleet of
// three client instances) calling four db replicas, one of them broken
// (every attempt there fails with an error after its 2 ms of work). Each
// api replica's edge ejects it at its third failure in a row and retries
// on another host, so no request fails; it comes back at the tick of 1s
// at or after 2s later, past the 2.5s window, so each of the three edges
// ejects exactly once and the broken replica fails exactly 3 × 3 attempts.
// The healthy replicas queue rather than refuse, so a stalled machine
// cannot fail a request either.
const replicaScenario = `
name: replicas
seed: 5
duration: 2500ms
workload:
  entry: api
  arrival: constant
  rate: 200
  instances: 3
  client:
    timeout: 2s
    balance: round_robin
services:
  - name: api
    replicas: 3
    workers: 64
    queue: 100
    service_time: {dist: constant, value: 1ms}
    calls:
      - to: db
        timeout: 1s
        balance: round_robin
        retry: {max_attempts: 2, on: [error], other_host: true}
        outlier_detection: {consecutive_failures: 3, interval: 1s, base_ejection_time: 2s}
  - name: db
    replicas: 4
    workers: 8
    queue: 100
    service_time: {dist: constant, value: 2ms}
faults:
  - {service: db, replica: 1, at: 0s, for: 3s, error_rate: 1}
`

func TestReplicasThroughServe(t *testing.T) {
	sc := parseScenario(t, replicaScenario)
	simRes, err := sim.Run(context.Background(), sc, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var ready *Cluster
	res := runInMemory(t, sc, ScenarioOptions{Ready: func(c *Cluster) { ready = c }})
	if n := len(ready.ReplicaURLs["db"]); n != 4 {
		t.Fatalf("db listens on %d URLs, want one per replica (4)", n)
	}
	for name, s := range map[string]metrics.Summary{"sim": simRes.Summary, "serve": res.Summary} {
		if s.Requests.Failed != 0 || s.Requests.Unknown != 0 {
			t.Errorf("%s: %d failed, %d unknown; want none (ejection and retry to another host)", name, s.Requests.Failed, s.Requests.Unknown)
		}
		if got := s.Edges[0].Calls; got != s.Requests.Offered {
			t.Errorf("%s: the fleet's client edge made %d calls, want one per request (%d)", name, got, s.Requests.Offered)
		}
		api, db := s.Services[0], s.Services[1]
		if len(api.Replicas) != 3 || len(db.Replicas) != 4 {
			t.Fatalf("%s: %d api and %d db replica rows, want 3 and 4", name, len(api.Replicas), len(db.Replicas))
		}
		// Three client instances, each dealing its requests round robin.
		for _, r := range api.Replicas {
			if d := float64(r.Attempts) - float64(api.Attempts)/3; d > 3 || d < -3 {
				t.Errorf("%s: api replica %d got %d of %d attempts, want a third ±3", name, r.Replica, r.Attempts, api.Attempts)
			}
		}
		// Exactly 9 in both, on serve's scripted clock (runInMemory) as in
		// the simulator: no stall bunches the arrivals, so no attempt is
		// on its way to the broken replica when the third failure ejects
		// it; round robin without ejection would send it ~125 (a quarter
		// of the 500 calls).
		if got := db.Replicas[1].Failed; got != 9 {
			t.Errorf("%s: the broken db replica failed %d attempts, want 3 per api replica (9)", name, got)
		}
		var ej int64
		for _, e := range s.Edges {
			if e.From == "api" {
				ej += e.Ejections
			}
		}
		t.Logf("%s: %d requests, api replicas %+v, broken db replica failed %d, %d ejections", name, s.Requests.Offered, api.Replicas, db.Replicas[1].Failed, ej)
		if ej != 3 {
			t.Errorf("%s: %d ejections, want one per api replica (3)", name, ej)
		}
	}
}

// TestZoneAwareThroughServe: with zone_aware each api replica calls only
// the db replica in its zone, in serve as in the simulator.
func TestZoneAwareThroughServe(t *testing.T) {
	sc := parseScenario(t, `
name: zones
duration: 1s
workload:
  entry: api
  arrival: constant
  rate: 100
  client: {timeout: 2s}
services:
  - name: api
    replicas: 2
    zones: [a, b]
    workers: 16
    service_time: {dist: constant, value: 1ms}
    calls: [{to: db, timeout: 1s, zone_aware: true}]
  - name: db
    replicas: 2
    zones: [a, b]
    workers: 16
    service_time: {dist: constant, value: 1ms}
`)
	res := runInMemory(t, sc, ScenarioOptions{})
	api, db := res.Summary.Services[0], res.Summary.Services[1]
	// The series has each replica's columns, as the simulator's.
	for _, c := range []string{"replica_attempts/db#0", "replica_utilization/db#1", "replica_queue/api#1"} {
		if res.Series.Column(c) < 0 {
			t.Errorf("series lacks %s", c)
		}
	}
	for r := range 2 {
		if api.Replicas[r].Attempts == 0 || api.Replicas[r].Attempts != db.Replicas[r].Attempts {
			t.Errorf("api replica %d made %d calls, db replica %d got %d; want them equal (zone-local)", r, api.Replicas[r].Attempts, r, db.Replicas[r].Attempts)
		}
	}
}
