package sim

import (
	"context"
	"fmt"
	"testing"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/topology"
)

// TestPresetExplicitZeroRuns: a budget key written as 0 beside a preset is
// what the simulation runs with. Finagle's budget (ratio 0.2, 10 retries/s
// of minimum) over an always-failing callee at 5 requests/s: with the
// preset's minimum every call gets its 2 retries (2·5 ≤ 0.2·5 + 10 per
// second); with min_per_sec: 0 retries are at most 0.2 of the requests in
// the window, so at most 0.2/0.9 of the calls (the window is 9 to 10 of
// its 10 buckets long).
func TestPresetExplicitZeroRuns(t *testing.T) {
	run := func(budget string) metrics.EdgeSummary {
		t.Helper()
		doc := fmt.Sprintf(`
name: finagle-zero
duration: 20s
workload: {entry: a, arrival: constant, rate: 5}
services:
  - name: a
    workers: 10
    service_time: {dist: constant, value: 1ms}
    calls:
      - {to: b, retry: {max_attempts: 3, on: [error]}, budget: %s}
  - {name: b, workers: 10, error_rate: 1, service_time: {dist: constant, value: 1ms}}
`, budget)
		sc, err := topology.Parse("finagle-zero.yaml", []byte(doc), nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Run(context.Background(), sc, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range res.Summary.Edges {
			if e.From == "a" && e.To == "b" {
				return e
			}
		}
		t.Fatal("no edge a->b")
		return metrics.EdgeSummary{}
	}
	preset := run("{preset: finagle}")
	if preset.Calls < 90 || preset.Retries != 2*preset.Calls {
		t.Errorf("finagle preset: %d retries for %d calls, want every call's 2", preset.Retries, preset.Calls)
	}
	zero := run("{preset: finagle, min_per_sec: 0}")
	t.Logf("preset: %d retries / %d calls; min_per_sec 0: %d retries (%d denied) / %d calls",
		preset.Retries, preset.Calls, zero.Retries, zero.RetriesDenied, zero.Calls)
	if limit := float64(zero.Calls) * 0.2 / 0.9; float64(zero.Retries) > limit+1 || zero.RetriesDenied == 0 {
		t.Errorf("finagle with min_per_sec: 0: %d retries (%d denied) for %d calls, want at most %.1f",
			zero.Retries, zero.RetriesDenied, zero.Calls, limit)
	}
}
