package analysis

import (
	"context"
	"math"
	"reflect"
	"testing"

	"gonum.org/v1/plot/plotter"
)

func TestNumericValues(t *testing.T) {
	tests := []struct {
		in      []string
		want    []float64
		numeric bool
	}{
		{[]string{"100", "2.5e2"}, []float64{100, 250}, true},
		{[]string{"50ms", "1s"}, []float64{0.05, 1}, true},
		{[]string{"fifo", "lifo", "adaptive_lifo"}, []float64{0, 1, 2}, false},
		{[]string{"1", "x"}, []float64{0, 1}, false},
	}
	for _, tt := range tests {
		got, numeric := NumericValues(tt.in)
		if !reflect.DeepEqual(got, tt.want) || numeric != tt.numeric {
			t.Errorf("NumericValues(%q) = %v, %v; want %v, %v", tt.in, got, numeric, tt.want, tt.numeric)
		}
	}
}

func TestSweepPlot(t *testing.T) {
	rows, err := RunSweep(context.Background(), fakeRunner, fakeBuild, testSweep(), SweepOptions{})
	if err != nil {
		t.Fatal(err)
	}
	aggs := AggregateRows(rows)
	p, err := SweepPlot(aggs, "goodput_rps", testSweep().Values)
	if err != nil {
		t.Fatal(err)
	}
	// The y range must cover every mean and confidence bound drawn.
	for _, a := range aggs {
		st, _ := a.Stat("goodput_rps")
		if st.Lo < p.Y.Min-1e-9 || st.Hi > p.Y.Max+1e-9 {
			t.Errorf("%s at %s: interval [%g, %g] outside the y axis [%g, %g]", a.VariantName, a.Value, st.Lo, st.Hi, p.Y.Min, p.Y.Max)
		}
	}
	if p.X.Min != 40 || p.X.Max != 120 {
		t.Errorf("x axis [%g, %g], want the swept rates [40, 120]", p.X.Min, p.X.Max)
	}
	if _, err := SweepPlot(aggs, "no_such_measure", testSweep().Values); err == nil {
		t.Error("unknown measure: want an error")
	}
	if _, err := SweepPlot(nil, "goodput_rps", nil); err == nil {
		t.Error("no data: want an error")
	}
}

// A sweep point where no replica succeeded has no latency: the p99 curve
// breaks there instead of dropping to 0 or failing to draw.
func TestSweepPlotGapWhereNoData(t *testing.T) {
	nan := math.NaN()
	var aggs []Aggregate
	for i, p99 := range []float64{40, nan, 60} {
		a := Aggregate{Point: i, Param: "workload.rate", Value: []string{"1", "2", "3"}[i], VariantName: Baseline, Replicas: 1}
		for _, m := range MeasureNames() {
			st := Stat{1, nan, nan}
			if m == "p99_ms" {
				st.Mean = p99
			}
			a.Stats = append(a.Stats, st)
		}
		aggs = append(aggs, a)
	}
	if _, err := SweepPlot(aggs, "p99_ms", []string{"1", "2", "3"}); err != nil {
		t.Fatalf("p99 with a point without data: %v", err)
	}
	c := ciXY{XYs: plotter.XYs{{X: 1, Y: 40}, {X: 2, Y: nan}, {X: 3, Y: 60}}, lo: make([]float64, 3), hi: make([]float64, 3)}
	segs := c.segments()
	if len(segs) != 2 || segs[0].XYs[0].Y != 40 || segs[1].XYs[0].Y != 60 {
		t.Errorf("segments %v, want [40] and [60] (a gap at x=2)", segs)
	}
}

// Sweep and hysteresis plots read like the run plots: human axis labels
// with units, the same sans-serif font, and the legend above the data.
func TestAnalysisPlotsLabelled(t *testing.T) {
	rows, err := RunSweep(context.Background(), fakeRunner, fakeBuild, testSweep(), SweepOptions{})
	if err != nil {
		t.Fatal(err)
	}
	aggs := AggregateRows(rows)
	for _, tt := range []struct{ measure, ylabel string }{
		{"goodput_rps", "goodput (req/s)"},
		{"p99_ms", "p99 latency of succeeded requests (ms)"},
		{"amplification", "amplification (attempts per request, busiest service)"},
		{"peak_queue", "peak queue length (requests)"},
	} {
		p, err := SweepPlot(aggs, tt.measure, testSweep().Values)
		if err != nil {
			t.Fatal(err)
		}
		if p.Y.Label.Text != tt.ylabel || p.X.Label.Text != "workload.rate (req/s)" {
			t.Errorf("%s: axes %q / %q, want %q / workload.rate (req/s)", tt.measure, p.X.Label.Text, p.Y.Label.Text, tt.ylabel)
		}
		if p.Title.Text != tt.ylabel+" against workload.rate" {
			t.Errorf("%s: title %q", tt.measure, p.Title.Text)
		}
		if p.Title.TextStyle.Font.Variant != "Sans" || p.Y.Label.TextStyle.Font.Variant != "Sans" || p.Legend.TextStyle.Font.Variant != "Sans" {
			t.Errorf("%s: fonts %q/%q/%q, want the run plots' Sans", tt.measure,
				p.Title.TextStyle.Font.Variant, p.Y.Label.TextStyle.Font.Variant, p.Legend.TextStyle.Font.Variant)
		}
		// Three variants' legend lines take the top of the plot: the data
		// must stay below them.
		var top float64
		for _, a := range aggs {
			st, _ := a.Stat(tt.measure)
			top = max(top, st.Mean, st.Hi)
		}
		if free := (p.Y.Max - top) / (p.Y.Max - p.Y.Min); free < 0.1+0.065*3-1e-9 {
			t.Errorf("%s: %.0f%% of the height above the data, want room for a 3-line legend", tt.measure, 100*free)
		}
	}
	if got := ParamLabel("services.db.calls.x.timeout", []string{"50ms", "1s"}); got != "services.db.calls.x.timeout (s)" {
		t.Errorf("duration values: %q", got)
	}
	if got := ParamLabel("services.db.overload.policy", []string{"fifo", "lifo"}); got != "services.db.overload.policy" {
		t.Errorf("names: %q", got)
	}
}
