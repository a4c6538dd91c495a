package capacity

import (
	"context"
	"fmt"
	"math"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/stormsim/stormsim/analysis"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/sim"
	"github.com/stormsim/stormsim/topology"
)

// These tests run the real simulator on queues whose sojourn-time
// distribution is known in closed form, and check the search's confidence
// statements against the theory.

var simRun = analysis.RunnerFunc(func(ctx context.Context, sc *topology.Scenario) (*metrics.Result, error) {
	return sim.Run(ctx, sc, sim.Options{})
})

func loadBuilder(t *testing.T, path string, sets ...string) (*topology.Scenario, analysis.Builder) {
	t.Helper()
	base, err := topology.Load(path, sets)
	if err != nil {
		t.Fatal(err)
	}
	return base, analysis.ScenarioBuilder(base, nil)
}

// erlangC is the probability that an arrival waits in an M/M/c queue with
// offered load a = λ/μ < c.
func erlangC(c int, a float64) float64 {
	// Erlang B by its stable recursion, then C = B / (1 − ρ(1 − B)).
	b := 1.0
	for k := 1; k <= c; k++ {
		b = a * b / (float64(k) + a*b)
	}
	rho := a / float64(c)
	return b / (1 - rho*(1-b))
}

// sojournTail is P(W > t) for the sojourn time W (wait plus service) of an
// M/M/c queue: the wait is 0 with probability 1 − C and otherwise
// exponential with rate θ = cμ − λ, and the service is exponential with
// rate μ, independent of it.
func sojournTail(c int, mu, lambda, t float64) float64 {
	C := erlangC(c, lambda/mu)
	theta := float64(c)*mu - lambda
	var both float64 // P(Exp(θ) + Exp(μ) > t)
	if math.Abs(theta-mu) < 1e-9*mu {
		both = (1 + mu*t) * math.Exp(-mu*t)
	} else {
		both = (theta*math.Exp(-mu*t) - mu*math.Exp(-theta*t)) / (theta - mu)
	}
	return (1-C)*math.Exp(-mu*t) + C*both
}

// sojournP99 solves P(W > t) = 0.01 for t, in milliseconds.
func sojournP99(c int, mu, lambda float64) float64 {
	lo, hi := 0.0, 1000.0
	for range 200 {
		m := (lo + hi) / 2
		if sojournTail(c, mu, lambda, m) > 0.01 {
			lo = m
		} else {
			hi = m
		}
	}
	return lo * 1000
}

// capacityFor solves sojournP99(c, μ, λ) = limit for λ.
func capacityFor(c int, mu, limitMs float64) float64 {
	lo, hi := 0.0, float64(c)*mu*(1-1e-9)
	for range 200 {
		m := (lo + hi) / 2
		if sojournP99(c, mu, m) < limitMs {
			lo = m
		} else {
			hi = m
		}
	}
	return lo
}

func TestTheoryHelpers(t *testing.T) {
	// M/M/1: P(W > t) = e^{−(μ−λ)t}, so p99 = ln(100)/(μ − λ).
	if got, want := sojournP99(1, 1000, 700), 1000*math.Log(100)/300; math.Abs(got-want) > 1e-6 {
		t.Errorf("M/M/1 p99 %g, want %g", got, want)
	}
	if got, want := capacityFor(1, 1000, 20), 1000-1000*math.Log(100)/20; math.Abs(got-want) > 1e-3 {
		t.Errorf("M/M/1 capacity %g, want %g", got, want)
	}
	// Erlang C for c = 2, a = 1: 1/3.
	if got := erlangC(2, 1); math.Abs(got-1.0/3) > 1e-12 {
		t.Errorf("C(2, 1) = %g, want 1/3", got)
	}
}

