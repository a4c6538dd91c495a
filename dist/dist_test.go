package dist

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stormsim/stormsim/topology"
	"github.com/stretchr/testify/require"
)

// TestSampleMoments checks each distribution's sample mean against its
// theoretical mean within 5 standard errors.
func TestSampleMoments(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		name string
		d    topology.Dist
		sd   float64 // theoretical standard deviation in ns
	}{
		{"constant", topology.Dist{Dist: "constant", Value: 3 * ms}, 0},
		{"exponential", topology.Dist{Dist: "exponential", Mean: 2 * ms}, float64(2 * ms)},
		{"uniform", topology.Dist{Dist: "uniform", Min: ms, Max: 3 * ms}, float64(2*ms) / math.Sqrt(12)},
		{"normal", topology.Dist{Dist: "normal", Mean: 10 * ms, Stddev: ms}, float64(ms)},
		// Truncated, not clamped, at 0: the mean is the conditional one.
		{"normal-truncated", topology.Dist{Dist: "normal", Mean: ms, Stddev: 2 * ms}, 0},
		{"half-normal", topology.Dist{Dist: "normal", Stddev: ms}, 0},
		{"lognormal-p", topology.Dist{Dist: "lognormal", P50: 4 * ms, P99: 40 * ms}, 0},
		{"lognormal-m", topology.Dist{Dist: "lognormal", Mean: 5 * ms, Stddev: 2 * ms}, float64(2 * ms)},
		{"mixture", topology.Dist{Dist: "mixture", Modes: []topology.Mode{
			{Weight: 9, Dist: topology.Dist{Dist: "constant", Value: ms}},
			{Weight: 1, Dist: topology.Dist{Dist: "constant", Value: 11 * ms}}}}, float64(3 * ms)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := New(c.d)
			require.NoError(t, err)
			r := rand.New(rand.NewPCG(1, 2))
			const n = 200000
			var sum, sum2 float64
			for i := 0; i < n; i++ {
				x := float64(s.Sample(r))
				sum += x
				sum2 += x * x
			}
			mean := sum / n
			sd := c.sd
			if sd == 0 {
				sd = math.Sqrt(math.Max(sum2/n-mean*mean, 0))
			}
			tol := 5*sd/math.Sqrt(n) + 1
			require.InDelta(t, float64(s.Mean()), mean, tol)
		})
	}
}

// TestLognormalQuantiles checks the p50/p99 fit: empirical quantiles of a
// large sample lie within the binomial order-statistic interval.
func TestLognormalQuantiles(t *testing.T) {
	s, err := New(topology.Dist{Dist: "lognormal", P50: 4 * time.Millisecond, P99: 40 * time.Millisecond})
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(3, 4))
	const n = 100000
	xs := make([]time.Duration, n)
	for i := range xs {
		xs[i] = s.Sample(r)
	}
	slices.Sort(xs)
	for _, q := range []struct {
		p    float64
		want time.Duration
	}{{0.5, 4 * time.Millisecond}, {0.99, 40 * time.Millisecond}} {
		// 4-sigma binomial interval on the rank of the true quantile.
		half := 4 * math.Sqrt(n*q.p*(1-q.p))
		lo, hi := xs[int(n*q.p-half)], xs[int(n*q.p+half)]
		require.True(t, lo <= q.want && q.want <= hi, "p%v: true %v not in [%v, %v]", q.p*100, q.want, lo, hi)
	}
}

func TestNewRejectsBadParameters(t *testing.T) {
	bad := []topology.Dist{
		{},
		{Dist: "weibull"},
		{Dist: "exponential"},
		{Dist: "uniform", Min: 2, Max: 1},
		{Dist: "lognormal", P50: 10, P99: 5},
		{Dist: "lognormal"},
		{Dist: "mixture"},
		{Dist: "mixture", Modes: []topology.Mode{{Weight: 0, Dist: topology.Dist{Dist: "constant"}}}},
		{Dist: "empirical", File: "x.txt"},
		{Dist: "constant", Value: -1},
		{Dist: "normal", Mean: -1, Stddev: 1},
		{Dist: "normal", Mean: 1, Stddev: -1},
	}
	for _, d := range bad {
		_, err := New(d)
		require.Error(t, err, "%+v", d)
	}
}

