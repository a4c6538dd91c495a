package capacity

import (
	"context"
	"errors"
	"math"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stormsim/stormsim/analysis"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/topology"
)

func TestSearchNoiseFree(t *testing.T) {
	// Without noise the boundary is exactly λ* = 500 (p99 = 10/(1−λ/1000)
	// = 20ms); the search must bracket it within its resolution, with the
	// holding point below and the failing one above.
	var calls atomic.Int64
	s := Search{Param: "workload.rate", Lo: 100, Hi: 900, Resolution: 1, Replicas: 3, SLO: fakeSLO(), Orientation: HoldsBelow}
	lastDone, progressOK := 0, true
	progress := func(done, total int) {
		progressOK = progressOK && done == lastDone+1 && done <= total && total == max(3*(2+s.MaxSteps()), DefaultMaxRuns)
		lastDone = done
	}
	out, err := Run(context.Background(), fakeRunner(0, &calls), fakeBuilder(false, math.Inf(1)), s, Options{Workers: 2, Progress: progress})
	if err != nil {
		t.Fatal(err)
	}
	if !progressOK || lastDone != out.Runs {
		t.Errorf("progress: last %d of %d runs; want one call per run, within the stated total", lastDone, out.Runs)
	}
	a := out.Answer()
	if a.Status != "bracketed" {
		t.Fatalf("status %q, want bracketed", a.Status)
	}
	if !(a.HoldsAt < 500 && a.NotShownAt >= 500 && a.NotShownAt-a.HoldsAt <= 1) {
		t.Errorf("holds at %g, not shown at %g: want a bracket of width ≤ 1 around 500", a.HoldsAt, a.NotShownAt)
	}
	// Noise-free replicas agree exactly, so nothing is unsure: the first
	// point not shown to hold is shown to fail.
	if a.FailsAt != a.NotShownAt {
		t.Errorf("fails at %g, not shown at %g: noise-free points cannot be unsure", a.FailsAt, a.NotShownAt)
	}
	if out.Bound() != "steady state" {
		t.Errorf("bound %q, want steady state", out.Bound())
	}
	maxRuns := 3 * (2 + s.MaxSteps())
	if out.Runs > maxRuns || int(calls.Load()) != out.Runs {
		t.Errorf("%d runs (runner called %d times), want ≤ %d", out.Runs, calls.Load(), maxRuns)
	}
	// ⌈log2(800/1)⌉ = 10 steps for the first phase; a brute grid would take 800 points.
	if out.Steps > 10 {
		t.Errorf("%d steps, want ≤ 10 (bisection of 800 to 1)", out.Steps)
	}
	b, ok := out.Bottleneck()
	if !ok || b.Service != "db" {
		t.Errorf("bottleneck %+v, want db", b)
	}
}

func TestSearchDeterministic(t *testing.T) {
	// Same inputs, any number of workers: the same points, verdicts and
	// replica seeds; replica r has the same seed at every point.
	s := Search{Param: "workload.rate", Lo: 100, Hi: 900, Replicas: 4, SLO: fakeSLO(), Orientation: HoldsBelow}
	var outs []*Outcome
	for _, w := range []int{1, 4} {
		out, err := Run(context.Background(), fakeRunner(0.1, nil), fakeBuilder(false, math.Inf(1)), s, Options{Workers: w})
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, out)
	}
	if !reflect.DeepEqual(outs[0].Points, outs[1].Points) {
		t.Fatal("points differ between 1 and 4 workers")
	}
	for _, p := range outs[0].Points {
		for r, rep := range p.Replicas {
			if want := analysis.ReplicaSeed(7, r); rep.Seed != want {
				t.Fatalf("point %g replica %d: seed %d, want %d (common random numbers)", p.Value, r, rep.Seed, want)
			}
		}
	}
	// The runs of a point are a pure function of the search and the value.
	if !reflect.DeepEqual(s.Runs(432.5, true), s.Runs(432.5, true)) || len(s.Runs(432.5, true)) != 8 {
		t.Errorf("Runs: %v", s.Runs(432.5, true))
	}
}

