package analysis

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stormsim/stormsim/topology"
)

// synth builds a 1 s series of n intervals: base before the trigger
// [20s, 30s), during it, and after[i] for the i-th interval after it (the
// last value repeating).
func synth(n int, base, during float64, after ...float64) Series {
	s := Series{Interval: time.Second, End: time.Duration(n) * time.Second}
	for i := range n {
		switch {
		case i < 20:
			s.Goodput = append(s.Goodput, base)
		case i < 30:
			s.Goodput = append(s.Goodput, during)
		default:
			k := min(i-30, len(after)-1)
			s.Goodput = append(s.Goodput, after[k])
		}
	}
	return s
}

var trig = Trigger{Start: 20 * time.Second, End: 30 * time.Second}

func TestDetect(t *testing.T) {
	flat := func(n int, v float64) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = v
		}
		return out
	}
	tests := []struct {
		name    string
		s       Series
		cfg     DetectorConfig
		recover bool
		ttr     time.Duration
	}{
		{"recovers at once", synth(70, 100, 20, 100), DetectorConfig{}, true, 0},
		{"recovers after a ramp", synth(70, 100, 20, 50, 80, 95, 100), DetectorConfig{}, true, 2 * time.Second},
		{"just inside the tolerance", synth(70, 100, 20, 90.5), DetectorConfig{}, true, 0},
		{"just outside the tolerance", synth(70, 100, 20, 89.5), DetectorConfig{}, false, 0},
		{"stays down", synth(70, 100, 20, 30), DetectorConfig{}, false, 0},
		{"a blip restarts the count", synth(70, 100, 20, 100, 100, 50, 100), DetectorConfig{}, true, 3 * time.Second},
		{"K=1 takes the first window", synth(70, 100, 20, 50, 100, 50, 100), DetectorConfig{Consecutive: 1}, true, time.Second},
		{"recovers too late", synth(70, 100, 20, append(flat(31, 30), 100)...), DetectorConfig{}, false, 0},
		{"recovers at the bound", synth(70, 100, 20, append(flat(30, 30), 100)...), DetectorConfig{}, true, 30 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := Detect(tt.s, 2*time.Second, trig, tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if v.Recovers != tt.recover || (tt.recover && v.TimeToRecover != tt.ttr) {
				t.Errorf("verdict %v (recovers %v, ttr %v), want recovers %v ttr %v", v, v.Recovers, v.TimeToRecover, tt.recover, tt.ttr)
			}
			if v.Baseline != 100 {
				t.Errorf("baseline %g, want 100", v.Baseline)
			}
		})
	}
}

// Goodput can come back while the system still does three times the work
// per request: that is not recovery.
func TestDetectAmplification(t *testing.T) {
	s := synth(70, 100, 20, 100)
	for i := range s.Goodput {
		a := 1.0
		if i >= 20 {
			a = 3
		}
		s.Amplification = append(s.Amplification, a)
	}
	v, err := Detect(s, 2*time.Second, trig, DetectorConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if v.Recovers {
		t.Errorf("amplification stuck at 3× baseline: got %v, want does not recover", v)
	}
	for i := 35; i < len(s.Amplification); i++ {
		s.Amplification[i] = 1.1
	}
	if v, _ = Detect(s, 2*time.Second, trig, DetectorConfig{}); !v.Recovers || v.TimeToRecover != 5*time.Second {
		t.Errorf("amplification back to 1.1 at 35s: got %v, want recovers after 5s", v)
	}
}

// A noisy baseline: Poisson counts with mean 100 per interval, so sd ≈ 10,
// wider than the 10 % tolerance. The detector widens the tolerance to 3 sd,
// so a system back at its old level is judged recovered (a window at 3 sd
// below the mean has probability ≈ 0.1 %), while one stuck at 60 % (4 sd
// below) is not.
func TestDetectNoisyBaseline(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	poisson := func(mean float64) float64 {
		// Normal approximation, adequate at mean 100.
		return math.Max(0, math.Round(mean+math.Sqrt(mean)*rng.NormFloat64()))
	}
	for _, tt := range []struct {
		level   float64
		recover bool
	}{{100, true}, {60, false}} {
		s := Series{Interval: time.Second, End: 70 * time.Second}
		for i := range 70 {
			mean := 100.0
			switch {
			case i >= 20 && i < 30:
				mean = 20
			case i >= 30:
				mean = tt.level
			}
			s.Goodput = append(s.Goodput, poisson(mean))
		}
		v, err := Detect(s, 2*time.Second, trig, DetectorConfig{})
		if err != nil {
			t.Fatal(err)
		}
		if v.Recovers != tt.recover {
			t.Errorf("level %g: %v (floor %.1f), want recovers=%v", tt.level, v, v.GoodputFloor, tt.recover)
		}
		if v.GoodputFloor >= 90 || v.GoodputFloor < 60 {
			t.Errorf("level %g: floor %.1f, want the tolerance widened below 90 but above 60", tt.level, v.GoodputFloor)
		}
	}
}

func TestDetectErrors(t *testing.T) {
	tests := []struct {
		name string
		s    Series
		w    time.Duration
		cfg  DetectorConfig
		want string
	}{
		{"short series", synth(50, 100, 20, 100), 2 * time.Second, DetectorConfig{}, "needs it to reach 1m3s"},
		{"no baseline", synth(70, 100, 20, 100), 19 * time.Second, DetectorConfig{}, "need at least 2"},
		{"zero baseline", synth(70, 0, 0, 0), 2 * time.Second, DetectorConfig{}, "no goodput"},
		{"bad tolerance", synth(70, 100, 20, 100), 0, DetectorConfig{Tolerance: 1.5}, "tolerance"},
		{"noisy", Series{Interval: time.Second, Goodput: []float64{1, 200, 1, 200, 1, 200, 1, 200, 1, 200, 1, 200, 1, 200, 1, 200, 1, 200, 1, 200, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}}, 0, DetectorConfig{}, "too noisy"},
	}
	for _, tt := range tests {
		if _, err := Detect(tt.s, tt.w, trig, tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.want)
		}
	}
}

