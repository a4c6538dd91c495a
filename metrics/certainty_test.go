package metrics_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stormsim/stormsim/internal/golden"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/metrics/metricstest"
)

// A run that follows its writes after UNKNOWN prints the certainty block
// and the per-service query load, in text and JSON alike.
func TestCertaintyGolden(t *testing.T) {
	r := metricstest.Converging()
	var text, js bytes.Buffer
	if err := metrics.FormatText(&text, &r.Summary); err != nil {
		t.Fatal(err)
	}
	if err := metrics.WriteJSON(&js, &r.Summary); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "testdata/summary-certainty.golden.txt", text.Bytes())
	golden.Check(t, "testdata/summary-certainty.golden.json", js.Bytes())
}

// The certainty block is there exactly when Summary.Certainty is, and
// says what the contract's counts say.
func TestFormatTextCertainty(t *testing.T) {
	c := &metrics.Certainty{Intents: 200, MeanMs: 812, P50Ms: 9.5, P99Ms: 4200, MaxMs: 9100,
		ResolvedBy: metrics.ResolvedBy{Reply: 150, Query: 30, Recovery: 5, Reconciliation: 5, Manual: 6, Never: 4},
		Alerts:     11, UnknownMax: 17, ManualQueueMax: 6, ManualQueueEnd: 5, Queries: 90, QueriesPerIntent: 2.25,
		Reconciliation: &metrics.Reconciliation{Runs: 6, Items: 20, Repaired: 5, Rerepaired: 1, ToManual: 6}}
	for _, tc := range []struct {
		name    string
		c       *metrics.Certainty
		queries int64
		want    []string // lines (words single-spaced) the text must hold
		not     []string // substrings it must not
	}{
		{"no convergence", nil, 0, nil, []string{"certainty", "resolved by", "query load"}},
		{"converging", c, 90, []string{
			"certainty 200 intents: time to certainty mean 812 p50 9.50 p99 4200 max 9100 (ms from the first attempt, over the 190 that became certain)",
			"resolved by reply 150 (75.0%) query 30 (15.0%) recovery 5 (2.5%) reconciliation 5 (2.5%) manual 6 (3.0%) never 4 (2.0%)",
			"alerts 11 (unknown past alert_after) unknown at most 17 at once manual queue max 6, 5 at the end",
			"queries 90, 2.25 per intent that queried",
			"reconciliation 6 runs: 20 items, 5 repaired (1 REPAIRED TWICE: a second run must repair nothing), 0 fact queries failed, 6 to manual",
			"query load db 90 status queries (6.4% of its 1400 attempts)",
		}, []string{"recovery tasks", "resubmits"}},
		{"nothing certain", &metrics.Certainty{Intents: 3, ResolvedBy: metrics.ResolvedBy{Never: 3}}, 0,
			[]string{"certainty 3 intents: time to certainty - (none became certain)", "resolved by reply 0 (0.0%) query 0 (0.0%) recovery 0 (0.0%) reconciliation 0 (0.0%) manual 0 (0.0%) never 3 (100.0%)"},
			[]string{"query load"}},
	} {
		s := &metrics.Summary{Scenario: "s", Requests: metrics.Requests{Offered: 200}, Certainty: tc.c,
			Services: []metrics.ServiceSummary{{Name: "api", Attempts: 300}, {Name: "db", Attempts: 1400, Queries: tc.queries}}}
		var b bytes.Buffer
		if err := metrics.FormatText(&b, s); err != nil {
			t.Fatal(err)
		}
		lines := map[string]bool{}
		for _, l := range strings.Split(b.String(), "\n") {
			lines[strings.Join(strings.Fields(l), " ")] = true
		}
		for _, w := range tc.want {
			if !lines[w] {
				t.Errorf("%s: no line %q in\n%s", tc.name, w, b.String())
			}
		}
		for _, n := range tc.not {
			if strings.Contains(b.String(), n) {
				t.Errorf("%s: %q in\n%s", tc.name, n, b.String())
			}
		}
	}
}