func TestSearchNoisyConfidence(t *testing.T) {
	// With noise σ = 0.1 on p99 and n replicas, the holding point's
	// one-sided bound sits below the threshold, so the true mean p99 there
	// is below 20 ms·E[e^{σz}] and λ at the holding point is below the
	// noise-free boundary; the point shown to fail is above it. Between
	// them the search may be unsure, but never inverted.
	s := Search{Param: "workload.rate", Lo: 100, Hi: 900, Resolution: 2, Replicas: 8, SLO: fakeSLO(), Orientation: HoldsBelow}
	out, err := Run(context.Background(), fakeRunner(0.1, nil), fakeBuilder(false, math.Inf(1)), s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := out.Answer()
	// E[p99] = 10/(1−ρ)·e^{σ²/2}; it equals 20 at ρ* = 1 − e^{0.005}/2.
	lambdaStar := 1000 * (1 - math.Exp(0.005)/2)
	if !(a.HoldsAt < lambdaStar) {
		t.Errorf("holds at %g, above the true boundary %g", a.HoldsAt, lambdaStar)
	}
	if !(a.FailsAt > lambdaStar) {
		t.Errorf("fails at %g, below the true boundary %g", a.FailsAt, lambdaStar)
	}
	if !(a.HoldsAt < a.NotShownAt && a.NotShownAt <= a.FailsAt) {
		t.Errorf("answer out of order: %+v", a)
	}
	// Every point between the holding and the failing one is unsure.
	for _, p := range out.Points {
		if p.Value > a.HoldsAt && p.Value < a.FailsAt && p.Verdict != Unsure {
			t.Errorf("point %g between the bracket ends is %v, want unsure", p.Value, p.Verdict)
		}
	}
}

func TestSearchRecoveryBound(t *testing.T) {
	// The fake storms after the fault above λ = 300, below its
	// steady-state capacity of 500: the answer is bound by recovery.
	s := Search{Param: "workload.rate", Lo: 100, Hi: 900, Resolution: 2, Replicas: 3, SLO: fakeSLO(), Orientation: HoldsBelow,
		Detector: analysis.DetectorConfig{RecoveryBound: 5 * time.Second}}
	out, err := Run(context.Background(), fakeRunner(0, nil), fakeBuilder(true, 300), s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := out.Answer()
	if !(a.HoldsAt < 300 && a.NotShownAt >= 300) {
		t.Errorf("holds at %g, not shown at %g: want the storm threshold 300 bracketed", a.HoldsAt, a.NotShownAt)
	}
	if out.Bound() != "recovery" {
		t.Errorf("bound %q, want recovery", out.Bound())
	}
	if !out.HasFaults || out.FailPoint().Recovered != 0 || out.PassPoint().Recovered != 3 {
		t.Errorf("recovered %d at the failing point, %d at the holding one", out.FailPoint().Recovered, out.PassPoint().Recovered)
	}
	// Its budgeted twin (no storm) is bound by the steady state at 500.
	twin, err := Run(context.Background(), fakeRunner(0, nil), fakeBuilder(true, math.Inf(1)), s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tw := twin.Answer(); !(tw.HoldsAt > a.HoldsAt && tw.NotShownAt >= 500 && twin.Bound() == "steady state") {
		t.Errorf("twin: %+v bound %q; want a higher capacity bound by the steady state", tw, twin.Bound())
	}
	var buf strings.Builder
	rep := &Report{Scenario: "fake", Param: "workload.rate", Current: 500, Capacity: out}
	if err := rep.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"bound by: recovery", "recovered in 0 of 3 replicas", "headroom: NONE", "Clopper–Pearson"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, buf.String())
		}
	}
}

