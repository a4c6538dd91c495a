package tune

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stormsim/stormsim/analysis"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/topology"
)

// chainPlan recommends for testdata/chain.yaml from its own sampled latency.
func chainPlan(t *testing.T, deadline time.Duration) *Plan {
	t.Helper()
	hops, err := ParseHops([]string{
		"gateway=scenario:testdata/chain.yaml",
		"orders=scenario:testdata/chain.yaml",
		"db=scenario:testdata/chain.yaml",
	}, LoadOptions{ScenarioSamples: 5000})
	if err != nil {
		t.Fatal(err)
	}
	p, err := Recommend(hops, Options{Deadline: deadline})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestVerifyAppliesPlan checks, with a fake simulator, that the tuned run
// gets exactly the recommended policies and the baseline keeps the
// scenario's own.
func TestVerifyAppliesPlan(t *testing.T) {
	sc, err := topology.Load("testdata/chain.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	p := chainPlan(t, time.Second)
	var seen []*topology.Scenario
	fake := analysis.RunnerFunc(func(_ context.Context, sc *topology.Scenario) (*metrics.Result, error) {
		seen = append(seen, sc)
		return &metrics.Result{Summary: metrics.Summary{Scenario: sc.Name, Seed: sc.Seed, Services: []metrics.ServiceSummary{
			{Name: "db", Attempts: 1000, TimedOut: int64(len(seen))},
		}}}, nil
	})
	c, err := Verify(context.Background(), sc, p, fake)
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 {
		t.Fatalf("%d runs", len(seen))
	}
	base, tuned := seen[0], seen[1]
	if base.Workload.Deadline != time.Second || tuned.Workload.Deadline != time.Second {
		t.Errorf("deadlines %v, %v", base.Workload.Deadline, tuned.Workload.Deadline)
	}
	if got := base.Service("orders").Calls[0].Timeout; got != 300*time.Millisecond {
		t.Errorf("baseline orders->db timeout %v, want the scenario's 300ms", got)
	}
	round := func(d time.Duration) time.Duration { return d.Round(time.Microsecond) }
	if got, want := tuned.Workload.Client.Timeout, round(p.Hops[0].Timeout); got != want {
		t.Errorf("client timeout %v, want %v", got, want)
	}
	call := tuned.Service("orders").Calls[0]
	if call.Timeout != round(p.Hops[2].Timeout) || call.Retry.MaxAttempts != p.Hops[2].Attempts || !call.PropagateDeadline {
		t.Errorf("orders->db call %+v, want timeout %v, %d attempts, propagated deadline", call, p.Hops[2].Timeout, p.Hops[2].Attempts)
	}
	if p.Owner == 2 && (call.Budget == nil || call.Budget.Ratio != 0.2) {
		t.Errorf("owner's budget %+v, want ratio 0.2", call.Budget)
	}
	if g := tuned.Service("gateway").Calls[0]; g.Retry.MaxAttempts != 1 || g.Timeout != round(p.Hops[1].Timeout) {
		t.Errorf("gateway->orders %+v", g)
	}
	var b bytes.Buffer
	if err := c.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"baseline", "tuned", "spurious timeouts (edge timeouts)", "db timeout rate"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("comparison lacks %q:\n%s", want, b.String())
		}
	}
}

func TestCheckChain(t *testing.T) {
	sc, err := topology.Load("testdata/chain.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	p := chainPlan(t, time.Second)
	p.Hops[1], p.Hops[2] = p.Hops[2], p.Hops[1]
	if err := CheckChain(sc, p); err == nil || !strings.Contains(err.Error(), `service "gateway" of scenario "tune-chain" makes no call to "db"`) {
		t.Errorf("got %v", err)
	}
	p.Hops = p.Hops[1:]
	if err := CheckChain(sc, p); err == nil || !strings.Contains(err.Error(), `is not the scenario's entry "gateway"`) {
		t.Errorf("got %v", err)
	}
}

// summary is a run of 10,000 requests over 20 s with the given successes,
// and db's attempts and timeouts.
func summary(succeeded, dbAttempts, dbTimedOut int64) metrics.Summary {
	return metrics.Summary{
		WindowS: 20, GoodputRPS: float64(succeeded) / 20,
		Requests: metrics.Requests{Offered: 10000, Succeeded: succeeded, Failed: 10000 - succeeded},
		Services: []metrics.ServiceSummary{{Name: "db", Attempts: dbAttempts, TimedOut: dbTimedOut}},
	}
}

// TestVerifyVerdict: a plan that lowers goodput beyond the runs' noise is
// not recommended, and the verdict names the hop whose timeouts the
// measured latency did not predict; one within the noise is not condemned.
func TestVerifyVerdict(t *testing.T) {
	bad := &Comparison{Scenario: "s", Hops: []string{"db"}, Predicted: []float64{0.001},
		Baseline: summary(9196, 12000, 30), Tuned: summary(7544, 15000, 10185)}
	v := bad.Verdict()
	if v.Recommended {
		t.Errorf("goodput 459.8 → 377.2 req/s: recommended, want not")
	}
	if want := "the plan lowers goodput 18%: not recommended"; v.Summary != want {
		t.Errorf("verdict %q, want %q", v.Summary, want)
	}
	why := strings.Join(v.Reasons, "\n")
	for _, want := range []string{"db", "67.9%", "0.10%"} {
		if !strings.Contains(why, want) {
			t.Errorf("reasons lack %q:\n%s", want, why)
		}
	}
	var b bytes.Buffer
	if err := bad.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "verdict: the plan lowers goodput 18%: not recommended") {
		t.Errorf("text lacks the verdict:\n%s", b.String())
	}
	j, err := bad.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(j), `"verdict":{"recommended":false,"summary":"the plan lowers goodput 18%: not recommended"`) {
		t.Errorf("JSON lacks the verdict: %s", j)
	}

	// 9,196 vs 9,150 successes: a difference of 46 against a noise sd of
	// √(9196+9150) ≈ 135 is no evidence the plan hurts.
	same := &Comparison{Scenario: "s", Hops: []string{"db"}, Predicted: []float64{0.001},
		Baseline: summary(9196, 12000, 30), Tuned: summary(9150, 12000, 14)}
	if v := same.Verdict(); !v.Recommended || strings.Contains(v.Summary, "lowers") {
		t.Errorf("goodput within noise: verdict %+v, want recommended", v)
	}
	better := &Comparison{Scenario: "s", Hops: []string{"db"}, Predicted: []float64{0.001},
		Baseline: summary(7544, 15000, 10185), Tuned: summary(9196, 12000, 12)}
	if v := better.Verdict(); !v.Recommended || !strings.Contains(v.Summary, "raises goodput 22%") {
		t.Errorf("goodput 377 → 460: verdict %+v, want recommended, raising goodput 22%%", v)
	}
}
