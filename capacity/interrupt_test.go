package capacity

import (
	"bytes"
	"context"
	"errors"
	"math"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stormsim/stormsim/analysis"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/topology"
)

// TestSearchInterruptedKeepsItsBracket: a search stopped by its context
// returns the points it judged and the bracket it had narrowed to, marked
// interrupted, with the error (issue 17, item 10: capacity wrote nothing).
func TestSearchInterruptedKeepsItsBracket(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var calls atomic.Int64
	inner := fakeRunner(0, nil)
	// 3 replicas per point: the two ends, then two bisection steps, finish;
	// the signal arrives during the third step's first run.
	run := analysis.RunnerFunc(func(ctx context.Context, sc *topology.Scenario) (*metrics.Result, error) {
		if calls.Add(1) == 13 {
			cancel()
		}
		return inner.Run(ctx, sc)
	})
	s := Search{Param: "workload.rate", Lo: 100, Hi: 900, Resolution: 1, Replicas: 3, SLO: fakeSLO(), Orientation: HoldsBelow}
	out, err := Run(ctx, run, fakeBuilder(false, math.Inf(1)), s, Options{Workers: 1})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want one wrapping context.Canceled", err)
	}
	if out == nil || !out.Interrupted {
		t.Fatalf("outcome %+v, want the interrupted search", out)
	}
	if len(out.Points) != 4 || out.Runs != 12 {
		t.Errorf("%d points from %d runs, want the 4 points of the 12 finished runs", len(out.Points), out.Runs)
	}
	// Steps at 500 (fails: p99 = 20ms is not below it) and 300 (holds):
	// the bracket is (300, 500), wider than the resolution but true.
	a := out.Answer()
	if a.Status != "bracketed" || a.HoldsAt != 300 || a.NotShownAt != 500 {
		t.Errorf("answer %+v, want bracketed between 300 and 500", a)
	}

	rep := &Report{Scenario: "fake", Param: s.Param, Capacity: out, Interrupted: true}
	var text, js bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(text.String(), "partial: interrupted") || !strings.Contains(text.String(), "holds at 300") {
		t.Errorf("text report:\n%s", text.String())
	}
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js.String(), `"interrupted": true`) {
		t.Errorf("JSON report does not say interrupted:\n%s", js.String())
	}
}

// TestSearchInterruptedBeforeTheEnds: stopped before any point was judged,
// the answer is "interrupted", not "holds nowhere".
func TestSearchInterruptedBeforeTheEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s := Search{Param: "workload.rate", Lo: 100, Hi: 900, Resolution: 1, Replicas: 3, SLO: fakeSLO(), Orientation: HoldsBelow}
	out, err := Run(ctx, fakeRunner(0, nil), fakeBuilder(false, math.Inf(1)), s, Options{Workers: 1})
	if err == nil || out == nil || !out.Interrupted {
		t.Fatalf("Run = %+v, %v; want the interrupted search and an error", out, err)
	}
	if a := out.Answer(); a.Status != "interrupted" {
		t.Errorf("status %q, want interrupted", a.Status)
	}
	// A failure that is not a signal is not an interruption: the search
	// finishes, its points marked failed (issue 17, item 3).
	out, err = Run(context.Background(), analysis.RunnerFunc(func(context.Context, *topology.Scenario) (*metrics.Result, error) {
		return nil, errors.New("boom")
	}), fakeBuilder(false, math.Inf(1)), s, Options{Workers: 1})
	if err != nil || out.Interrupted || len(out.Failed()) != 2 || !strings.Contains(out.Points[0].Failed, "boom") {
		t.Errorf("Run = %+v, %v; want a finished search with both ends failed by boom", out, err)
	}
}
