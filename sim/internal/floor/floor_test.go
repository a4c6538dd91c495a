package floor

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMM1MatchesTheory(t *testing.T) {
	_, w := MM1(500, 1000, 200, rand.New(rand.NewPCG(1, 1)), &Heap{}, nil)
	require.InDelta(t, 0.002, w, 0.0002) // W = 1/(μ−λ); a sanity check of the floor, not of the model
}

// TestMM1TimeoutsMatchesTheory checks the timeout floor against the
// M/M/1 sojourn law: a sojourn is exponential with rate μ−λ, so a timeout τ
// is exceeded with probability e^{−(μ−λ)τ}. At λ = 900, μ = 1000, τ = 20ms
// that is e^{−2} = 0.1353 of the n ≈ 180k customers; customers are
// correlated through the queue, so the tolerance is 10 binomial standard
// deviations (√(n p(1−p)) ≈ 145), 0.008 in the fraction. Those served in
// time have a sojourn S < τ, of mean 1/(μ−λ) − τe^{−2}/(1−e^{−2}) = 6.87ms;
// over 20 seeds that mean's standard deviation is 0.13ms (the queue's
// autocorrelation at ρ = 0.9), so 0.5ms is about 4 of them.
// The same seed with no timeout must serve exactly MM1's customers.
func TestMM1TimeoutsMatchesTheory(t *testing.T) {
	served, w, out := MM1Timeouts(900, 1000, 200, 0.02, rand.New(rand.NewPCG(1, 1)), &Heap{}, nil)
	n := served + out
	p := math.Exp(-2)
	require.InDelta(t, p, float64(out)/float64(n), 10*math.Sqrt(p*(1-p)/float64(n)))
	require.InDelta(t, 0.01-0.02*p/(1-p), w, 0.0005)
	all, _ := MM1(900, 1000, 200, rand.New(rand.NewPCG(1, 1)), &Heap{}, nil)
	require.Equal(t, all, n)
}
