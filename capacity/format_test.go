package capacity

import "testing"

// TestOutcomeValuesPrintApart: the refinement rounds bisect below the
// search's resolution, so two evaluated points closer than it must still
// print differently (metastable-retry-storm printed 157 twice, for 157.19
// and 157.43, at a resolution of 16.4).
func TestOutcomeValuesPrintApart(t *testing.T) {
	for _, tc := range []struct {
		name   string
		res    float64
		values []float64
		want   []string
	}{
		{"refined below resolution", 16.40625, []float64{140, 157.19131469726562, 157.431640625, 2240}, []string{"140.0", "157.2", "157.4", "2240.0"}},
		{"points at the resolution", 10, []float64{100, 110, 120}, []string{"100", "110", "120"}},
		{"one point", 16, []float64{157.19}, []string{"157"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &Outcome{Search: Search{Param: "workload.rate", Lo: 100, Hi: 2240, Resolution: tc.res}}
			for _, v := range tc.values {
				o.Points = append(o.Points, Point{Value: v})
			}
			f := o.valueFormat()
			seen := map[string]float64{}
			for i, v := range tc.values {
				got := f(v)
				if got != tc.want[i] {
					t.Errorf("%g printed %q, want %q", v, got, tc.want[i])
				}
				if w, dup := seen[got]; dup {
					t.Errorf("%g and %g both print %q", w, v, got)
				}
				seen[got] = v
			}
		})
	}
}
