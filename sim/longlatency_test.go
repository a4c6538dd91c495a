package sim_test

import (
	"context"
	"math"
	"testing"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/sim"
	"github.com/stormsim/stormsim/topology"
)

// TestLatencyBeyondAnHour: one request served in 7,200.5 s. The summary's
// mean and max are exact, and its quantiles within the histogram's 3
// significant digits of the truth: no range caps them at 1 h (which read
// mean 3,599.8 s, max 3,600.8 s).
func TestLatencyBeyondAnHour(t *testing.T) {
	res := runYAML(t, "long.yaml", `
name: long
seed: 1
duration: 1s
limits: {max_drain: 3h}
workload:
  entry: db
  arrival: constant
  rate: 1
  deadline: 3h
  client: {timeout: 3h}
services:
  - name: db
    workers: 1
    service_time: {dist: constant, value: 7200.5s}
`)
	const want = 7200.5e3 // ms
	l := res.Summary.LatencyMs
	if res.Summary.Requests.Succeeded != 1 {
		t.Fatalf("succeeded %d, want 1", res.Summary.Requests.Succeeded)
	}
	if l.Mean != want || l.Max != want {
		t.Errorf("mean %v ms, max %v ms; want both exactly %v", l.Mean, l.Max, want)
	}
	for name, q := range map[string]float64{"p50": l.P50, "p99": l.P99, "p999": l.P999} {
		if math.Abs(q-want) > want*1e-3 {
			t.Errorf("%s = %v ms, want %v within 0.1 %%", name, q, want)
		}
	}
	db := res.Summary.Services[0].LatencyMs
	if db.Mean != want || db.Max != want {
		t.Errorf("db attempt latency mean %v, max %v; want exactly %v", db.Mean, db.Max, want)
	}
}

// TestSeriesCountsTheLastCompletion: constant arrivals at 1/s for 10 s,
// each served in exactly 1 s by one worker: the tenth request completes at
// t = 10 s, exactly on an interval boundary and at the end of the run. The
// series must count it (the summary says 10 succeeded), and its rows'
// goodput is each interval's successes over the interval's length, the
// last one's included.
func TestSeriesCountsTheLastCompletion(t *testing.T) {
	res := runYAML(t, "edge.yaml", `
name: edge
seed: 1
duration: 10s
workload:
  entry: api
  arrival: constant
  rate: 1
  deadline: 5s
services:
  - {name: api, workers: 1, service_time: {dist: constant, value: 1s}}
`)
	ts := res.Series
	var sum float64
	for i, v := range ts.Values("succeeded") {
		sum += v
		if g := ts.Values("goodput")[i]; g != v/ts.Interval.Seconds() {
			t.Errorf("row %d: goodput %v, want %v successes over the %v interval", i, g, v, ts.Interval)
		}
	}
	if want := float64(res.Summary.Requests.Succeeded); sum != want || want != 10 {
		t.Errorf("series counts %v successes, summary %v; want 10 in both", sum, want)
	}
}

// TestLatencyOfLostRequests: the headline latency is over succeeded
// requests only; the summary also gives how long the failed and the
// unknown ones took, so a fast failure is not mistaken for a healthy run.
// Every request of "fail" fails after its 5 ms of service; every request of
// "slow" ends unknown when its 1 s deadline passes.
func TestLatencyOfLostRequests(t *testing.T) {
	for _, tt := range []struct {
		name, service string
		failed        bool
		wantMs        float64
	}{
		{"fail", "{name: api, workers: 8, error_rate: 1, service_time: {dist: constant, value: 5ms}}", true, 5},
		{"slow", "{name: api, workers: 8, service_time: {dist: constant, value: 2s}}", false, 1000},
	} {
		res := runYAML(t, tt.name+".yaml", `
name: lost
seed: 1
duration: 2s
workload:
  entry: api
  arrival: constant
  rate: 2
  deadline: 1s
services:
  - `+tt.service+`
`)
		s := res.Summary
		got, n := s.LatencyUnknownMs, s.Requests.Unknown
		if tt.failed {
			got, n = s.LatencyFailedMs, s.Requests.Failed
		}
		if n != s.Requests.Offered || got == nil {
			t.Fatalf("%s: %+v, latency %v: want every request lost and its latency reported", tt.name, s.Requests, got)
		}
		if got.Count != n || got.Mean != tt.wantMs || got.Max != tt.wantMs {
			t.Errorf("%s: lost latency %+v, want %d requests of exactly %v ms", tt.name, *got, n, tt.wantMs)
		}
	}
}

// runYAML simulates the scenario in y, named name.
func runYAML(t *testing.T, name, y string) *metrics.Result {
	t.Helper()
	sc, err := topology.Parse(name, []byte(y), nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(context.Background(), sc, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return res
}
