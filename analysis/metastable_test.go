package analysis

import (
	"bytes"
	"context"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stormsim/stormsim/internal/golden"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/topology"
)

// The fake system storms forever above 60 % of capacity (100 req/s) unless
// it has a budget; the search must find that boundary for the baseline and
// none for the budgeted variant.
func TestRunMetastableFake(t *testing.T) {
	m := &Metastable{
		Param:    "workload.rate",
		Values:   []string{"40", "55", "65", "80"},
		Variants: []Variant{{Name: Baseline}, {Name: "budget", Sets: []string{"budget=0.1"}}},
		Detector: DetectorConfig{RecoveryBound: 10 * time.Second},
	}
	rep, err := RunMetastable(context.Background(), fakeRunner, fakeBuild, m, SweepOptions{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	var got []bool
	for _, lv := range rep.Levels {
		got = append(got, lv.Verdict.Recovers)
	}
	// point-major: (40 base, 40 budget), (55 ...), ...
	want := []bool{true, true, true, true, false, true, false, true}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("verdicts %v, want %v", got, want)
	}
	if hi, gaps := rep.Boundary(Baseline); hi != 1 || gaps {
		t.Errorf("baseline boundary = %d (gaps %v), want point 1 (55)", hi, gaps)
	}
	if hi, _ := rep.Boundary("budget"); hi != 3 {
		t.Errorf("budget boundary = %d, want point 3 (80)", hi)
	}
	var b bytes.Buffer
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"baseline: highest workload.rate that recovers: 55", "budget: highest workload.rate that recovers: 80", "DOES NOT RECOVER"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, b.String())
		}
	}
	golden.Check(t, "testdata/metastable.txt", b.Bytes())
}

// The builder extends a scenario too short to judge.
func TestRunMetastableExtendsDuration(t *testing.T) {
	var durations []time.Duration
	run := RunnerFunc(func(ctx context.Context, sc *topology.Scenario) (*metrics.Result, error) {
		durations = append(durations, sc.Duration)
		return fakeRun(ctx, sc)
	})
	m := &Metastable{Variants: []Variant{{Name: Baseline}}, Detector: DetectorConfig{RecoveryBound: 20 * time.Second}}
	rep, err := RunMetastable(context.Background(), run, fakeBuild, m, SweepOptions{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	// Trigger ends at 12s; 12s + 20s + (3+1)·1s = 36s.
	if len(durations) != 1 || durations[0] != 36*time.Second {
		t.Errorf("ran durations %v, want [36s]", durations)
	}
	if rep.Param != "workload.rate" || !reflect.DeepEqual(rep.Values, []string{"100"}) {
		t.Errorf("single level %s=%v, want workload.rate=[100]", rep.Param, rep.Values)
	}
}

func TestRamp(t *testing.T) {
	r := Ramp{Levels: []float64{10, 20, 30}, Hold: 4 * time.Second}
	if got, want := r.Steps(), []float64{10, 20, 30, 20, 10}; !reflect.DeepEqual(got, want) {
		t.Errorf("Steps = %v, want %v", got, want)
	}
	sc := fakeBase()
	r.Apply(sc)
	if sc.Duration != 20*time.Second || len(sc.Faults) != 0 || sc.Workload.Rate != 10 || len(sc.Workload.Schedule) != 4 ||
		sc.Workload.Schedule[3].At != 16*time.Second || sc.Workload.Schedule[3].Rate != 10 {
		t.Errorf("Apply gave duration %v faults %v rate %v schedule %v", sc.Duration, sc.Faults, sc.Workload.Rate, sc.Workload.Schedule)
	}
	for _, bad := range []Ramp{{Levels: []float64{1}, Hold: time.Second}, {Levels: []float64{2, 1}, Hold: time.Second}, {Levels: []float64{1, 2}}} {
		if bad.Validate() == nil {
			t.Errorf("%+v: want a validation error", bad)
		}
	}
}

// A synthetic ramp run whose goodput follows the offered load going up to
// the top and then stays collapsed at 5 req/s coming down.
func TestHysteresisOf(t *testing.T) {
	r := Ramp{Levels: []float64{10, 20, 30}, Hold: 4 * time.Second}
	ts := &metrics.TimeSeries{Interval: time.Second, Columns: []string{"offered", "goodput"}}
	steps := r.Steps()
	for i := range 20 {
		j := i / 4
		rate := steps[j]
		good := rate
		if j >= 2 {
			good = 5
		}
		// The first half of each hold is a transient the reader must skip.
		if i%4 < 2 {
			good = -1000
		}
		ts.Rows = append(ts.Rows, []float64{rate, good})
	}
	h, err := HysteresisOf(&metrics.Result{Series: ts}, r)
	if err != nil {
		t.Fatal(err)
	}
	want := Hysteresis{
		Up:   []HysteresisPoint{{10, 10, 10}, {20, 20, 20}, {30, 30, 5}},
		Down: []HysteresisPoint{{30, 30, 5}, {20, 20, 5}, {10, 10, 5}},
	}
	if !reflect.DeepEqual(h, want) {
		t.Errorf("HysteresisOf = %+v, want %+v", h, want)
	}
	// The fake runner's ramp runs end to end.
	hs, _, err := RunHysteresis(context.Background(), fakeRunner, fakeBuild, []Variant{{Name: Baseline}}, Ramp{Levels: []float64{20, 60, 120}, Hold: 4 * time.Second})
	if err != nil || len(hs) != 1 || len(hs[0].Up) != 3 || len(hs[0].Down) != 3 {
		t.Fatalf("RunHysteresis = %+v, %v", hs, err)
	}
	if p, err := HysteresisPlot(hs); err != nil || p == nil {
		t.Errorf("HysteresisPlot: %v", err)
	}
	if math.IsNaN(hs[0].Up[0].Goodput) {
		t.Error("NaN goodput")
	}
}
