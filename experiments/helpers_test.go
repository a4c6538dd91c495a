package experiments

import (
	"context"
	"math"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/stormsim/stormsim/analysis"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/sim"
	"github.com/stormsim/stormsim/topology"
)

// run describes one simulation of an experiment: a variant ("" for the
// scenario as written) and extra overrides, such as another seed.
type run struct {
	variant string
	sets    []string
}

// scenario loads a canned experiment, its variant and overrides applied.
func scenario(t testing.TB, name string, r run) *topology.Scenario {
	t.Helper()
	data, ok := Lookup(name)
	if !ok {
		t.Fatalf("no experiment %q", name)
	}
	sc, err := topology.Parse(name+".yaml", data, nil)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if r.variant != "" {
		if sc, err = sc.Variant(r.variant); err != nil {
			t.Fatalf("%s: variant %s: %v", name, r.variant, err)
		}
	}
	if len(r.sets) > 0 {
		if sc, err = sc.WithSets(r.sets...); err != nil {
			t.Fatalf("%s: %v: %v", name, r.sets, err)
		}
	}
	return sc
}

// simulate runs every scenario, up to GOMAXPROCS at a time, and returns
// the results in the same order. A run that did not complete fails the
// test: every experiment is sized to finish.
func simulate(t testing.TB, scs []*topology.Scenario) []*metrics.Result {
	t.Helper()
	out := make([]*metrics.Result, len(scs))
	errs := make([]error, len(scs))
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, sc := range scs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			out[i], errs[i] = sim.Run(context.Background(), sc, sim.Options{})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("%s (seed %d): %v", scs[i].Name, scs[i].Seed, err)
		}
		if s := out[i].Summary.Status; s != sim.StatusComplete {
			t.Fatalf("%s (seed %d): status %s, want complete", scs[i].Name, scs[i].Seed, s)
		}
	}
	return out
}

// runExperiment simulates the named experiment under each run.
func runExperiment(t testing.TB, name string, runs ...run) []*metrics.Result {
	t.Helper()
	scs := make([]*topology.Scenario, len(runs))
	for i, r := range runs {
		scs[i] = scenario(t, name, r)
	}
	return simulate(t, scs)
}

// seeds returns n runs of a variant with seeds 1…n.
func seeds(variant string, n int) []run {
	out := make([]run, n)
	for i := range out {
		out[i] = run{variant: variant, sets: []string{"seed=" + strconv.Itoa(i+1)}}
	}
	return out
}

