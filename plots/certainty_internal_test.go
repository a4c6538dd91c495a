package plots

import (
	"math"
	"testing"
	"time"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/metrics/metricstest"
)

// The unknown-intents plot draws the two convergence columns as they are,
// one point per interval at its midpoint.
func TestUnknownIntentsDrawsTheColumns(t *testing.T) {
	r := metricstest.Converging()
	f, err := unknownIntentsFigure(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.lines) != 2 || f.lines[0].name != "unknown intents" || f.lines[1].name != "manual queue" {
		t.Fatalf("lines %v", f.lines)
	}
	for i, col := range []string{metrics.ColUnknownIntents, metrics.ColManualQueue} {
		want := r.Series.Values(col)
		xys := f.lines[i].xys
		if len(xys) != len(want) {
			t.Fatalf("%s: %d points for %d intervals", col, len(xys), len(want))
		}
		for k, xy := range xys {
			if xy.Y != want[k] || xy.X != float64(k)+0.5 {
				t.Fatalf("%s point %d = %v, want (%v, %v)", col, k, xy, float64(k)+0.5, want[k])
			}
		}
	}
	// The storm shows: far more unknown during and after the fault than before.
	u := r.Series.Values(metrics.ColUnknownIntents)
	if !(u[35] > 10*max(1, u[15])) {
		t.Errorf("unknown at 35 s %v, at 15 s %v: the storm does not show", u[35], u[15])
	}
	if f.X.Min != 0 || f.X.Max != 60 {
		t.Errorf("time axis [%v, %v], want the series' [0, 60]", f.X.Min, f.X.Max)
	}
}

// The time-to-certainty CDF is the histogram's, rising to 1, with its p50
// and p99 marked where the summary puts them, and where the curve crosses
// 0.5 and 0.99.
func TestCertaintyCDFMarksQuantiles(t *testing.T) {
	r := metricstest.Converging()
	f, err := certaintyCDFFigure(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.lines) != 3 {
		t.Fatalf("lines %v", f.lines)
	}
	cdf := f.lines[0].xys
	for i := 1; i < len(cdf); i++ {
		if cdf[i].Y < cdf[i-1].Y || cdf[i].X < cdf[i-1].X {
			t.Fatalf("CDF not monotone at %d: %v then %v", i, cdf[i-1], cdf[i])
		}
	}
	if last := cdf[len(cdf)-1].Y; last != 1 {
		t.Errorf("CDF ends at %v, want 1", last)
	}
	c := r.Summary.Certainty
	for i, q := range []struct {
		name string
		ms   float64
		at   float64
	}{{"p50", c.P50Ms, 0.5}, {"p99", c.P99Ms, 0.99}} {
		mark := f.lines[i+1]
		if mark.xys[0].X != q.ms || mark.xys[1].X != q.ms {
			t.Errorf("%s marked at %v, want %v", q.name, mark.xys[0].X, q.ms)
		}
		// The CDF's value just below the mark is under the quantile's
		// fraction, at the mark at least it (3 significant figures).
		below, at := 0.0, 0.0
		for _, xy := range cdf {
			if xy.X < q.ms*0.999 {
				below = xy.Y
			}
			if xy.X <= q.ms*1.001 {
				at = xy.Y
			}
		}
		if !(below < q.at && at >= q.at) {
			t.Errorf("%s at %v ms: CDF %v below it, %v at it; want the curve to cross %v there", q.name, q.ms, below, at, q.at)
		}
	}
	if !(f.X.Min < cdf[0].X && f.X.Max > cdf[len(cdf)-1].X) || math.IsInf(f.X.Max, 0) {
		t.Errorf("x axis [%v, %v] does not hold the curve [%v, %v]", f.X.Min, f.X.Max, cdf[0].X, cdf[len(cdf)-1].X)
	}
}

// Values far apart make a jump at each, and a flat line between them:
// nothing slants across times no intent took.
func TestStepCDF(t *testing.T) {
	h := metrics.NewLatencyHistogram()
	for _, d := range []time.Duration{10 * time.Millisecond, 10 * time.Millisecond, time.Second, 10 * time.Second} {
		metrics.RecordLatency(h, d)
	}
	xys := stepCDFXYs(h)
	want := []float64{0, 0.5, 0.5, 0.75, 0.75, 1}
	if len(xys) != len(want) {
		t.Fatalf("points %v, want %d", xys, len(want))
	}
	for i, xy := range xys {
		if xy.Y != want[i] {
			t.Errorf("point %d = %v, want y %v", i, xy, want[i])
		}
	}
	for i := 1; i < len(xys); i += 2 {
		if lo, hi := xys[i-1].X, xys[i].X; hi/lo > 1.01 { // one bucket: 3 significant figures
			t.Errorf("step %d rises over [%v, %v] ms, wider than its bucket", i/2, lo, hi)
		}
	}
	if stepCDFXYs(nil) != nil || stepCDFXYs(metrics.NewLatencyHistogram()) != nil {
		t.Error("an empty histogram has points")
	}
}