// TestNormalTruncationDrawsNoZeros: clamping N(1ms, 2ms) at 0 would return
// exactly 0 for about 31% of draws; truncation by rejection never does.
func TestNormalTruncationDrawsNoZeros(t *testing.T) {
	s, err := New(topology.Dist{Dist: "normal", Mean: time.Millisecond, Stddev: 2 * time.Millisecond})
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(5, 6))
	zeros := 0
	for range 10000 {
		x := s.Sample(r)
		require.GreaterOrEqual(t, x, time.Duration(0))
		if x == 0 {
			zeros++
		}
	}
	require.Zero(t, zeros)
}

func TestEmpiricalNeverNegative(t *testing.T) {
	s, err := New(topology.Dist{Dist: "empirical", Samples: []time.Duration{-5, 3}})
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(1, 1))
	seen := map[time.Duration]bool{}
	for range 200 {
		seen[s.Sample(r)] = true
	}
	require.Equal(t, map[time.Duration]bool{0: true, 3: true}, seen)
}

// TestZeroSamplerIsConstantZero: the zero Sampler draws nothing.
func TestZeroSamplerIsConstantZero(t *testing.T) {
	var s Sampler
	r := rand.New(rand.NewPCG(1, 1))
	require.Zero(t, s.Sample(r))
	require.Zero(t, s.Mean())
	require.Equal(t, rand.New(rand.NewPCG(1, 1)).Uint64(), r.Uint64(), "a constant must not draw")
}

func TestEmpiricalResamples(t *testing.T) {
	samples := []time.Duration{1, 2, 3}
	s, err := New(topology.Dist{Dist: "empirical", Samples: samples})
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(1, 1))
	seen := map[time.Duration]int{}
	for i := 0; i < 3000; i++ {
		seen[s.Sample(r)]++
	}
	require.Len(t, seen, 3)
	for _, v := range samples {
		require.InDelta(t, 1000, seen[v], 5*math.Sqrt(3000*(1.0/3)*(2.0/3)))
	}
}

func BenchmarkSampleLognormal(b *testing.B) {
	s, _ := New(topology.Dist{Dist: "lognormal", P50: 4 * time.Millisecond, P99: 40 * time.Millisecond})
	r := rand.New(rand.NewPCG(1, 1))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_ = s.Sample(r)
	}
}

// TestExpDrawsWhatSampleDraws checks that Exp, given an exponential
// Sampler's ExpMean, returns Sample's draws bit for bit on the same stream,
// the cap included (a mean of 10⁹ s makes draws above MaxInt64/4 ns likely),
// and that ExpMean refuses the other kinds.
func TestExpDrawsWhatSampleDraws(t *testing.T) {
	for _, mean := range []time.Duration{time.Nanosecond, 20 * time.Microsecond, time.Second, math.MaxInt64 / 8} {
		s, err := New(topology.Dist{Dist: "exponential", Mean: mean})
		require.NoError(t, err)
		m, ok := s.ExpMean()
		require.True(t, ok)
		require.Equal(t, float64(mean), m)
		r1, r2 := rand.New(rand.NewPCG(7, uint64(mean))), rand.New(rand.NewPCG(7, uint64(mean)))
		capped := 0
		for range 10000 {
			want := s.Sample(r1)
			require.Equal(t, want, Exp(r2, m), "mean %v", mean)
			if want == maxSample {
				capped++
			}
		}
		if mean == math.MaxInt64/8 {
			// P(draw > 2 × mean) = e⁻² ≈ 0.135: about 1350 of 10000.
			require.Greater(t, capped, 1000, "the cap must be exercised")
		}
	}
	for _, d := range []topology.Dist{{Dist: "constant", Value: time.Millisecond}, {Dist: "uniform", Min: 0, Max: time.Millisecond}} {
		s, err := New(d)
		require.NoError(t, err)
		_, ok := s.ExpMean()
		require.False(t, ok, d.Dist)
	}
}

