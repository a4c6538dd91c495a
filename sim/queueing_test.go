package sim

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/topology"
)

// These tests hold the simulator to queueing theory. Each estimate comes
// from batch means: the run after warm-up is cut into series intervals much
// longer than the system's relaxation time, each interval's mean is one
// nearly independent observation, and the tolerance is a 99.9% Student-t
// interval over those batch means. Each test also checks that the interval
// is narrow (a few percent of the value), so it could tell a wrong model.

// t999 is the two-sided 99.9% Student t quantile for 19 degrees of freedom
// (20 batches).
const t999 = 3.883

const batches = 20

func queueScenario(lambda float64, workers int, service topology.Dist, queue *int, batch time.Duration) *topology.Scenario {
	warm := 2 * batch
	return &topology.Scenario{
		Name: "queue", Seed: 1, Warmup: warm, Duration: warm + batches*batch, Interval: batch,
		Workload: topology.Workload{Entry: "s", Arrival: "poisson", Rate: lambda},
		Services: []topology.Service{{Name: "s", Workers: workers, Queue: queue, ServiceTime: service}},
	}
}

// batchMeans returns the mean and 99.9% half-width of a column over the
// intervals that lie fully inside [warmup, duration), each interval's value
// given by f(row).
func batchMeans(t *testing.T, sc *topology.Scenario, ts *metrics.TimeSeries, f func(row []float64) float64) (mean, half float64) {
	t.Helper()
	var xs []float64
	for i, row := range ts.Rows {
		start := ts.Start + time.Duration(i)*ts.Interval
		if start >= sc.Warmup && start+ts.Interval <= sc.Duration {
			xs = append(xs, f(row))
		}
	}
	require.Len(t, xs, batches)
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	sd := math.Sqrt(ss / float64(len(xs)-1))
	return mean, t999 * sd / math.Sqrt(float64(len(xs)))
}

func runScenario(t testing.TB, sc *topology.Scenario) *metrics.Result {
	t.Helper()
	res, err := Run(context.Background(), sc, Options{})
	require.NoError(t, err)
	require.Equal(t, StatusComplete, res.Summary.Status)
	return res
}

func col(t *testing.T, ts *metrics.TimeSeries, name string) int {
	t.Helper()
	i := ts.Column(name)
	require.GreaterOrEqual(t, i, 0, "column %q missing", name)
	return i
}

func exp(mean time.Duration) topology.Dist { return topology.Dist{Dist: "exponential", Mean: mean} }

// checkSojourn compares the batch-mean end-to-end latency with want (ms).
func checkSojourn(t *testing.T, sc *topology.Scenario, wantMs, maxRelHalf float64) *metrics.Result {
	t.Helper()
	res := runScenario(t, sc)
	lat := col(t, res.Series, "latency_mean_ms")
	mean, half := batchMeans(t, sc, res.Series, func(r []float64) float64 { return r[lat] })
	t.Logf("sojourn %.4f ms ± %.4f (theory %.4f)", mean, half, wantMs)
	require.Less(t, half/wantMs, maxRelHalf, "confidence interval too wide to test anything")
	require.InDelta(t, wantMs, mean, half)
	return res
}

func TestMM1MeanSojourn(t *testing.T) {
	mu := 1000.0 // per second: mean service 1ms
	for _, tc := range []struct {
		rho   float64
		batch time.Duration
	}{
		// Relaxation time ≈ 1/(μ(1−√ρ)²): 12ms at ρ=0.5, 0.38s at ρ=0.9.
		{0.5, 4 * time.Second},
		{0.9, 40 * time.Second},
	} {
		lambda := tc.rho * mu
		sc := queueScenario(lambda, 1, exp(time.Millisecond), nil, tc.batch)
		want := 1000 / (mu - lambda) // W = 1/(μ−λ), in ms
		res := checkSojourn(t, sc, want, 0.1)
		// The server is busy a fraction ρ of the time.
		u := col(t, res.Series, "utilization/s")
		mean, half := batchMeans(t, sc, res.Series, func(r []float64) float64 { return r[u] })
		t.Logf("utilization %.4f ± %.4f (theory %.2f)", mean, half, tc.rho)
		require.Less(t, half/tc.rho, 0.05)
		require.InDelta(t, tc.rho, mean, half)
	}
}

// erlangC is the probability an arrival waits in an M/M/c queue with
// offered load a = λ/μ.
func erlangC(c int, a float64) float64 {
	sum, term := 0.0, 1.0
	for k := 0; k < c; k++ {
		if k > 0 {
			term *= a / float64(k)
		}
		sum += term
	}
	top := term * a / float64(c) / (1 - a/float64(c))
	return top / (sum + top)
}

func TestMMcMeanSojournErlangC(t *testing.T) {
	c, mu, lambda := 4, 250.0, 800.0 // ρ = 0.8
	sc := queueScenario(lambda, c, exp(4*time.Millisecond), nil, 8*time.Second)
	pw := erlangC(c, lambda/mu)
	wq := pw / (float64(c)*mu - lambda)
	want := (wq + 1/mu) * 1000
	checkSojourn(t, sc, want, 0.1)
}

func TestMD1MeanSojournPollaczekKhinchine(t *testing.T) {
	lambda, s := 800.0, 0.001 // ρ = 0.8
	sc := queueScenario(lambda, 1, topology.Dist{Dist: "constant", Value: time.Millisecond}, nil, 8*time.Second)
	rho := lambda * s
	wq := lambda * s * s / (2 * (1 - rho)) // E[S²] = s² for a constant
	checkSojourn(t, sc, (wq+s)*1000, 0.1)
}

func TestMM1KBlocking(t *testing.T) {
	const K = 5 // in the system: 1 in service + 4 waiting
	lambda, mu := 900.0, 1000.0
	q := K - 1
	sc := queueScenario(lambda, 1, exp(time.Millisecond), &q, 4*time.Second)
	res := runScenario(t, sc)
	rho := lambda / mu
	want := (1 - rho) * math.Pow(rho, K) / (1 - math.Pow(rho, K+1))
	att, rej := col(t, res.Series, "attempts/s"), col(t, res.Series, "rejected/s")
	mean, half := batchMeans(t, sc, res.Series, func(r []float64) float64 { return r[rej] / r[att] })
	t.Logf("blocking %.4f ± %.4f (theory %.4f)", mean, half, want)
	require.Less(t, half/want, 0.1)
	require.InDelta(t, want, mean, half)
	// The queue never holds more than its limit.
	require.EqualValues(t, q, res.Summary.Services[0].QueueMax)
}