// service returns a service's summary.
func service(t testing.TB, r *metrics.Result, name string) metrics.ServiceSummary {
	t.Helper()
	for _, s := range r.Summary.Services {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("%s: no service %q in the summary", r.Summary.Scenario, name)
	return metrics.ServiceSummary{}
}

// edge returns an edge's summary.
func edge(t testing.TB, r *metrics.Result, from, to string) metrics.EdgeSummary {
	t.Helper()
	for _, e := range r.Summary.Edges {
		if e.From == from && e.To == to {
			return e
		}
	}
	t.Fatalf("%s: no edge %s->%s in the summary", r.Summary.Scenario, from, to)
	return metrics.EdgeSummary{}
}

// window sums a series column over the intervals that start in [from, to).
func window(t testing.TB, r *metrics.Result, column string, from, to time.Duration) float64 {
	t.Helper()
	ts := r.Series
	i := ts.Column(column)
	if i < 0 {
		t.Fatalf("%s: no series column %q", r.Summary.Scenario, column)
	}
	sum := 0.0
	for k, row := range ts.Rows {
		start := ts.Start + time.Duration(k)*ts.Interval
		if start >= from && start < to {
			sum += row[i]
		}
	}
	return sum
}

// verdict judges a run with analysis' metastability detector, defaults as
// documented there.
func verdict(t testing.TB, sc *topology.Scenario, r *metrics.Result) analysis.Verdict {
	t.Helper()
	return verdictWith(t, sc, r, analysis.DetectorConfig{})
}

// verdictWith judges a run with the detector configured by cfg.
func verdictWith(t testing.TB, sc *topology.Scenario, r *metrics.Result, cfg analysis.DetectorConfig) analysis.Verdict {
	t.Helper()
	s, err := analysis.SeriesOf(r, sc.Duration)
	if err != nil {
		t.Fatal(err)
	}
	trig, err := analysis.TriggerOf(sc)
	if err != nil {
		t.Fatal(err)
	}
	v, err := analysis.Detect(s, sc.Warmup, trig, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// slowFraction returns the share of a histogram's values (µs) at or above
// threshold.
func slowFraction(r *metrics.Result, threshold time.Duration) (frac float64, n int64) {
	h := r.Latency
	n = h.TotalCount()
	if n == 0 {
		return 0, 0
	}
	var slow int64
	for _, b := range h.Distribution() {
		if b.From >= int64(threshold/time.Microsecond) {
			slow += b.Count
		}
	}
	return float64(slow) / float64(n), n
}

// meanSD returns the sample mean and standard deviation.
func meanSD(xs []float64) (mean, sd float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		sd += (x - mean) * (x - mean)
	}
	if len(xs) > 1 {
		sd = math.Sqrt(sd / float64(len(xs)-1))
	}
	return mean, sd
}

// zStrict is the number of standard errors every statistical assertion
// allows: a correct model fails one with probability ≈ 6·10⁻⁵ (two-sided
// normal), so the package's few dozen assertions fail together by chance
// well under once in a hundred runs — and each is deterministic for its
// seed anyway.
const zStrict = 4.0

// within fails unless |got − want| ≤ zStrict·se.
func within(t testing.TB, what string, got, want, se float64) {
	t.Helper()
	if d := math.Abs(got - want); d > zStrict*se {
		t.Errorf("%s = %.5g, want %.5g ± %.3g (%.1f standard errors of %.3g off)", what, got, want, zStrict*se, d/se, se)
	} else {
		t.Logf("%s = %.5g, want %.5g ± %.3g", what, got, want, zStrict*se)
	}
}

// less fails unless a is below b by more than zStrict standard errors of
// their difference.
func less(t testing.TB, what string, a, b, se float64) {
	t.Helper()
	if !(b-a > zStrict*se) {
		t.Errorf("%s: %.5g vs %.5g, want the first lower by more than %.3g (4 standard errors)", what, a, b, zStrict*se)
	} else {
		t.Logf("%s: %.5g < %.5g (difference %.1f standard errors)", what, a, b, (b-a)/se)
	}
}

// welchSE is the standard error of the difference of two sample means.
func welchSE(a, b []float64) float64 {
	_, sa := meanSD(a)
	_, sb := meanSD(b)
	return math.Sqrt(sa*sa/float64(len(a)) + sb*sb/float64(len(b)))
}

// poissonSE is the standard error of the difference of two counts when
// each is (at least as noisy as) a Poisson count: √(a + b).
func poissonSE(a, b float64) float64 { return math.Sqrt(a + b) }

// withinT fails unless the mean of independent replicas xs is within
// t·s/√n of want, t Student's quantile at the two-sided level of zStrict.
func withinT(t testing.TB, what string, xs []float64, want float64) {
	t.Helper()
	m, sd := meanSD(xs)
	n := float64(len(xs))
	level := math.Erfc(zStrict / math.Sqrt2) // two-sided tail of ±zStrict
	tq := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: n - 1}.Quantile(1 - level/2)
	half := tq * sd / math.Sqrt(n)
	if math.Abs(m-want) > half {
		t.Errorf("%s = %.5g, want %.5g ± %.3g (t = %.2f, %d replicas)", what, m, want, half, tq, len(xs))
	} else {
		t.Logf("%s = %.5g, want %.5g ± %.3g (%d replicas)", what, m, want, half, len(xs))
	}
}
