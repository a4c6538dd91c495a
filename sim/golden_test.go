package sim

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stormsim/stormsim/internal/golden"
	"github.com/stormsim/stormsim/policies"
	"github.com/stormsim/stormsim/topology"
)

// goldenScenario exercises most of the model at once: network delays,
// retries with jitter, deadlines, a bounded queue, a breaker, a budget,
// hedging, writes with idempotency keys and a fault.
func goldenScenario() *topology.Scenario {
	net := exp(500 * time.Microsecond)
	retry := policies.RetryConfig{MaxAttempts: 3, Backoff: policies.BackoffConfig{Initial: 5 * time.Millisecond, Jitter: "full"}}
	return &topology.Scenario{
		Name: "golden", Seed: 42, Duration: 4 * time.Second, Warmup: time.Second, Interval: time.Second,
		Workload: topology.Workload{Entry: "api", Rate: 300, Deadline: 300 * time.Millisecond, WriteFraction: 0.2, IdempotencyKeys: true,
			Client: topology.Call{Timeout: 100 * time.Millisecond, Retry: retry, Network: &net, PropagateDeadline: true}},
		Services: []topology.Service{
			{Name: "api", Workers: 16, Queue: intp(50), ServiceTime: exp(time.Millisecond), Calls: []topology.Call{
				{To: "cache", Timeout: 10 * time.Millisecond, Hedge: &policies.HedgeConfig{Delay: 3 * time.Millisecond}},
				{To: "db", Timeout: 40 * time.Millisecond, Retry: retry, PropagateDeadline: true,
					Budget:  &policies.BudgetConfig{Kind: "token_bucket"},
					Breaker: &policies.BreakerConfig{Kind: "consecutive", Failures: 10, OpenFor: 200 * time.Millisecond}},
			}},
			{Name: "cache", Workers: 8, ServiceTime: topology.Dist{Dist: "lognormal", P50: time.Millisecond, P99: 8 * time.Millisecond}, CancelOnTimeout: true},
			{Name: "db", Workers: 4, Queue: intp(20), ServiceTime: exp(3 * time.Millisecond), ErrorRate: 0.02, RejectExpired: true, Commits: true},
		},
		Faults: []topology.Fault{{Service: "db", At: 2 * time.Second, For: 500 * time.Millisecond, Capacity: fp(0.25)}},
	}
}

// TestGoldenSummary pins the exact output of a seeded run, so any change
// in behaviour, draw order or accounting shows up as a diff. Run with
// -update after an intended change, and review the diff.
func TestGoldenSummary(t *testing.T) {
	checkGolden(t, "golden_summary.json", "  ", runScenario(t, goldenScenario()).Summary)
}

// TestGoldenSeries pins the time series of the same run — per-interval
// counts, latency quantiles, queue and utilization integrals, breaker and
// budget levels — as TestGoldenSummary pins its summary.
func TestGoldenSeries(t *testing.T) {
	checkGolden(t, "golden_series.json", " ", runScenario(t, goldenScenario()).Series)
}

// checkGolden compares v, as indented JSON, with testdata/name, first
// rewriting the file under -update.
func checkGolden(t *testing.T, name, indent string, v any) {
	t.Helper()
	got, err := json.MarshalIndent(v, "", indent)
	require.NoError(t, err)
	got = append(got, '\n')
	golden.Check(t, filepath.Join("testdata", name), got)
}
