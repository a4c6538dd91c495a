package plots

import (
	"math"
	"testing"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/metrics/metricstest"
)

// The interactive overlays of a comparison carry, per variant that ran and
// per column OverlayColumns lists, exactly the values the static overlay
// draws; a variant not run has no line; a variant without a series leaves
// the page to its static figures.
func TestCompareChartsCarryTheOverlaysValues(t *testing.T) {
	base, budget := metricstest.Storm(), metricstest.Storm()
	qi := budget.Series.Column("queue/orders")
	for _, row := range budget.Series.Rows {
		row[qi] /= 10
	}
	notRun := &metrics.Result{Summary: metrics.Summary{Scenario: "synthetic-storm", Status: metrics.StatusInterrupted}}
	c := &Comparison{Scenario: "synthetic-storm", Variants: []ComparedVariant{
		{Name: "baseline", Result: base}, {Name: "late", NotRun: true, Result: notRun}, {Name: "budget", Result: budget},
	}}
	cc := compareChartsOf(c, []string{"#000001", "#000002", "#000003"})
	if cc == nil {
		t.Fatal("no charts for two variants with series")
	}
	want := OverlayColumns(map[string]*metrics.Result{"baseline": base, "budget": budget}, []string{"baseline", "budget"})
	if len(cc.Charts) != len(want) {
		t.Fatalf("%d charts, want one per overlay column (%d)", len(cc.Charts), len(want))
	}
	if len(cc.Variants) != 2 || cc.Variants[0].Name != "baseline" || cc.Variants[1].Name != "budget" || cc.Variants[1].Color != "#000003" {
		t.Fatalf("variants %+v: want baseline and budget in their columns' colours, not the one not run", cc.Variants)
	}
	for i, col := range want {
		if cc.Charts[i].ID != col.Name || cc.Charts[i].Unit != col.Label {
			t.Errorf("chart %d = %+v, want %+v", i, cc.Charts[i], col)
		}
		for k, r := range []*metrics.Result{base, budget} {
			ys, err := columnValues(r.Series, col.Column)
			if err != nil {
				t.Fatal(err)
			}
			got := cc.Variants[k].Values[col.Name]
			if len(got) != len(ys) {
				t.Fatalf("%s of %s: %d values, want %d", col.Name, cc.Variants[k].Name, len(got), len(ys))
			}
			for j := range ys {
				if g := float64(got[j]); g != ys[j] && !(math.IsNaN(g) && math.IsNaN(ys[j])) {
					t.Fatalf("%s of %s at %d = %v, want %v", col.Name, cc.Variants[k].Name, j, g, ys[j])
				}
			}
		}
	}
	if !cc.charted("queue_orders") || cc.charted("latency_cdf") {
		t.Error("charted: queue_orders is drawn, latency_cdf is not")
	}
	c.Variants[2].Result = &metrics.Result{Summary: budget.Summary}
	if compareChartsOf(c, []string{"a", "b", "c"}) != nil {
		t.Error("a variant without a series: want the static figures only")
	}
}