func TestSolveWorkers(t *testing.T) {
	// At λ = 730 the fake needs p99 = 10/(1−730/(100W)) < 20, i.e. W > 14.6:
	// the smallest sufficient integer is 15, found as "holds above".
	s := Search{Param: "services.db.workers", Kind: Integer, Lo: 1, Hi: 64, Replicas: 2, SLO: fakeSLO(),
		Fixed: []string{"workload.rate=730"}}
	var calls atomic.Int64
	out, err := Run(context.Background(), fakeRunner(0, &calls), fakeBuilder(false, math.Inf(1)), s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if out.Orientation != HoldsAbove {
		t.Fatalf("orientation %v, want holds above", out.Orientation)
	}
	a := out.Answer()
	if a.HoldsAt != 15 || a.NotShownAt != 14 {
		t.Errorf("holds at %g, not shown at %g; want 15 and 14", a.HoldsAt, a.NotShownAt)
	}
	for _, p := range out.Points {
		if p.Value != math.Trunc(p.Value) {
			t.Errorf("integer search visited %g", p.Value)
		}
	}
	sv := Solve{Path: s.Param, Target: 730, Outcome: out}
	if got := sv.Short(); got != "≥ 15" {
		t.Errorf("Short() = %q, want ≥ 15", got)
	}
}

func TestSearchNoBracket(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		status string
	}{
		{100, 400, "holds everywhere"},
		{600, 900, "holds nowhere"},
	} {
		s := Search{Param: "workload.rate", Lo: tc.lo, Hi: tc.hi, Replicas: 2, SLO: fakeSLO(), Orientation: HoldsBelow}
		out, err := Run(context.Background(), fakeRunner(0, nil), fakeBuilder(false, math.Inf(1)), s, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if a := out.Answer(); a.Status != tc.status || out.Runs != 4 {
			t.Errorf("range %g:%g: %+v after %d runs, want %s after 4", tc.lo, tc.hi, a, out.Runs, tc.status)
		}
	}
}

func TestSearchErrors(t *testing.T) {
	boom := errors.New("boom")
	failing := analysis.RunnerFunc(func(ctx context.Context, sc *topology.Scenario) (*metrics.Result, error) { return nil, boom })
	s := Search{Param: "workload.rate", Lo: 100, Hi: 900, SLO: fakeSLO()}
	// A failing run fails its point, not the search (issue 17, item 3):
	// the point carries the runner's error, naming the point.
	out, err := Run(context.Background(), failing, fakeBuilder(false, math.Inf(1)), s, Options{})
	if err != nil || len(out.Failed()) == 0 || !strings.Contains(out.Failed()[0].Failed, "workload.rate=100 replica 0: boom") {
		t.Errorf("Run = %+v, %v: want the points failed with the runner's error, naming the point", out, err)
	}
	for _, tc := range []struct {
		s    Search
		want string
	}{
		{Search{Lo: 1, Hi: 2, SLO: fakeSLO()}, "no parameter"},
		{Search{Param: "workload.rate", Lo: 2, Hi: 2, SLO: fakeSLO()}, "want lo < hi"},
		{Search{Param: "workload.rate", Lo: 1, Hi: 2}, "no SLO"},
		{Search{Param: "workload.rate", Lo: 1, Hi: 2, SLO: fakeSLO(), Confidence: 1}, "confidence"},
		{Search{Param: "x", Kind: Integer, Lo: 1.2, Hi: 1.8, SLO: fakeSLO()}, "fewer than two integers"},
	} {
		if err := tc.s.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%+v) = %v, want %q", tc.s, err, tc.want)
		}
	}
	// An SLO naming a service the scenario lacks is reported before any run.
	bad, _ := ParseSLO("cache.utilization<0.5")
	_, err = Run(context.Background(), failing, fakeBuilder(false, math.Inf(1)), Search{Param: "workload.rate", Lo: 1, Hi: 2, SLO: bad}, Options{})
	if err == nil || !strings.Contains(err.Error(), `no service "cache"`) {
		t.Errorf("error %v, want no service cache", err)
	}
}

func TestSolveNone(t *testing.T) {
	// At λ = 5000 no worker count in 1..8 (at most 800 req/s) suffices:
	// the answer is "none in range", printed without made-up numbers.
	s := Search{Param: "services.db.workers", Kind: Integer, Lo: 1, Hi: 8, Replicas: 2, SLO: fakeSLO(), Fixed: []string{"workload.rate=5000"}}
	out, err := Run(context.Background(), fakeRunner(0, nil), fakeBuilder(false, math.Inf(1)), s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep := &Report{Scenario: "fake", Param: "workload.rate", Solves: []Solve{{Path: s.Param, Target: 5000, Outcome: out}}}
	var buf strings.Builder
	if err := rep.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "no value in 1:8 meets the SLO") || strings.Contains(buf.String(), "-922") {
		t.Errorf("report:\n%s", buf.String())
	}
}

func TestSolveAnyInRange(t *testing.T) {
	// At λ = 100 every worker count in 4..8 suffices: "any in range".
	s := Search{Param: "services.db.workers", Kind: Integer, Lo: 4, Hi: 8, Replicas: 2, SLO: fakeSLO(), Fixed: []string{"workload.rate=100"}}
	out, err := Run(context.Background(), fakeRunner(0, nil), fakeBuilder(false, math.Inf(1)), s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := (Solve{Path: s.Param, Outcome: out}).Short(); got != "any in range" {
		t.Errorf("Short() = %q, want any in range", got)
	}
}
