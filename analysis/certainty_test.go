package analysis

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stormsim/stormsim/internal/golden"
	"github.com/stormsim/stormsim/metrics/metricstest"
)

// certaintyComparison is a baseline that polls without jitter against a
// variant with a jittered, capped schedule, and one without convergence.
func certaintyComparison() *Comparison {
	base := metricstest.Converging()
	jittered := metricstest.Converging()
	c := *jittered.Summary.Certainty
	c.P99Ms, c.MaxMs, c.Queries, c.Alerts = 2400, 5100, 1200, 20
	c.ResolvedBy.Query += c.ResolvedBy.Never
	c.ResolvedBy.Never = 0
	jittered.Summary.Certainty = &c
	cols := []Column{{Variant: Variant{Name: Baseline}, Result: base}, {Variant: Variant{Name: "jitter", Sets: []string{"workload.query.jitter=full"}}, Result: jittered},
		{Variant: Variant{Name: "plain", Sets: []string{"workload.query=off"}}, Result: metricstest.Storm()}}
	return syntheticComparison(cols)
}

// syntheticComparison is a comparison of the synthetic storm's columns,
// each measured from its result.
func syntheticComparison(cols []Column) *Comparison {
	for i := range cols {
		cols[i].Measures = MeasuresOf(cols[i].Result)
	}
	return &Comparison{Scenario: "synthetic-storm", Seed: 1, Columns: cols}
}

func TestCompareCertaintyGolden(t *testing.T) {
	c := certaintyComparison()
	var b bytes.Buffer
	if err := c.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"p99 to certainty (ms)", "unresolved, manual or never",
		"jitter certainty vs baseline: p99 to certainty 3.97× lower (9519 → 2400 ms); unresolved (manual or never) 1.45× lower (1.1% → 0.7%); alerts 10.8× fewer (215 → 20); status queries 3.30× fewer (3964 → 1200)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "plain certainty") {
		t.Errorf("a variant without convergence is compared on it:\n%s", out)
	}
	golden.Check(t, "testdata/compare-certainty.txt", b.Bytes())

	var js bytes.Buffer
	if err := c.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var got ComparisonJSON
	if err := json.Unmarshal(js.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if v := got.Variants; v[0].Certainty == nil || v[0].CertaintyVersus != "" || v[1].Certainty == nil || v[1].Certainty.P99Ms != 2400 ||
		!strings.HasPrefix(v[1].CertaintyVersus, "p99 to certainty 3.97× lower") || v[2].Certainty != nil {
		t.Errorf("compare JSON certainty: %+v", v)
	}
}

// Without convergence in any column, the table has no certainty line.
func TestCompareWithoutCertainty(t *testing.T) {
	c := testCompare(t)
	var b bytes.Buffer
	if err := c.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "certainty") {
		t.Errorf("certainty in a comparison without convergence:\n%s", b.String())
	}
	var js bytes.Buffer
	if err := c.WriteJSON(&js); err != nil || strings.Contains(js.String(), "certainty") {
		t.Errorf("certainty in its JSON (err %v)", err)
	}
}
