package model

import (
	"math"
	"testing"
	"time"

	"github.com/stormsim/stormsim/topology"
)

// TestArrivalsPoissonLaw checks the count of Poisson arrivals against the
// Poisson law: over 100 s at 50/s the count has mean 5000 and standard
// deviation √5000 ≈ 71; 4σ bounds a false failure at 6e-5. Gaps must have
// a coefficient of variation near 1 (exponential; the CV of 5000 gaps has
// a standard error of about 0.014, so ±0.1 is 7 of them), unlike constant
// arrivals' 0. The same seed gives the same arrivals.
func TestArrivalsPoissonLaw(t *testing.T) {
	w := &topology.Workload{Arrival: topology.ArrivalPoisson, Rate: 50}
	a := ArrivalsFor(w, 100*time.Second, 1)
	var n uint64
	var prev time.Duration
	var sum, sumSq float64
	for ; ; n++ {
		at, ok := a.At(n)
		if !ok {
			break
		}
		if at < prev {
			t.Fatalf("At(%d) = %v went back from %v", n, at, prev)
		}
		g := (at - prev).Seconds()
		sum += g
		sumSq += g * g
		prev = at
	}
	if math.Abs(float64(n)-5000) > 4*math.Sqrt(5000) {
		t.Errorf("%d arrivals in 100 s at 50/s, want 5000 ± 283", n)
	}
	mean := sum / float64(n)
	if cv := math.Sqrt(sumSq/float64(n)-mean*mean) / mean; cv < 0.9 || cv > 1.1 {
		t.Errorf("gap coefficient of variation %.3f, want ≈ 1", cv)
	}
	p, q := ArrivalsFor(w, 100*time.Second, 1), ArrivalsFor(w, 100*time.Second, 1)
	for i := range uint64(100) {
		x, _ := p.At(i)
		y, _ := q.At(i)
		if x != y {
			t.Fatalf("At(%d): %v vs %v with the same seed", i, x, y)
		}
	}
}

// TestArrivalsAtTinyRates: at 1e-11 requests per second the second request
// is due in 3,000 years, past the window: not a Duration overflowed into
// one inside it.
func TestArrivalsAtTinyRates(t *testing.T) {
	for _, w := range []topology.Workload{
		{Arrival: topology.ArrivalConstant, Rate: 1e-11},
		{Arrival: topology.ArrivalPoisson, Rate: 1e-11},
		{Arrival: topology.ArrivalPoisson, Rate: 1e-11, Schedule: []topology.RateStep{{At: 5 * time.Second, Rate: 1e-11}}},
	} {
		a := ArrivalsFor(&w, 10*time.Second, 1)
		for n := uint64(1); n < 4; n++ {
			if at, ok := a.At(n); ok {
				t.Errorf("%+v: request %d due at %v, inside a 10s window", w, n, at)
			}
		}
	}
}
