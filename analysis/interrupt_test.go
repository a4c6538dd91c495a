package analysis

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/topology"
)

// TestRunMetastableInterrupted: a search stopped by a signal returns the
// levels judged so far, marked interrupted, with the error; the table says
// which levels did not run (issue 17, item 10: metastable wrote nothing).
func TestRunMetastableInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var calls atomic.Int64
	run := RunnerFunc(func(ctx context.Context, sc *topology.Scenario) (*metrics.Result, error) {
		if calls.Add(1) == 3 {
			cancel() // during the third unit: two levels are finished
		}
		return fakeRun(ctx, sc)
	})
	m := &Metastable{
		Param:    "workload.rate",
		Values:   []string{"40", "55", "65", "80"},
		Variants: []Variant{{Name: Baseline}, {Name: "budget", Sets: []string{"budget=0.1"}}},
		Detector: DetectorConfig{RecoveryBound: 10 * time.Second},
	}
	rep, err := RunMetastable(ctx, run, fakeBuild, m, SweepOptions{Workers: 1})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want one wrapping context.Canceled", err)
	}
	if rep == nil || !rep.Interrupted || len(rep.Levels) != 2 {
		t.Fatalf("report %+v, want the 2 levels finished before the signal, marked interrupted", rep)
	}
	var b bytes.Buffer
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"partial: interrupted after 2 of 8 levels", "not run (interrupted)", "baseline: highest workload.rate that recovers: 40"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, b.String())
		}
	}
	// A failure that is not a signal returns no report.
	_, err = RunMetastable(context.Background(), RunnerFunc(func(context.Context, *topology.Scenario) (*metrics.Result, error) {
		return nil, errors.New("boom")
	}), fakeBuild, m, SweepOptions{Workers: 1})
	if err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("error %v, want boom", err)
	}
}