// checkAgainstTheory checks a capacity search on an M/M/c queue:
//   - the holding point's theoretical p99 is below the limit and the
//     failing point's above it (each statement is made at 95 %
//     confidence, less the histogram's 0.1 % quantization);
//   - at every evaluated point in the stable region the mean simulated p99
//     agrees with theory within t(0.9995, n−1)·sd/√n (a 99.9 % two-sided
//     check of the simulator, the figures the search's confidence rests on);
//   - the bracket is no wider than the unsure zone its own half-widths
//     imply: 2·(h_holds + h_fails)/slope, plus the resolution.
func checkAgainstTheory(t *testing.T, out *Outcome, c int, mu, limitMs float64) {
	t.Helper()
	lambdaStar := capacityFor(c, mu, limitMs)
	a := out.Answer()
	t.Logf("theory λ* = %.1f; holds at %.1f, not shown at %.1f, fails at %.1f; %d runs",
		lambdaStar, a.HoldsAt, a.NotShownAt, a.FailsAt, out.Runs)
	if a.Status != "bracketed" || math.IsNaN(a.FailsAt) {
		t.Fatalf("answer %+v: want a bracket with a failing point", a)
	}
	const quant = 1.001 // hdrhistogram: 3 significant digits
	if p := sojournP99(c, mu, a.HoldsAt); p > limitMs*quant {
		t.Errorf("holds at %.1f, where theory's p99 is %.2fms > %gms", a.HoldsAt, p, limitMs)
	}
	if p := sojournP99(c, mu, a.FailsAt); p < limitMs/quant {
		t.Errorf("fails at %.1f, where theory's p99 is %.2fms < %gms", a.FailsAt, p, limitMs)
	}
	for _, p := range out.Points {
		if p.Value/(float64(c)*mu) > 0.9 {
			continue // near saturation a short run has not reached steady state
		}
		// Points near the boundary were judged with more replicas.
		n := len(p.Replicas)
		tq := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(n - 1)}.Quantile(0.9995)
		ts := p.Terms[0]
		theory := sojournP99(c, mu, p.Value)
		if d := math.Abs(ts.Mean - theory); d > tq*ts.SD/math.Sqrt(float64(n))+theory*(quant-1) {
			t.Errorf("λ=%.1f: simulated p99 %.2f ± %.2f (sd %.2f, n %d), theory %.2f", p.Value, ts.Mean, tq*ts.SD/math.Sqrt(float64(n)), ts.SD, n, theory)
		}
	}
	slope := (sojournP99(c, mu, lambdaStar+0.5) - sojournP99(c, mu, lambdaStar-0.5)) // ms per req/s
	var hp, hf float64
	for _, p := range out.Points {
		if p.Value == a.HoldsAt {
			hp = p.Terms[0].Upper - p.Terms[0].Mean
		}
		if p.Value == a.FailsAt {
			hf = p.Terms[0].Upper - p.Terms[0].Mean
		}
	}
	width := 2*(hp+hf)/slope + out.Search.withDefaults().Resolution
	if a.FailsAt-a.HoldsAt > width {
		t.Errorf("bracket %.1f..%.1f is wider than the %.1f its half-widths (%.2f, %.2f ms) imply", a.HoldsAt, a.FailsAt, width, hp, hf)
	}
}

