package collapse

import (
	"math"
	"slices"
	"testing"
)

// geometric is the curve of a quantity whose every unit step is reached
// with probability q, from 1 up to n.
func geometric(q float64, n int) []point {
	c := make([]point, n)
	for i := range c {
		c[i] = point{v: float64(i + 1), logP: float64(i+1) * math.Log(q)}
	}
	return c
}

// TestPlace checks the placement against the optimum of m · Σ (1/q − 1):
// for a total probability P in m equal steps, m² (P^(−1/m) − 1), least
// where each step's share is about e^−1.594 ≈ 0.20.
func TestPlace(t *testing.T) {
	for _, tc := range []struct {
		name   string
		curve  []point
		levels []float64
	}{
		// 0.6 a unit step, 30 steps (P = 2.2e-7): shares of 0.6³ = 0.216
		// are the nearest to 0.2, ten stages of three units.
		{"geometric", geometric(0.6, 30), []float64{3, 6, 9, 12, 15, 18, 21, 24, 27, 30}},
		// A last step reached by 90 % of the runs is merged into the one
		// before, as the pilot's levels 44 → 45 should have been.
		{"near-certain last step", append(geometric(0.216, 4), point{v: 5, logP: 4*math.Log(0.216) + math.Log(0.9)}),
			[]float64{1, 2, 3, 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			levels, shares := place(tc.curve)
			if !slices.Equal(levels, tc.levels) {
				t.Errorf("levels %v, want %v", levels, tc.levels)
			}
			// The shares are the curve's conditional probabilities: their
			// product is the curve's last point.
			logP := 0.0
			for _, q := range shares {
				logP += math.Log(q)
			}
			if want := tc.curve[len(tc.curve)-1].logP; math.Abs(logP-want) > 1e-9 {
				t.Errorf("shares %v multiply to e^%g, want e^%g", shares, logP, want)
			}
		})
	}
}

// TestAllocate: runs go where they buy the most variance for their cost,
// N_k ∝ √(v_k/c_k), the dearest stage keeping the effort and none above
// maxAllocation times it.
func TestAllocate(t *testing.T) {
	shares := []float64{0.2, 0.2, 0.2, 0.5}
	// Costs with the overhead: 1e5, 2.5e4 (a quarter: twice the runs),
	// 1e3+... (capped), and a cheap but near-certain stage.
	cost := []float64{1e5 - runOverhead, 2.5e4 - runOverhead, 0, 1e5/4 - runOverhead}
	got := allocate(shares, cost, []int{100, 100, 100, 100}, 100)
	// Stage 3: v = 1 against 4, at a quarter of the cost: √(1/4·4) = 1.
	want := []int{100, 200, maxAllocation * 100, 100}
	if !slices.Equal(got, want) {
		t.Errorf("allocate %v, want %v", got, want)
	}
}
