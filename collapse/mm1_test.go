package collapse

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/stormsim/stormsim/sim"
	"github.com/stormsim/stormsim/topology"
)

// mm1 returns an M/M/1 scenario (λ, μ per second) with room for limit
// customers, validated with defaults.
func mm1(t testing.TB, lambda, mu float64, limit int) *topology.Scenario {
	t.Helper()
	y := fmt.Sprintf(`name: mm1
seed: 1
duration: 1s
workload:
  entry: s
  rate: %g
services:
  - name: s
    workers: 1
    queue: %d
    service_time: {dist: exponential, mean: %s}
`, lambda, limit, time.Duration(float64(time.Second)/mu))
	sc, err := topology.Parse("mm1.yaml", []byte(y), nil)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// exactMM1 is P(an M/M/1 from empty reaches l in system within T), by
// uniformization of its birth-death chain.
func exactMM1(t testing.TB, lambda, mu float64, l int, within time.Duration) float64 {
	t.Helper()
	ch := BirthDeath(l, l, func(int) float64 { return lambda }, func(int) float64 { return mu })
	p, err := ch.Solve(0, within.Seconds(), false)
	if err != nil {
		t.Fatal(err)
	}
	return p.Probability
}

func systemLevel(l int) Level { return Level{Kind: System, Service: "s", Threshold: float64(l)} }

// TestSplitMatchesUniformization checks splitting on stormsim's M/M/1
// (λ = 0.6, μ = 1, a minute from empty) against the exact probability of
// its birth-death chain, from 1e-2 down to 1e-7. The reported interval is a
// 95 % one, so its half-width is 1.96 standard errors: the exact value must
// lie within twice it (3.9 standard errors, a miss once in 10⁴ by chance).
func TestSplitMatchesUniformization(t *testing.T) {
	sc := mm1(t, 0.6, 1, 1000)
	for _, tc := range []struct {
		level     int
		precision float64
		deep      bool
	}{
		{12, 0.2, false}, // 1.5e-2
		{17, 0.2, false}, // 8.6e-4
		{21, 0.3, false}, // 8.0e-5
		{24, 0.3, true},  // 1.3e-5
		{28, 0.4, true},  // 1.0e-6
		{32, 0.4, true},  // 7.4e-8
	} {
		t.Run(fmt.Sprint(tc.level), func(t *testing.T) {
			if tc.deep && testing.Short() {
				t.Skip("deep levels take tens of seconds: skipped under -short, make test runs them")
			}
			exact := exactMM1(t, 0.6, 1, tc.level, time.Minute)
			est, err := Split(context.Background(), sc, Options{Level: systemLevel(tc.level), Within: time.Minute, Precision: tc.precision})
			if err != nil {
				t.Fatal(err)
			}
			half := (est.CI95[1] - est.CI95[0]) / 2
			t.Logf("exact %.3g, splitting %.3g [%.3g, %.3g], %d levels, %d runs, %d events",
				exact, est.Probability, est.CI95[0], est.CI95[1], len(est.Levels), est.Runs, est.Events)
			if math.Abs(est.Probability-exact) > 2*half {
				t.Errorf("splitting %.4g ± %.2g, exact %.4g: off by more than twice the 95%% half-width", est.Probability, half, exact)
			}
			if half > tc.precision*est.Probability*1.0001 {
				t.Errorf("half-width %.3g above the precision target %g of %.3g", half, tc.precision, est.Probability)
			}
		})
	}
}

// plainMC is P(reach l within T) by n independent runs of stormsim.
func plainMC(t testing.TB, sc *topology.Scenario, l int, within time.Duration, n int) float64 {
	t.Helper()
	hits := 0
	for i := range n {
		c := *sc
		c.Seed, c.Duration = uint64(i+1)+1e6, within
		tr, err := sim.Start(&c)
		if err != nil {
			t.Fatal(err)
		}
		for tr.Step(within) {
			if tr.System(0) >= l {
				hits++
				break
			}
		}
		tr.Close()
	}
	return float64(hits) / float64(n)
}

// TestPlainMonteCarloAgrees checks, at 1.5e-2 where plain simulation
// works, that plain Monte Carlo agrees with the exact value and with
// splitting. With n runs the plain estimate's standard error is
// √(p(1−p)/n); splitting's is its half-width over 1.96. Each comparison
// allows 4 standard errors of the difference.
func TestPlainMonteCarloAgrees(t *testing.T) {
	const level, n = 12, 20000
	sc := mm1(t, 0.6, 1, 1000)
	exact := exactMM1(t, 0.6, 1, level, time.Minute)
	plain := plainMC(t, sc, level, time.Minute, n)
	sePlain := math.Sqrt(exact * (1 - exact) / n)
	if math.Abs(plain-exact) > 4*sePlain {
		t.Errorf("plain Monte Carlo %.4g, exact %.4g: more than 4 standard errors (%.2g) apart", plain, exact, sePlain)
	}
	est, err := Split(context.Background(), sc, Options{Level: systemLevel(level), Within: time.Minute, Precision: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	seSplit := (est.CI95[1] - est.CI95[0]) / 2 / 1.96
	if d := math.Abs(plain - est.Probability); d > 4*math.Hypot(sePlain, seSplit) {
		t.Errorf("plain %.4g, splitting %.4g: more than 4 standard errors of the difference (%.2g) apart", plain, est.Probability, math.Hypot(sePlain, seSplit))
	}
	t.Logf("exact %.4g, plain %.4g (%d runs), splitting %.4g [%.4g, %.4g]", exact, plain, n, est.Probability, est.CI95[0], est.CI95[1])
}

// TestSplitCoverage runs the estimator with 40 seeds at 2.7e-3 and counts
// the intervals holding the exact value. Each covers with probability 0.95
// if the interval is right, so the count is Binomial(40, 0.95): mean 38,
// standard deviation 1.38. Fewer than 38 − 3·1.38 ≈ 34 fails (chance
// 0.3 % for a right interval); a count of 40 every time would not be
// evidence of too wide intervals, so the half-width is bounded instead by
// the precision target.
func TestSplitCoverage(t *testing.T) {
	const seeds, level = 40, 15
	sc := mm1(t, 0.6, 1, 1000)
	exact := exactMM1(t, 0.6, 1, level, time.Minute)
	var covered atomic.Int32
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for s := range seeds {
		g.Go(func() error {
			est, err := Split(context.Background(), sc, Options{Level: systemLevel(level), Within: time.Minute, Precision: 0.4, Effort: 50, Seed: uint64(1000 + s)})
			if err != nil {
				return err
			}
			if est.CI95[0] <= exact && exact <= est.CI95[1] {
				covered.Add(1)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d of %d intervals hold the exact %.4g", covered.Load(), seeds, exact)
	if covered.Load() < 34 {
		t.Errorf("%d of %d 95%% intervals hold the exact value; want at least 34", covered.Load(), seeds)
	}
}

// BenchmarkSplitRare reports the events one estimate spends at 1e-6
// (M/M/1, λ = 0.6, μ = 1, level 28 within a minute) to ±50 % at 95 %,
// against plain Monte Carlo's expected cost for the same precision:
// (1−p)/p/rel² runs, rel = 0.5/1.96 the relative standard error, times the
// events of a run (measured here on plain runs).
func BenchmarkSplitRare(b *testing.B) {
	const level = 28
	sc := mm1(b, 0.6, 1, 1000)
	p := exactMM1(b, 0.6, 1, level, time.Minute)
	var events uint64
	var est *Estimate
	for i := 0; b.Loop(); i++ {
		var err error
		est, err = Split(context.Background(), sc, Options{Level: systemLevel(level), Within: time.Minute, Precision: 0.5, Seed: uint64(i + 1)})
		if err != nil {
			b.Fatal(err)
		}
		events += est.Events
	}
	b.StopTimer()
	perEstimate := float64(events) / float64(b.N)
	// events of a plain run: a minute of this queue, averaged over 200 runs
	var plainEvents uint64
	for i := range 200 {
		c := *sc
		c.Seed, c.Duration = uint64(i+1), time.Minute
		tr, _ := sim.Start(&c)
		for tr.Step(time.Minute) {
		}
		plainEvents += tr.Events()
		tr.Close()
	}
	rel := 0.5 / 1.96
	plain := (1 - p) / p / (rel * rel) * float64(plainEvents) / 200
	b.ReportMetric(perEstimate, "events/estimate")
	b.ReportMetric(plain, "plain-events/estimate")
	b.ReportMetric(plain/perEstimate, "speedup")
	b.Logf("p = %.3g: splitting %.3g events (estimate %.3g), plain Monte Carlo %.3g", p, perEstimate, est.Probability, plain)
}

// TestSplitExtrapolatesLongHorizon checks the long-horizon path: an hour
// of the M/M/1 (level 20) from five simulated minutes against the exact
// hour. The extrapolation assumes runs forget the empty start within the
// first 2.5 minutes (the queue relaxes in about 1/(√μ−√λ)² ≈ 20 s); its
// bias is then far below the 95 % half-width, and the exact value must lie
// within twice it.
func TestSplitExtrapolatesLongHorizon(t *testing.T) {
	sc := mm1(t, 0.6, 1, 1000)
	exact := exactMM1(t, 0.6, 1, 20, time.Hour)
	est, err := Split(context.Background(), sc, Options{Level: systemLevel(20), Within: time.Hour, Horizon: 5 * time.Minute, Precision: 0.2, MeanTime: true})
	if err != nil {
		t.Fatal(err)
	}
	half := (est.CI95[1] - est.CI95[0]) / 2
	t.Logf("exact %.4g, extrapolated %.4g [%.4g, %.4g], %d events", exact, est.Probability, est.CI95[0], est.CI95[1], est.Events)
	if math.Abs(est.Probability-exact) > 2*half {
		t.Errorf("extrapolated %.4g ± %.2g, exact %.4g", est.Probability, half, exact)
	}
	// The mean passage time is about 1/rate once the start is forgotten:
	// the exact mean must lie within the interval of 1/rate widened to
	// twice its half-widths (the same 3.9 standard errors as above).
	ch := BirthDeath(20, 20, func(int) float64 { return 0.6 }, func(int) float64 { return 1 })
	p, err := ch.Solve(0, 1, true)
	if err != nil {
		t.Fatal(err)
	}
	if est.MeanTimeS == nil || est.RateCI95 == nil {
		t.Fatalf("no mean time or rate: %+v", est)
	}
	r, lo, hi := est.RatePerS, est.RateCI95[0], est.RateCI95[1]
	wideLo, wideHi := 1/(r+2*(hi-r)), 1/max(r-2*(r-lo), r/100)
	t.Logf("mean passage: exact %.4g s, fitted %.4g s, 1/rate in [%.4g, %.4g]", p.MeanTime, *est.MeanTimeS, wideLo, wideHi)
	if p.MeanTime < wideLo || p.MeanTime > wideHi || *est.MeanTimeS < wideLo || *est.MeanTimeS > wideHi {
		t.Errorf("mean passage: exact %.4g s, fitted %.4g s, want both within [%.4g, %.4g]", p.MeanTime, *est.MeanTimeS, wideLo, wideHi)
	}
}

// TestSplitIsDeterministic: the same scenario and seed give the same
// estimate, to the last event.
func TestSplitIsDeterministic(t *testing.T) {
	sc := mm1(t, 0.6, 1, 1000)
	opt := Options{Level: systemLevel(14), Within: time.Minute, Precision: 0.5, Effort: 30}
	a, err := Split(context.Background(), sc, opt)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Split(context.Background(), sc, opt)
	if err != nil {
		t.Fatal(err)
	}
	if a.Probability != b.Probability || a.CI95 != b.CI95 || a.Events != b.Events || a.Runs != b.Runs {
		t.Errorf("two estimates with one seed differ: %+v and %+v", a, b)
	}
	opt.Seed = 99
	c, err := Split(context.Background(), sc, opt)
	if err != nil {
		t.Fatal(err)
	}
	if c.Probability == a.Probability && c.Events == a.Events {
		t.Error("another seed gave the same estimate")
	}
}

// TestSplitBudget: an estimate that runs out of events after a few batches
// returns them and says so; one that cannot finish its pilot fails.
func TestSplitBudget(t *testing.T) {
	sc := mm1(t, 0.6, 1, 1000)
	est, err := Split(context.Background(), sc, Options{Level: systemLevel(14), Within: time.Minute, Precision: 0.01, MaxEvents: 400_000})
	if err != nil {
		t.Fatal(err)
	}
	if est.Batches < 2 || len(est.Notes) == 0 || !strings.Contains(est.Notes[0], "event budget") {
		t.Errorf("budget-stopped estimate: %d batches, notes %q", est.Batches, est.Notes)
	}
	if est.Events < 400_000 || est.Events > 600_000 {
		t.Errorf("spent %d events of a 400000 budget (a batch may finish past it)", est.Events)
	}
	if _, err := Split(context.Background(), sc, Options{Level: systemLevel(30), Within: time.Minute, MaxEvents: 10_000}); err == nil || !strings.Contains(err.Error(), "event budget spent") {
		t.Errorf("pilot over budget: %v", err)
	}
}