func TestCapacityMM1(t *testing.T) {
	// μ = 1000/s, SLO p99 < 20ms: λ* = 1000 − 1000·ln(100)/20 ≈ 769.7/s.
	_, build := loadBuilder(t, "testdata/mm1.yaml", "duration=40s")
	slo, _ := ParseSLO("p99<20ms")
	s := Search{Param: "workload.rate", Lo: 600, Hi: 950, Resolution: 3, Replicas: 5, SLO: slo, Orientation: HoldsBelow}
	out, err := Run(context.Background(), simRun, build, s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkAgainstTheory(t, out, 1, 1000, 20)
}

func TestCapacityMMc(t *testing.T) {
	// Four servers at μ = 250/s, SLO p99 < 30ms: λ* ≈ 822.3/s from Erlang C.
	_, build := loadBuilder(t, "testdata/mmc.yaml")
	slo, _ := ParseSLO("p99<30ms")
	s := Search{Param: "workload.rate", Lo: 600, Hi: 980, Resolution: 3, Replicas: 5, SLO: slo, Orientation: HoldsBelow}
	out, err := Run(context.Background(), simRun, build, s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkAgainstTheory(t, out, 4, 250, 30)
}

func TestSolveWorkersSim(t *testing.T) {
	// At λ = 900/s with μ = 250/s per worker, theory gives p99 = 48.8ms
	// with 4 workers and 21.0ms with 5: the smallest count meeting p99 <
	// 30ms is 5. The search must say so, and evaluating 5 and 4 directly
	// must show 5 holding and 4 not.
	base, build := loadBuilder(t, "testdata/mmc.yaml", "duration=20s")
	if p4, p5 := sojournP99(4, 250, 900), sojournP99(5, 250, 900); !(p4 > 30 && p5 < 30) {
		t.Fatalf("theory: p99 %g with 4 workers, %g with 5", p4, p5)
	}
	slo, _ := ParseSLO("p99<30ms")
	plan := &Plan{Base: base, Build: build, SkipCapacity: true, Target: 900,
		Search: Search{Param: "workload.rate", Replicas: 3, SLO: slo},
		Solves: []SolveSpec{{Path: "services.srv.workers", Lo: 1, Hi: 12}}}
	rep, err := plan.Run(context.Background(), simRun, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Solves) != 1 || rep.Capacity != nil {
		t.Fatalf("report: %d solves, capacity %v", len(rep.Solves), rep.Capacity)
	}
	sv := rep.Solves[0]
	if got := sv.Short(); got != "≥ 5" {
		t.Fatalf("solve says %q, want ≥ 5", got)
	}
	pts, err := Evaluate(context.Background(), simRun, build, sv.Outcome.Search, Options{}, 5, 4)
	if err != nil {
		t.Fatal(err)
	}
	if pts[0].Verdict != Holds || pts[1].Verdict == Holds {
		t.Errorf("5 workers: %v, 4 workers: %v; want holds and not", pts[0].Verdict, pts[1].Verdict)
	}
}

// TestCapacityPrecision runs the search as `stormsim capacity` does by
// default (three replicas, the default range around the scenario's 700/s)
// on the M/M/1 queue: replicas added near the boundary must narrow the
// bracket to the asked precision, and the bracket must still hold the
// theory's capacity with the checks of checkAgainstTheory. Without them
// (NoRefine) the same search leaves a bracket wider than ±2 %.
func TestCapacityPrecision(t *testing.T) {
	base, build := loadBuilder(t, "testdata/mm1.yaml")
	slo, _ := ParseSLO("p99<20ms")
	lo, hi, err := DefaultRange("workload.rate", Real, base.Workload.Rate)
	if err != nil {
		t.Fatal(err)
	}
	lambdaStar := capacityFor(1, 1000, 20)
	for _, tc := range []struct {
		precision float64
		want      float64 // the half-width asked for, as a share
		maxRuns   int
	}{
		{0, DefaultPrecision, 0},
		{0.01, 0.01, 3000},
		{NoRefine, math.Inf(1), 0},
	} {
		t.Run(fmt.Sprint(tc.precision), func(t *testing.T) {
			s := Search{Param: "workload.rate", Lo: lo, Hi: hi, SLO: slo, Precision: tc.precision, MaxRuns: tc.maxRuns}
			out, err := Run(context.Background(), simRun, build, s, Options{})
			if err != nil {
				t.Fatal(err)
			}
			a := out.Answer()
			half := (a.FailsAt - a.HoldsAt) / 2 / ((a.FailsAt + a.HoldsAt) / 2)
			t.Logf("holds at %.1f, fails at %.1f: ±%.2f%%, %d runs, up to %d replicas %s", a.HoldsAt, a.FailsAt, 100*half, out.Runs, out.MaxReplicas, out.Imprecise)
			if math.IsInf(tc.want, 1) {
				if half <= DefaultPrecision || out.MaxReplicas != DefaultReplicas {
					t.Errorf("without refinement: ±%.2f%% with up to %d replicas; want the 3-replica bracket, wider than ±2%%", 100*half, out.MaxReplicas)
				}
				return
			}
			if out.Imprecise != "" {
				t.Fatalf("stopped before the precision: %s", out.Imprecise)
			}
			if half > tc.want {
				t.Errorf("bracket %.1f..%.1f is ±%.2f%%, want within ±%g%%", a.HoldsAt, a.FailsAt, 100*half, 100*tc.want)
			}
			if !(a.HoldsAt <= lambdaStar && lambdaStar <= a.FailsAt) {
				t.Errorf("bracket %.1f..%.1f does not contain λ* = %.1f", a.HoldsAt, a.FailsAt, lambdaStar)
			}
			if bound := out.Search.withDefaults().MaxRuns; out.Runs > bound {
				t.Errorf("%d runs, more than the bound %d", out.Runs, bound)
			}
			checkAgainstTheory(t, out, 1, 1000, 20)
		})
	}
}

// TestCapacityRunBound checks that the run bound stops the rounds and
// that the outcome says so.
func TestCapacityRunBound(t *testing.T) {
	_, build := loadBuilder(t, "testdata/mm1.yaml")
	slo, _ := ParseSLO("p99<20ms")
	s := Search{Param: "workload.rate", Lo: 175, Hi: 2800, SLO: slo, Precision: 0.001, MaxRuns: 120}
	out, err := Run(context.Background(), simRun, build, s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if out.Imprecise == "" || out.Runs > 120 {
		t.Errorf("runs %d (bound 120), imprecise %q: want the bound to stop the search and say so", out.Runs, out.Imprecise)
	}
}

// TestSolveReplicasSim answers "how many pods": M/M/1 replicas behind a
// random balancer are each M/M/1 at λ/N, with p99 = ln(100)/(μ − λ/N). At
// λ = 3000/s and μ = 1000/s that is 18.4 ms with 4 replicas and unbounded
// with 3 (ρ = 1): the smallest count meeting p99 < 20ms is 4.
func TestSolveReplicasSim(t *testing.T) {
	base, build := loadBuilder(t, "testdata/mm1.yaml", "duration=20s", "workload.client.balance=random")
	p99 := func(n float64) float64 { return math.Log(100) / (1000 - 3000/n) * 1000 }
	if p4 := p99(4); !(p4 < 20) {
		t.Fatalf("theory: p99 %g ms with 4 replicas", p4)
	}
	slo, _ := ParseSLO("p99<20ms")
	plan := &Plan{Base: base, Build: build, SkipCapacity: true, Target: 3000,
		Search: Search{Param: "workload.rate", Replicas: 3, SLO: slo},
		Solves: []SolveSpec{{Path: "services.srv.replicas", Lo: 1, Hi: 8}}}
	rep, err := plan.Run(context.Background(), simRun, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := rep.Solves[0].Short(); got != "≥ 4" {
		t.Fatalf("solve says %q, want ≥ 4", got)
	}
}
