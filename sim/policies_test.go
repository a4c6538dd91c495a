package sim

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stormsim/stormsim/policies"
	"github.com/stormsim/stormsim/topology"
)

// These tests run the call policies inside the simulator and check them
// against published arithmetic (see /work/shared/REFERENCES.md), with
// tolerances of four binomial or sample standard deviations.

func flaky(errRate float64, attempts int, rate float64, d time.Duration) *topology.Scenario {
	return &topology.Scenario{
		Name: "flaky", Seed: 7, Duration: d, Interval: time.Second,
		Workload: topology.Workload{Entry: "s", Arrival: "constant", Rate: rate,
			Client: topology.Call{Retry: policies.RetryConfig{MaxAttempts: attempts, On: []policies.RetryClass{"error"}}}},
		Services: []topology.Service{{Name: "s", Workers: 1000, ServiceTime: constant(0), ErrorRate: errRate}},
	}
}

func TestIndependentFailuresBrooker(t *testing.T) {
	// f = 0.5 and 3 retries: success 1 − f⁴ = 93.75%, load (1 − f⁴)/(1 − f) = 1.875.
	const f, n = 0.5, 4
	res := runScenario(t, flaky(f, n, 1000, 20*time.Second))
	sum := res.Summary
	reqs := float64(sum.Requests.Offered)
	require.Equal(t, 20000.0, reqs)
	p := 1 - math.Pow(f, n)
	succ := float64(sum.Requests.Succeeded) / reqs
	require.InDelta(t, p, succ, 4*math.Sqrt(p*(1-p)/reqs))
	load := (1 - math.Pow(f, n)) / (1 - f)
	// Attempts per request K: P(K=k) = f^(k−1)(1−f) for k < 4, f³ for k = 4.
	ek2 := 0.0
	for k := 1; k <= n; k++ {
		pk := math.Pow(f, float64(k-1)) * (1 - f)
		if k == n {
			pk = math.Pow(f, n-1)
		}
		ek2 += float64(k*k) * pk
	}
	sd := math.Sqrt((ek2 - load*load) / reqs)
	require.InDelta(t, load, sum.Amplification, 4*sd)
}

func TestRetryBudgetCapsLoadSRE(t *testing.T) {
	// Three attempts on an always-failing backend triple the load; a budget
	// of retries ≤ 10% of requests caps it near 1.1× (Google SRE book).
	without := runScenario(t, flaky(1, 3, 100, 20*time.Second)).Summary
	require.Equal(t, 3.0, without.Amplification)

	sc := flaky(1, 3, 100, 20*time.Second)
	sc.Workload.Client.Budget = &policies.BudgetConfig{Kind: "ratio", Ratio: 0.1}
	r := runScenario(t, sc)
	with := r.Summary
	require.InDelta(t, 1.1, with.Amplification, 0.02)
	e := edgeOf(with, "client", "s")
	require.Positive(t, e.RetriesDenied)
	require.EqualValues(t, e.Attempts-e.Calls, e.Retries)
	require.Len(t, r.Series.Values("budget_level/client->s"), 20)
	require.Equal(t, -1, r.Series.Column("breaker_state/client->s"), "only edges with a breaker get the column")
}

func TestBreakerFailsFast(t *testing.T) {
	sc := flaky(1, 1, 100, 3*time.Second)
	sc.Workload.Client.Breaker = &policies.BreakerConfig{Kind: "consecutive", Failures: 5, OpenFor: time.Second}
	r := runScenario(t, sc)
	sum := r.Summary
	e := edgeOf(sum, "client", "s")
	require.Positive(t, e.BreakerOpens)
	require.EqualValues(t, 300, e.Calls)
	require.EqualValues(t, 300, e.Attempts+e.BreakerFastFail, "every call is sent or fails fast")
	require.Less(t, sum.Services[0].Attempts, int64(30), "an open breaker spares the backend")
	require.EqualValues(t, 300, sum.Requests.Failed, "fast fails are definite failures")
	states := r.Series.Values("breaker_state/client->s")
	require.Len(t, states, 3)
	require.Contains(t, states, float64(policies.Open))
}

