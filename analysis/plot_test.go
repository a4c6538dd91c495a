package analysis

import (
	"context"
	"reflect"
	"testing"
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