func TestTriggerOf(t *testing.T) {
	capacity := 0.3
	sc := &topology.Scenario{Name: "x", Workload: topology.Workload{Rate: 100}}
	if _, err := TriggerOf(sc); err == nil || !strings.Contains(err.Error(), "no trigger") {
		t.Errorf("no faults, no schedule: err = %v", err)
	}
	sc.Workload.Schedule = []topology.RateStep{{At: 10 * time.Second, Rate: 50}, {At: 20 * time.Second, Rate: 300}, {At: 25 * time.Second, Rate: 400}, {At: 27 * time.Second, Rate: 100}}
	if tr, err := TriggerOf(sc); err != nil || tr.Start != 20*time.Second || tr.End != 27*time.Second {
		t.Errorf("spike: %+v, %v; want 20s to 27s", tr, err)
	}
	sc.Workload.Schedule = sc.Workload.Schedule[:3]
	if _, err := TriggerOf(sc); err == nil || !strings.Contains(err.Error(), "never returns") {
		t.Errorf("endless spike: err = %v", err)
	}
	sc.Faults = []topology.Fault{{Service: "db", At: 30 * time.Second, For: 5 * time.Second, Capacity: &capacity}, {Service: "db", At: 20 * time.Second, For: 2 * time.Second, LatencyAdd: time.Second}}
	tr, err := TriggerOf(sc)
	if err != nil || tr.Start != 20*time.Second || tr.End != 35*time.Second || !strings.Contains(tr.Label, "db capacity ×0.3 for 5s at 30s") {
		t.Errorf("faults: %+v, %v; want 20s to 35s", tr, err)
	}
	// A background fault over the whole run is no part of the trigger.
	sc.Faults = append(sc.Faults, topology.Fault{Service: "db", At: 0, For: time.Minute, DropResponse: 0.1, Background: true})
	if tr, err := TriggerOf(sc); err != nil || tr.Start != 20*time.Second || tr.End != 35*time.Second || strings.Contains(tr.Label, "drop") {
		t.Errorf("with a background fault: %+v, %v; want 20s to 35s without it", tr, err)
	}
	// Only background faults: the trigger is the schedule's spike, if any.
	sc.Faults = sc.Faults[2:]
	if _, err := TriggerOf(sc); err == nil || !strings.Contains(err.Error(), "never returns") {
		t.Errorf("background faults and an endless spike: err = %v", err)
	}
}

func BenchmarkDetect(b *testing.B) {
	s := synth(600, 100, 20, 50, 80, 100)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Detect(s, 2*time.Second, trig, DetectorConfig{}); err != nil {
			b.Fatal(err)
		}
	}
}

// A run that comes back after the bound did recover, only late: the verdict
// says when, beside the bound it missed, instead of "does not recover"
// (which would read as a collapse while its goodput is back at 100 %).
func TestDetectLateRecovery(t *testing.T) {
	after := make([]float64, 35)
	for i := range after {
		after[i] = 30
	}
	s := synth(80, 100, 20, append(after, 100)...)
	v, err := Detect(s, 2*time.Second, trig, DetectorConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if v.Recovers {
		t.Fatalf("recovered 35 s after the trigger with a 30 s bound: got %v, want not within the bound", v)
	}
	if !v.Late || v.TimeToRecover != 35*time.Second || v.Bound != 30*time.Second {
		t.Errorf("late %v, time to recover %v, bound %v; want late, 35s, 30s", v.Late, v.TimeToRecover, v.Bound)
	}
	if got, want := v.String(), "recovers in 35s (beyond the 30s bound)"; got != want {
		t.Errorf("verdict %q, want %q", got, want)
	}
	if got, want := shortVerdict(Level{Verdict: v}), "recovers in 35s (beyond the 30s bound)"; got != want {
		t.Errorf("table cell %q, want %q", got, want)
	}
	// Never back: the verdict still says how far from the baseline it ends.
	v, err = Detect(synth(80, 100, 20, 30), 2*time.Second, trig, DetectorConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if v.Late || !strings.Contains(v.String(), "does not recover") {
		t.Errorf("never recovers: got %q (late %v)", v.String(), v.Late)
	}
}