func TestHedgingCutsTheTail(t *testing.T) {
	// 10% of calls take 100ms, the rest 1ms; a hedge after 10ms almost
	// always lands on a fast one.
	svc := topology.Dist{Dist: "mixture", Modes: []topology.Mode{
		{Weight: 0.9, Dist: constant(time.Millisecond)},
		{Weight: 0.1, Dist: constant(100 * time.Millisecond)},
	}}
	sc := &topology.Scenario{
		Name: "hedge", Seed: 3, Duration: 10 * time.Second, Interval: time.Second,
		Workload: topology.Workload{Entry: "s", Rate: 200},
		Services: []topology.Service{{Name: "s", Workers: 1000, ServiceTime: svc, CancelOnTimeout: true}},
	}
	plain := runScenario(t, sc).Summary
	require.InDelta(t, 100, plain.LatencyMs.P99, 1)

	sc.Workload.Client.Hedge = &policies.HedgeConfig{Delay: 10 * time.Millisecond, MaxAttempts: 2, CancelOthers: true}
	hedged := runScenario(t, sc).Summary
	// Slow only if both the original and the hedge are slow: 1% of calls.
	require.Less(t, hedged.LatencyMs.P90, 12.0)
	e := edgeOf(hedged, "client", "s")
	calls := float64(e.Calls)
	require.InDelta(t, 0.1*calls, float64(e.HedgesSent), 4*math.Sqrt(0.09*calls))
	require.InDelta(t, 0.9*float64(e.HedgesSent), float64(e.HedgesWon), 4*math.Sqrt(0.09*float64(e.HedgesSent)))
	require.InDelta(t, 1.1, hedged.Amplification, 0.02)

	sc.Workload.WriteFraction = 1
	writes := runScenario(t, sc).Summary
	require.Zero(t, edgeOf(writes, "client", "s").HedgesSent, "writes are not hedged unless forced")
}

func TestFanoutTailAtScale(t *testing.T) {
	// 1 call in 100 is slow; a request waiting for 100 calls is slow with
	// probability 1 − 0.99¹⁰⁰ ≈ 63% (Dean & Barroso).
	svc := topology.Dist{Dist: "mixture", Modes: []topology.Mode{
		{Weight: 0.99, Dist: constant(time.Millisecond)},
		{Weight: 0.01, Dist: constant(time.Second)},
	}}
	sc := &topology.Scenario{
		Name: "tail", Seed: 5, Duration: 20 * time.Second, Interval: time.Second,
		Workload: topology.Workload{Entry: "root", Arrival: "constant", Rate: 100},
		Services: []topology.Service{
			{Name: "root", Workers: 1000, ServiceTime: constant(0), Calls: []topology.Call{{To: "leaf", Fanout: 100}}},
			{Name: "leaf", Workers: 100000, ServiceTime: svc},
		},
	}
	r := runScenario(t, sc)
	n := float64(r.Summary.Requests.Succeeded)
	require.Equal(t, 2000.0, n)
	slow := 0.0
	for _, b := range r.Latency.Distribution() {
		if b.From >= int64(500*time.Millisecond/time.Microsecond) {
			slow += float64(b.Count)
		}
	}
	p := 1 - math.Pow(0.99, 100)
	require.InDelta(t, p, slow/n, 4*math.Sqrt(p*(1-p)/n))
}

func TestPushbackAndShedding(t *testing.T) {
	scenario := func(honor bool) *topology.Scenario {
		return &topology.Scenario{
			Name: "pushback", Seed: 1, Duration: 2 * time.Second, Interval: time.Second,
			Workload: topology.Workload{Entry: "s", Arrival: "constant", Rate: 200,
				Client: topology.Call{HonorPushback: honor, Retry: policies.RetryConfig{MaxAttempts: 2}}},
			Services: []topology.Service{{Name: "s", Workers: 1, Queue: intp(5), ServiceTime: constant(10 * time.Millisecond),
				Overload: policies.OverloadConfig{MaxQueueTime: 30 * time.Millisecond,
					Pushback: &policies.PushbackConfig{RetryAfter: 100 * time.Millisecond}}}},
		}
	}
	honored := runScenario(t, scenario(true))
	s := honored.Summary.Services[0]
	require.Positive(t, s.Shed, "waits over 30ms are shed")
	require.Positive(t, s.Rejected)
	require.GreaterOrEqual(t, s.Rejected, s.Shed, "shed attempts are rejections too")
	e := edgeOf(honored.Summary, "client", "s")
	require.Positive(t, e.PushbackWaits)
	require.Positive(t, sumOf(honored.Series.Values("shed/s")))

	ignored := runScenario(t, scenario(false)).Summary
	require.Zero(t, edgeOf(ignored, "client", "s").PushbackWaits)
}

func sumOf(xs []float64) float64 {
	t := 0.0
	for _, x := range xs {
		t += x
	}
	return t
}