func ExampleExp() {
	s, _ := New(topology.Dist{Dist: "exponential", Mean: 20 * time.Microsecond})
	mean, _ := s.ExpMean()
	r1, r2 := rand.New(rand.NewPCG(1, 2)), rand.New(rand.NewPCG(1, 2))
	fmt.Println(Exp(r1, mean) == s.Sample(r2))
	// Output: true
}

// TestValidityIsTopologys: a distribution is valid by one rule,
// topology's: what a scenario file may hold is what New builds, and what
// it rejects New refuses too (issue 32: normal means and lognormal stddevs
// had other limits here). Each row is one distribution as YAML, for
// topology, and as the value it decodes to, for New.
func TestValidityIsTopologys(t *testing.T) {
	ms := time.Millisecond
	c1 := topology.Dist{Dist: "constant", Value: ms}
	for _, tc := range []struct {
		yaml string
		d    topology.Dist
	}{
		{"{dist: normal, mean: 0s, stddev: 1ms}", topology.Dist{Dist: "normal", Stddev: ms}},
		{"{dist: normal, mean: 1ms, stddev: 0s}", topology.Dist{Dist: "normal", Mean: ms}},
		{"{dist: lognormal, mean: 1ms, stddev: 0s}", topology.Dist{Dist: "lognormal", Mean: ms}},
		{"{dist: lognormal, mean: 1ms, stddev: 1ms}", topology.Dist{Dist: "lognormal", Mean: ms, Stddev: ms}},
		{"{dist: lognormal, p50: 1ms, p99: 5ms, mean: 2ms}", topology.Dist{Dist: "lognormal", P50: ms, P99: 5 * ms, Mean: 2 * ms}},
		{"{dist: lognormal, p50: 1ms, p99: 5ms}", topology.Dist{Dist: "lognormal", P50: ms, P99: 5 * ms}},
		{"{dist: exponential, mean: 1ms}", topology.Dist{Dist: "exponential", Mean: ms}},
		{"{dist: exponential, mean: 0s}", topology.Dist{Dist: "exponential"}},
		{"{dist: uniform, min: 2ms, max: 1ms}", topology.Dist{Dist: "uniform", Min: 2 * ms, Max: ms}},
		{"{dist: constant, value: 1ms, mean: 2ms}", topology.Dist{Dist: "constant", Value: ms, Mean: 2 * ms}},
		{"{dist: mixture, modes: [{weight: .inf, dist: constant, value: 1ms}]}", topology.Dist{Dist: "mixture", Modes: []topology.Mode{{Weight: math.Inf(1), Dist: c1}}}},
		{"{dist: mixture, modes: [{weight: .nan, dist: constant, value: 1ms}]}", topology.Dist{Dist: "mixture", Modes: []topology.Mode{{Weight: math.NaN(), Dist: c1}}}},
		{"{dist: mixture, modes: [{weight: 1, dist: normal, mean: 0s, stddev: 1ms}]}", topology.Dist{Dist: "mixture", Modes: []topology.Mode{{Weight: 1, Dist: topology.Dist{Dist: "normal", Stddev: ms}}}}},
		{"{dist: mixture, modes: [{weight: 2, dist: constant, value: 1ms}]}", topology.Dist{Dist: "mixture", Modes: []topology.Mode{{Weight: 2, Dist: c1}}}},
	} {
		yaml := "name: d\nduration: 1s\nworkload: {entry: s, rate: 1}\nservices:\n  - {name: s, workers: 1, service_time: " + tc.yaml + "}\n"
		_, perr := topology.Parse("d.yaml", []byte(yaml), nil)
		_, nerr := New(tc.d)
		if (perr == nil) != (nerr == nil) {
			t.Errorf("%s: topology says %v, New says %v", tc.yaml, perr, nerr)
		}
	}
}
