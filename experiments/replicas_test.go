package experiments

import (
	"math"
	"testing"
	"time"
)

// TestGrayFailure: one db replica of five is 50 ms slower from t = 20 s
// to 50 s. The counts are Poisson: 400/s to the slow replica for 30 s is
// 12,000 calls, ±4.5√12000 ≈ ±490 a one-in-10⁵ miss.
func TestGrayFailure(t *testing.T) {
	res := runExperiment(t, "gray-failure", run{}, run{variant: "p2c"}, run{variant: "ejection"}, run{variant: "hedge-other-host"})
	rr, p2c, ej, hedge := res[0].Summary, res[1].Summary, res[2].Summary, res[3].Summary
	slowCalls := 400.0 * 30
	tol := 4.5 * math.Sqrt(slowCalls)
	// Round robin: every call to the slow replica in the fault times out,
	// but those already under way when it began (its queue needs ~0.2 s to
	// grow past the timeout: ≤ 80 calls).
	if u := float64(rr.Requests.Unknown); u < slowCalls-80-tol || u > slowCalls+tol {
		t.Errorf("round robin: %v unknown, want ≈ %v (the slow replica's share of the fault)", u, slowCalls)
	}
	// p2c: nothing lost, the slow replica's calls in the p99 (~52 ms),
	// far fewer calls to it than to the others.
	if p2c.Requests.Succeeded != p2c.Requests.Offered {
		t.Errorf("p2c: %+v, want every request to succeed", p2c.Requests)
	}
	if p := p2c.LatencyMs.P99; p < 50 || p > 60 {
		t.Errorf("p2c: p99 %.1f ms, want the slow replica's ~52 ms", p)
	}
	db := service(t, res[1], "db")
	if slow, other := db.Replicas[0].Attempts, db.Replicas[1].Attempts; float64(slow) > 0.7*float64(other) {
		t.Errorf("p2c: the slow replica got %d attempts, replica 1 %d; want it avoided", slow, other)
	}
	// Ejection: one ejection (30 s to the next 10 s tick outlasts the
	// fault), and only the calls before it are lost.
	if e := edge(t, res[2], "api", "db").Ejections; e != 1 {
		t.Errorf("ejection: %d ejections, want 1", e)
	}
	if u := ej.Requests.Unknown; u == 0 || float64(u) > 0.02*slowCalls {
		t.Errorf("ejection: %d unknown, want a few (the calls before five timeouts in a row), at most 2%% of %v", u, slowCalls)
	}
	// Hedging to another host: nothing lost, p99 near 10 ms + a healthy
	// replica's time, one hedge per slow call plus the healthy replicas'
	// own tail beyond 10 ms (e^-5 of all ~110,000 calls, ~740).
	if hedge.Requests.Succeeded != hedge.Requests.Offered {
		t.Errorf("hedge: %+v, want every request to succeed", hedge.Requests)
	}
	if p := hedge.LatencyMs.P99; p > 20 {
		t.Errorf("hedge: p99 %.1f ms, want under 20", p)
	}
	want := slowCalls + math.Exp(-5)*float64(hedge.Requests.Offered)
	if h := float64(edge(t, res[3], "api", "db").HedgesSent); math.Abs(h-want) > 4.5*math.Sqrt(want) {
		t.Errorf("hedge: %v hedges, want ≈ %.0f", h, want)
	}
}

// TestFleetBudgets: the same Envoy retry budget per instance binds for 10
// instances and not for 1,000 or 10,000, whose attempts per request in the
// outage match what unlimited retries give.
func TestFleetBudgets(t *testing.T) {
	res := runExperiment(t, "fleet-budgets", run{}, run{variant: "instances-1000"}, run{variant: "instances-10000"},
		run{sets: []string{"workload.client.budget.min_concurrency=1000000"}})
	amp := func(i int) float64 {
		return window(t, res[i], "attempts/api", 20*time.Second, 40*time.Second) / window(t, res[i], "offered", 20*time.Second, 40*time.Second)
	}
	ten, thousand, tenK, unlimited := amp(0), amp(1), amp(2), amp(3)
	t.Logf("attempts per request in the outage: 10 instances %.3f, 1,000 %.3f, 10,000 %.3f, no budget %.3f", ten, thousand, tenK, unlimited)
	if ten > 1.8 {
		t.Errorf("10 instances: %.2f attempts per request, want the budget to bind (< 1.8)", ten)
	}
	if edge(t, res[0], "client", "api").RetriesDenied == 0 {
		t.Error("10 instances: no retry denied by the budget")
	}
	for i, a := range []float64{thousand, tenK} {
		if math.Abs(a-unlimited) > 0.02*unlimited {
			t.Errorf("variant %d: %.3f attempts per request, want what no budget gives (%.3f)", i+1, a, unlimited)
		}
	}
	if d := edge(t, res[2], "client", "api").RetriesDenied; d != 0 {
		t.Errorf("10,000 instances: %d retries denied, want none", d)
	}
}

// TestZoneOutage: zone c's API and database replicas stop for 20 s at
// 600 requests/s, ~12,000 requests. The losses are Poisson counts: 4.5
// standard deviations (√count) is a one-in-10⁵ miss.
func TestZoneOutage(t *testing.T) {
	res := runExperiment(t, "zone-outage", run{}, run{variant: "zone-aware"}, run{variant: "zone-aware-ejection"})
	lost := func(i int) float64 {
		r := res[i].Summary.Requests
		return float64(r.Failed + r.Unknown)
	}
	outage := 600.0 * 20
	for i, want := range []float64{outage * 5 / 9, outage / 3} {
		if d := math.Abs(lost(i) - want); d > 4.5*math.Sqrt(want) {
			t.Errorf("run %d: %v requests lost, want %.0f ± %.0f", i, lost(i), want, 4.5*math.Sqrt(want))
		}
	}
	if l := lost(2); l != 0 {
		t.Errorf("zone-aware with ejection and another host: %v lost, want none", l)
	}
	if e := edge(t, res[2], "client", "api").Ejections; e < 1 {
		t.Errorf("zone-aware with ejection: %d ejections, want zone c's clients to eject its API replica", e)
	}
	// Before the outage blind round robin crosses zones on 2 calls in 3 and
	// pays 2 × 1 ms each time. The per-request latency's sd is ~2.2 ms, so
	// the mean of 15 s × 600 requests has a standard error of ~0.023 ms,
	// 0.033 for the difference of two runs: 4.5 of them is 0.15 ms.
	mean := func(i int) float64 {
		lat := window(t, res[i], "latency_mean_ms", 5*time.Second, 20*time.Second)
		return lat / 15
	}
	if d := mean(0) - mean(1); math.Abs(d-4.0/3) > 0.15 {
		t.Errorf("mean latency blind − zone-aware = %.3f ms, want 2/3 × 2 ms = 1.333", d)
	}
}
