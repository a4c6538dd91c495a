package plots

import (
	"strings"
	"testing"
)

func TestNiceTicks(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		want   string
	}{
		{0, 60, "0 10 20 30 40 50 60"},
		{0, 287.5, "0 50 100 150 200 250"},
		{0, 1.2, "0.0 0.2 0.4 0.6 0.8 1.0 1.2"},
		{0, 7.3, "0 2 4 6"},
		{-0.3, 2.6, "0.0 0.5 1.0 1.5 2.0 2.5"},
		{0, 0.012, "0.000 0.002 0.004 0.006 0.008 0.010 0.012"},
		{0, 0.015, "0.0000 0.0025 0.0050 0.0075 0.0100 0.0125 0.0150"},
		{5, 5, "5"},
	} {
		var labels []string
		for _, tk := range (niceTicks{}).Ticks(tc.lo, tc.hi) {
			if tk.Label != "" {
				labels = append(labels, tk.Label)
			}
		}
		if got := strings.Join(labels, " "); got != tc.want {
			t.Errorf("Ticks(%v, %v) = %q, want %q", tc.lo, tc.hi, got, tc.want)
		}
	}
}
