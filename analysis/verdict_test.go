package analysis

import (
	"math"
	"strings"
	"testing"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/metrics/metricstest"
	"github.com/stormsim/stormsim/topology"
)

// stormScenario is the scenario metricstest.Storm describes: the orders
// capacity fault from 20 s to 30 s (the db latency fault at 40 s is left
// out, so the trigger ends at 30 s).
func stormScenario(t *testing.T) *topology.Scenario {
	t.Helper()
	sc, err := topology.Parse("storm.yaml", []byte(`
name: synthetic-storm
duration: 60s
workload: {entry: gateway, rate: 200, deadline: 2s}
services:
  - {name: gateway, workers: 64, service_time: {dist: constant, value: 1ms}, calls: [{to: orders}]}
  - {name: orders, workers: 16, service_time: {dist: constant, value: 1ms}, calls: [{to: db}]}
  - {name: db, workers: 32, service_time: {dist: constant, value: 1ms}}
faults:
  - {service: orders, at: 20s, for: 10s, capacity: 0.5}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// TestAssessStorm checks each figure of the verdict against the series it
// is computed from: the recovery time from the detector, the peak and the
// fault window's amplification from the attempts and offered columns.
func TestAssessStorm(t *testing.T) {
	r := metricstest.Storm()
	sc := stormScenario(t)
	v := Assess(sc, r)

	s, err := SeriesOf(r, sc.Duration)
	if err != nil {
		t.Fatal(err)
	}
	trig, _ := TriggerOf(sc)
	cfg := DetectorConfig{RecoveryBound: 27e9} // 60 s − 30 s − 3 intervals
	d, err := Detect(s, 0, trig, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Recovers || v.Recovery != "recovered" || v.RecoveredAfterS == nil || *v.RecoveredAfterS != d.TimeToRecover.Seconds() {
		t.Errorf("recovery %q after %v, want recovered after %v", v.Recovery, v.RecoveredAfterS, d.TimeToRecover)
	}

	ts := r.Series
	offered := ts.Values("offered")
	var peak float64
	for _, svc := range []string{"gateway", "orders", "db"} {
		for i, a := range ts.Values("attempts/" + svc) {
			if offered[i] > 0 {
				peak = max(peak, a/offered[i])
			}
		}
	}
	if v.PeakAmplification != peak || v.PeakService != "orders" || v.PeakAtS < 20 || v.PeakAtS >= 40 {
		t.Errorf("peak %v× at %s from %v s, want %v× at orders during the storm", v.PeakAmplification, v.PeakService, v.PeakAtS, peak)
	}
	var att, off float64
	orders := ts.Values("attempts/orders")
	for i := 20; i < 30; i++ {
		att, off = att+orders[i], off+offered[i]
	}
	if len(v.Windows) != 1 || v.Windows[0].Service != "orders" || math.Abs(v.Windows[0].Amplification-att/off) > 1e-12 {
		t.Errorf("fault windows %+v, want orders at %v×", v.Windows, att/off)
	}
	if want := r.Summary.Amplification; v.Windows[0].Amplification <= want {
		t.Errorf("amplification during the fault %v× not above the whole run's %v×: the drain dilutes the whole-run figure, not the fault's",
			v.Windows[0].Amplification, want)
	}
	rq := r.Summary.Requests
	if v.FailedShare != float64(rq.Failed)/float64(rq.Offered) || v.UnknownShare != float64(rq.Unknown)/float64(rq.Offered) {
		t.Errorf("shares %v, %v", v.FailedShare, v.UnknownShare)
	}
}

// A run the arrivals end too soon after the trigger to judge says so, and
// one without a trigger says there was nothing to recover from.
func TestAssessNotJudged(t *testing.T) {
	r := metricstest.Storm()
	sc := stormScenario(t)
	sc.Duration = 31e9
	if v := Assess(sc, r); v.Recovery != "not judged" || !strings.Contains(v.Note, "needs 3 intervals") {
		t.Errorf("arrivals end 1 s after the trigger: %+v", v)
	}
	sc.Faults = nil
	if v := Assess(sc, r); v.Recovery != "no trigger" {
		t.Errorf("no faults: %+v", v)
	}
	lost := &metrics.Result{Summary: metrics.Summary{Requests: metrics.Requests{Offered: 10, Failed: 7, Unknown: 3}}}
	if v := Assess(sc, lost); !strings.HasPrefix(v.Headline(), "FAILED: no request succeeded") || !v.Bad() {
		t.Errorf("every request lost: headline %q (bad %v)", v.Headline(), v.Bad())
	}
}

// TestAssessInterrupted (issue 36 item 6): an interrupted run is judged on
// the time it simulated: never "not recovered ... 59m0s after the trigger"
// for arrivals it never reached, but "interrupted at T"; one that offered
// nothing was not run.
func TestAssessInterrupted(t *testing.T) {
	for _, c := range []struct {
		name     string
		simTimeS float64
		offered  int64
		outcome  string
		text     string
		note     string
	}{
		{"during the fault", 25, -1, metrics.OutcomeInterrupted, "interrupted at 25.0 s", "interrupted at 25s, before the trigger ended at 30s"},
		{"just after the fault", 31, -1, metrics.OutcomeInterrupted, "interrupted at 31.0 s", "too soon to judge"},
		{"before it started", 0, 0, metrics.OutcomeNotRun, "not run", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := metricstest.Storm()
			sc := stormScenario(t)
			sc.Duration = 3600e9 // asked for an hour
			r.Summary.Status, r.Summary.SimTimeS = metrics.StatusInterrupted, c.simTimeS
			if c.offered >= 0 {
				r.Summary.Requests = metrics.Requests{Offered: c.offered}
			}
			v := Assess(sc, r)
			r.Summary.Verdict = v
			if v.Outcome != c.outcome || v.Recovery == "not recovered" {
				t.Errorf("outcome %q, recovery %q, want outcome %q and never not recovered", v.Outcome, v.Recovery, c.outcome)
			}
			if got := metrics.OutcomeText(&r.Summary); got != c.text {
				t.Errorf("table verdict %q, want %q", got, c.text)
			}
			if !strings.Contains(v.Note, c.note) || strings.Contains(v.Headline(), "59m") {
				t.Errorf("headline %q, want a note with %q", v.Headline(), c.note)
			}
		})
	}
	// Interrupted after a recovery it did see: the recovery stands.
	r := metricstest.Storm()
	sc := stormScenario(t)
	full := Assess(sc, r)
	sc.Duration = 3600e9
	r.Summary.Status, r.Summary.SimTimeS = metrics.StatusInterrupted, 60
	if v := Assess(sc, r); v.Outcome != metrics.OutcomeRecovered || *v.RecoveredAfterS != *full.RecoveredAfterS {
		t.Errorf("interrupted after recovering: %+v, want recovered as the complete run (%v s)", v, *full.RecoveredAfterS)
	}
}
