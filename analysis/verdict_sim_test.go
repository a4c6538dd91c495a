package analysis_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stormsim/stormsim/analysis"
	"github.com/stormsim/stormsim/experiments"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/topology"
)

// experiment parses one of the canned experiments and its builder.
func experiment(t *testing.T, name string) (*topology.Scenario, analysis.Builder) {
	t.Helper()
	data, ok := experiments.Lookup(name)
	if !ok {
		t.Fatalf("no experiment %s", name)
	}
	parse := func(path string, sets []string) (*topology.Scenario, error) {
		return topology.Parse(name+".yaml", data, sets)
	}
	sc, err := parse("", nil)
	if err != nil {
		t.Fatal(err)
	}
	return sc, analysis.ScenarioBuilder(sc, parse)
}

// TestCompareVerdicts (issue 36 item 3): retry-storm's baseline stays
// collapsed and its budget variant recovers; the comparison says so per
// variant in its table, its JSON and each variant's summary verdict, with
// the reason the result shows: db's queue wait beyond orders' timeout.
func TestCompareVerdicts(t *testing.T) {
	sc, b := experiment(t, "retry-storm")
	vs, err := analysis.Variants(sc.Variants, []analysis.Variant{{Name: "capped", Sets: []string{"limits.max_events=20000"}}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := analysis.Compare(context.Background(), simRunner, b, vs, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"baseline": metrics.OutcomeNotRecovered, "budget-10pct": metrics.OutcomeRecovered, "capped": metrics.OutcomeDiverged}
	for _, col := range c.Columns {
		v := col.Result.Summary.Verdict
		if v == nil {
			t.Fatalf("%s: no verdict in its summary", col.Variant.Name)
		}
		if w, ok := want[col.Variant.Name]; ok && v.Outcome != w {
			t.Errorf("%s: outcome %q, want %q (%s)", col.Variant.Name, v.Outcome, w, v.Headline())
		}
		if col.Measures.Verdict != metrics.OutcomeText(&col.Result.Summary) {
			t.Errorf("%s: table verdict %q, summary's %q", col.Variant.Name, col.Measures.Verdict, metrics.OutcomeText(&col.Result.Summary))
		}
	}
	base := c.Columns[0].Result.Summary.Verdict
	if !strings.Contains(base.Reason, "db's queue wait") || !strings.Contains(base.Reason, "orders' 80ms timeout") {
		t.Errorf("baseline reason %q, want db's queue wait beyond orders' 80ms timeout", base.Reason)
	}
	if got := c.Columns[1].Result.Summary.Verdict.Reason; got != "" {
		t.Errorf("a recovered variant has a reason for not recovering: %q", got)
	}

	var table bytes.Buffer
	if err := c.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(table.String(), "\n")
	var row string
	for _, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "verdict") {
			row = l
		}
	}
	for _, w := range []string{"not recovered", "recovered in ", "diverged at "} {
		if !strings.Contains(row, w) {
			t.Errorf("verdict row %q lacks %q", row, w)
		}
	}
	if !strings.Contains(table.String(), "baseline not recovered: db's queue wait") {
		t.Errorf("table lacks the baseline's reason:\n%s", table.String())
	}

	var js bytes.Buffer
	if err := c.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var got analysis.ComparisonJSON
	if err := json.Unmarshal(js.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Variants) != len(c.Columns) {
		t.Fatalf("%d variants in the JSON, %d columns", len(got.Variants), len(c.Columns))
	}
	for i, v := range got.Variants {
		col := c.Columns[i]
		if v.Name != col.Variant.Name || v.Verdict != col.Measures.Verdict || v.Outcome != col.Result.Summary.Verdict.Outcome || v.Reason != col.Measures.Reason {
			t.Errorf("JSON variant %+v does not match column %s (%q, %q)", v, col.Variant.Name, col.Measures.Verdict, col.Measures.Reason)
		}
	}
	// The summary's JSON carries the verdict's new fields.
	var sum bytes.Buffer
	if err := metrics.WriteJSON(&sum, &c.Columns[0].Result.Summary); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"outcome": "not recovered"`, `"reason": "db's queue wait`} {
		if !strings.Contains(sum.String(), k) {
			t.Errorf("summary.json lacks %s", k)
		}
	}
}
