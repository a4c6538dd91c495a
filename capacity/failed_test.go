package capacity

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stormsim/stormsim/analysis"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/topology"
)

// failingAbove is the fake system, except that every run at a rate above
// limit errors, or panics when panics is set.
func failingAbove(limit float64, panics bool) analysis.Runner {
	inner := fakeRunner(0, nil)
	return analysis.RunnerFunc(func(ctx context.Context, sc *topology.Scenario) (*metrics.Result, error) {
		if sc.Workload.Rate > limit {
			if panics {
				panic(fmt.Sprintf("rate %g overflows", sc.Workload.Rate))
			}
			return nil, errors.New("rate out of range")
		}
		return inner.Run(ctx, sc)
	})
}

// TestSearchFailedPointsContinue: a run that errors or panics (issue 17,
// item 3) makes its point failed, which counts as not meeting the SLO: the
// search bisects below it and still brackets the true boundary, and the
// failed points are listed in the outcome, the text and the JSON.
func TestSearchFailedPointsContinue(t *testing.T) {
	// The fake's noise-free boundary is 500; runs above 700 fail. The
	// search over 100..900 meets the failure at its upper end (900) and
	// at the first bisection beyond 700 that it tries (800 is never tried:
	// it halves to 500 first), so the bracket stays around 500.
	for _, tc := range []struct {
		name   string
		panics bool
		reason string
	}{
		{"error", false, "rate out of range"},
		{"panic", true, "the run panicked: rate 900 overflows"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Search{Param: "workload.rate", Lo: 100, Hi: 900, Resolution: 1, Replicas: 3, SLO: fakeSLO(), Orientation: HoldsBelow}
			out, err := Run(context.Background(), failingAbove(700, tc.panics), fakeBuilder(false, math.Inf(1)), s, Options{Workers: 2})
			if err != nil {
				t.Fatalf("Run: %v; want the search to finish", err)
			}
			a := out.Answer()
			if a.Status != "bracketed" || !(a.HoldsAt < 500 && a.NotShownAt >= 500 && a.NotShownAt-a.HoldsAt <= 1) {
				t.Errorf("answer %+v, want a bracket of width ≤ 1 around 500", a)
			}
			failed := out.Failed()
			if len(failed) == 0 {
				t.Fatal("no failed points, want the upper end at least")
			}
			for _, p := range failed {
				if p.Value <= 700 || p.Verdict != Fails {
					t.Errorf("failed point %g has verdict %v, want only values above 700, failing", p.Value, p.Verdict)
				}
				want := fmt.Sprintf("capacity: workload.rate=%g replica 0: ", p.Value)
				if !strings.HasPrefix(p.Failed, want) {
					t.Errorf("reason %q, want it to name the run (%q…)", p.Failed, want)
				}
			}
			if top := failed[len(failed)-1]; top.Value != 900 || !strings.Contains(top.Failed, tc.reason) {
				t.Errorf("top failed point %g: %q, want 900 with %q", top.Value, top.Failed, tc.reason)
			}
			for _, p := range out.Points {
				if p.Value <= 700 && p.Failed != "" {
					t.Errorf("point %g failed (%s), want it judged", p.Value, p.Failed)
				}
			}

			rep := &Report{Scenario: "fake", Param: s.Param, Capacity: out}
			if got := rep.Failed(); len(got) != len(failed) {
				t.Errorf("report lists %d failed points, want %d", len(got), len(failed))
			}
			var text, js bytes.Buffer
			if err := rep.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(text.String(), "failed points (counted as not meeting the SLO):\n  900") || !strings.Contains(text.String(), tc.reason) {
				t.Errorf("text report does not list the failed points:\n%s", text.String())
			}
			if err := rep.WriteJSON(&js); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(js.String(), `"failed": "capacity: workload.rate=900 replica 0: `) {
				t.Errorf("JSON report does not mark 900 failed:\n%s", js.String())
			}
		})
	}
}

// TestSearchFailedLowEnd: runs failing everywhere but at the low end give a
// search whose holding side is the low end; failing everywhere, an answer
// of "holds nowhere" with every point failed, not an error.
func TestSearchFailedLowEnd(t *testing.T) {
	s := Search{Param: "workload.rate", Lo: 100, Hi: 900, Resolution: 1, Replicas: 2, SLO: fakeSLO(), Orientation: HoldsBelow}
	out, err := Run(context.Background(), failingAbove(150, false), fakeBuilder(false, math.Inf(1)), s, Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if a := out.Answer(); a.Status != "bracketed" || a.HoldsAt < 100 || a.HoldsAt > 150 || a.NotShownAt-a.HoldsAt > 1 {
		t.Errorf("answer %+v, want holding up to the failures above 150", a)
	}
	if out.Bound() != "failed runs" {
		t.Errorf("bound %q, want failed runs", out.Bound())
	}
	out, err = Run(context.Background(), failingAbove(0, false), fakeBuilder(false, math.Inf(1)), s, Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if a := out.Answer(); a.Status == "bracketed" || out.PassPoint() != nil || len(out.Failed()) != 2 {
		t.Errorf("answer %+v with %d failed points, want no holding point and both ends failed", a, len(out.Failed()))
	}
}

// TestShardedFailedPoints: a run that fails on one shard fails its point on
// every shard (the failure travels through the exchange as
// RunRecord.Error), so sharded shards reach the unsharded outcome.
func TestShardedFailedPoints(t *testing.T) {
	s := Search{Param: "workload.rate", Lo: 100, Hi: 900, Resolution: 10, Replicas: 3, SLO: fakeSLO(), Orientation: HoldsBelow}
	build := fakeBuilder(false, math.Inf(1))
	want, err := Run(context.Background(), failingAbove(700, true), build, s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	const n = 2
	outs := make([]*Outcome, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := &DirExchange{Parent: parent, Index: i, Count: n, Poll: time.Millisecond, Wait: 10 * time.Second}
			outs[i], errs[i] = Run(context.Background(), failingAbove(700, true), build, s, Options{Workers: 1, Exchange: x})
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("shard %d: %v", i, errs[i])
		}
		if !reflect.DeepEqual(outs[i].Points, want.Points) {
			t.Errorf("shard %d's points differ from the unsharded ones", i)
		}
	}
	if len(want.Failed()) == 0 {
		t.Error("no failed points, want the values above 700")
	}
}
