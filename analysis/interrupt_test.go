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

// TestCompareInterruptedVariants (issue 36 item 6): in a comparison a
// signal stopped, a variant that never started reads "not run" with no
// figures, and one stopped during the fault "interrupted at T", never
// goodput 0 or amplification 0.00x, which look like a collapse.
func TestCompareInterruptedVariants(t *testing.T) {
	run := RunnerFunc(func(ctx context.Context, sc *topology.Scenario) (*metrics.Result, error) {
		r, err := fakeRun(ctx, sc)
		switch {
		case strings.Contains(sc.Description, "note=never"):
			r = &metrics.Result{Summary: metrics.Summary{Scenario: sc.Name, Seed: sc.Seed, Status: metrics.StatusInterrupted}}
		case strings.Contains(sc.Description, "note=midway"):
			r.Summary.Status, r.Summary.SimTimeS = metrics.StatusInterrupted, 10 // during the 8 s–12 s fault
			r.Series.Rows = r.Series.Rows[:10]
		}
		return r, err
	})
	vs := []Variant{{Name: Baseline}, {Name: "midway", Sets: []string{"note=midway"}}, {Name: "never", Sets: []string{"note=never"}}}
	c, err := Compare(context.Background(), run, fakeBuild, vs, 1)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := c.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	cells := map[string][]string{}
	for _, l := range strings.Split(b.String(), "\n") {
		f := strings.Fields(l)
		for _, label := range []string{"verdict", "goodput", "amplification,", "status"} {
			if len(f) > 0 && f[0] == label {
				cells[label] = f
			}
		}
	}
	last := func(label string) string { f := cells[label]; return f[len(f)-1] }
	if v := cells["verdict"]; !strings.Contains(strings.Join(v, " "), "interrupted at 10.0 s not run") {
		t.Errorf("verdicts %q, want midway interrupted at 10.0 s and never not run:\n%s", v, b.String())
	}
	if last("goodput") != "-" || last("amplification,") != "-" || last("status") != "interrupted" {
		t.Errorf("never-run column: goodput %q, amplification %q, status %q; want -, -, interrupted:\n%s", last("goodput"), last("amplification,"), last("status"), b.String())
	}
	if mid := c.Columns[1].Result.Summary.Verdict; mid.Recovery == "not recovered" || mid.Outcome != metrics.OutcomeInterrupted {
		t.Errorf("midway verdict %+v, want interrupted, never not recovered", mid)
	}
}
