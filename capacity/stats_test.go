package capacity

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

func TestJudgeTerm(t *testing.T) {
	p99, _ := ParseSLO("p99<20ms")
	succ, _ := ParseSLO("success>=99%")
	for _, tc := range []struct {
		name string
		term Term
		vals []float64
		want Verdict
	}{
		{"clearly below", p99[0], []float64{10, 11, 12}, Holds},
		{"clearly above", p99[0], []float64{30, 31, 29}, Fails},
		{"straddles", p99[0], []float64{18, 22, 19, 21}, Unsure},
		{"one replica below", p99[0], []float64{19.9}, Holds},
		{"one replica above", p99[0], []float64{20}, Fails},
		{"nothing succeeded once", p99[0], []float64{10, math.Inf(1), 10}, Fails},
		{"lower limit met", succ[0], []float64{0.999, 0.998, 0.9995}, Holds},
		{"lower limit missed", succ[0], []float64{0.90, 0.91, 0.92}, Fails},
		{"no spread at the limit", succ[0], []float64{0.99, 0.99}, Holds},
	} {
		got := judgeTerm(tc.term, tc.vals, 0.95)
		if got.Verdict != tc.want {
			t.Errorf("%s: %v (%+v), want %v", tc.name, got.Verdict, got, tc.want)
		}
	}
	// The bound is mean + t(0.95, n−1)·s/√n: for {18,22,19,21}, mean 20,
	// s = √(10/3), t(0.95,3) = 2.353363.
	got := judgeTerm(p99[0], []float64{18, 22, 19, 21}, 0.95)
	want := 20 + 2.353363*math.Sqrt(10.0/3)/2
	if math.Abs(got.Upper-want) > 1e-5 {
		t.Errorf("upper bound %g, want %g", got.Upper, want)
	}
}

func TestRecoveryLowerBound(t *testing.T) {
	// The Clopper–Pearson lower bound L is the p at which seeing k or more
	// successes of n has probability exactly 1 − conf.
	for _, tc := range []struct{ k, n int }{{5, 5}, {10, 10}, {8, 10}, {1, 3}, {19, 20}} {
		l := RecoveryLowerBound(tc.k, tc.n, 0.95)
		tail := 1 - distuv.Binomial{N: float64(tc.n), P: l}.CDF(float64(tc.k-1))
		if math.Abs(tail-0.05) > 1e-6 {
			t.Errorf("k=%d n=%d: bound %g gives P(X ≥ k) = %g, want 0.05", tc.k, tc.n, l, tail)
		}
	}
	if got := RecoveryLowerBound(5, 5, 0.95); math.Abs(got-math.Pow(0.05, 0.2)) > 1e-12 {
		t.Errorf("5/5: %g, want 0.05^(1/5)", got)
	}
	if RecoveryLowerBound(0, 5, 0.95) != 0 {
		t.Error("0/5 must bound nothing")
	}
}

// TestReplicasToShow: n is the fewest all-recovering replicas whose
// Clopper–Pearson bound reaches p: n−1 do not. At 95 %, 3 of 3 show only
// 0.05^(1/3) ≈ 36.8 %; showing 95 % takes ⌈ln 0.05 / ln 0.95⌉ = 59.
func TestReplicasToShow(t *testing.T) {
	if got := RecoveryLowerBound(3, 3, 0.95); math.Abs(got-0.368) > 5e-4 {
		t.Errorf("3 of 3 at 95%%: %g, want 0.368", got)
	}
	for _, tc := range []struct {
		p, conf float64
		want    int
	}{{0.95, 0.95, 59}, {0.9, 0.95, 29}, {0.368, 0.95, 3}, {0.99, 0.99, 459}, {0.5, 0.95, 5}} {
		n := ReplicasToShow(tc.p, tc.conf)
		if n != tc.want {
			t.Errorf("p %g at %g: %d replicas, want %d", tc.p, tc.conf, n, tc.want)
		}
		if RecoveryLowerBound(n, n, tc.conf) < tc.p || (n > 1 && RecoveryLowerBound(n-1, n-1, tc.conf) >= tc.p) {
			t.Errorf("p %g at %g: %d is not the fewest replicas reaching it", tc.p, tc.conf, n)
		}
	}
	if ReplicasToShow(0, 0.95) != 0 || ReplicasToShow(1, 0.95) != -1 {
		t.Error("edges: p 0 needs none, p 1 is never shown")
	}
}
