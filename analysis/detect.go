package analysis

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"gonum.org/v1/gonum/stat"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/model"
	"github.com/stormsim/stormsim/topology"
)

// DetectorConfig parameterizes the metastability detector. The zero value
// uses every default.
type DetectorConfig struct {
	// Tolerance is the smallest relative shortfall of goodput below its
	// baseline that still counts as recovered. Default 0.1 (90 % of baseline).
	Tolerance float64
	// AmpTolerance is the relative excess of amplification over its
	// baseline that still counts as recovered. Default 0.2.
	AmpTolerance float64
	// NoiseZ widens both tolerances to NoiseZ baseline standard deviations
	// (relative to the baseline mean) when the baseline is noisier than
	// the tolerance allows, so Poisson noise alone cannot fail a window.
	// Default 3 (a baseline-like window fails with probability ≈ 0.1 %).
	NoiseZ float64
	// Consecutive is K: recovery is declared only after K recovered
	// intervals in a row. Default 3.
	Consecutive int
	// RecoveryBound: the first of the K intervals must begin within this
	// long after the trigger ends. Default 30s.
	RecoveryBound time.Duration
}

// Detector defaults.
const (
	DefaultTolerance     = 0.1
	DefaultAmpTolerance  = 0.2
	DefaultNoiseZ        = 3.0
	DefaultConsecutive   = 3
	DefaultRecoveryBound = 30 * time.Second
)

// WithDefaults returns c with every zero field set to its default.
func (c DetectorConfig) WithDefaults() DetectorConfig {
	if c.Tolerance == 0 {
		c.Tolerance = DefaultTolerance
	}
	if c.AmpTolerance == 0 {
		c.AmpTolerance = DefaultAmpTolerance
	}
	if c.NoiseZ == 0 {
		c.NoiseZ = DefaultNoiseZ
	}
	if c.Consecutive == 0 {
		c.Consecutive = DefaultConsecutive
	}
	if c.RecoveryBound == 0 {
		c.RecoveryBound = DefaultRecoveryBound
	}
	return c
}

// Validate reports a configuration the detector cannot use.
func (c DetectorConfig) Validate() error {
	switch {
	case c.Tolerance < 0 || c.Tolerance >= 1:
		return fmt.Errorf("detector: tolerance must be in [0, 1), got %g", c.Tolerance)
	case c.AmpTolerance < 0:
		return fmt.Errorf("detector: amplification tolerance must be ≥ 0, got %g", c.AmpTolerance)
	case c.NoiseZ < 0:
		return fmt.Errorf("detector: noise z must be ≥ 0, got %g", c.NoiseZ)
	case c.Consecutive < 0:
		return fmt.Errorf("detector: consecutive windows must be ≥ 1, got %d", c.Consecutive)
	case c.RecoveryBound < 0:
		return fmt.Errorf("detector: recovery bound must be ≥ 0, got %v", c.RecoveryBound)
	}
	return nil
}

// Trigger is the window during which a scenario is pushed out of its
// steady state: its fault windows, or a spike of its rate schedule.
type Trigger struct {
	Start, End time.Duration
	// Label says what the trigger is, for reports.
	Label string
}

// TriggerOf finds a scenario's trigger: the span of its fault windows
// but the background ones (faults[].background: conditions of the whole
// run, which the baseline and the recovery both include), or, without
// such faults, the first stretch of its schedule whose rate exceeds the
// base rate.
func TriggerOf(sc *topology.Scenario) (Trigger, error) {
	if faults := triggerFaults(sc); len(faults) > 0 {
		t := Trigger{Start: faults[0].At, End: faults[0].At + faults[0].For}
		var labels []string
		for _, f := range faults {
			t.Start = min(t.Start, f.At)
			t.End = max(t.End, f.At+f.For)
			labels = append(labels, faultLabel(f))
		}
		t.Label = strings.Join(labels, "; ")
		return t, nil
	}
	base := sc.Workload.Rate
	for i, st := range sc.Workload.Schedule {
		if st.Rate <= base {
			continue
		}
		t := Trigger{Start: st.At, End: -1, Label: fmt.Sprintf("load spike to %g req/s", st.Rate)}
		for _, next := range sc.Workload.Schedule[i+1:] {
			if next.Rate <= base {
				t.End = next.At
				break
			}
		}
		if t.End < 0 {
			return Trigger{}, fmt.Errorf("%s: workload.schedule: the spike at %v never returns to the base rate %g", sc.Name, st.At, base)
		}
		return t, nil
	}
	return Trigger{}, fmt.Errorf("%s: no trigger: add a fault window (faults:) or a load spike (workload.schedule above workload.rate)", sc.Name)
}

// triggerFaults are sc's faults that make its trigger: all but the
// background ones.
func triggerFaults(sc *topology.Scenario) []topology.Fault {
	var out []topology.Fault
	for _, f := range sc.Faults {
		if !f.Background {
			out = append(out, f)
		}
	}
	return out
}

// backgroundLabel names sc's background faults, "" without any.
func backgroundLabel(sc *topology.Scenario) string {
	var labels []string
	for _, f := range sc.Faults {
		if f.Background {
			labels = append(labels, faultLabel(f))
		}
	}
	return strings.Join(labels, "; ")
}

// faultLabel names fault f in a trigger or window line: its service, its
// effects as model.FaultLabel names them (the one label of a fault in
// plots and results), and its window.
func faultLabel(f topology.Fault) string {
	return fmt.Sprintf("%s %s for %v at %v", f.Service, model.FaultLabel(&f), f.For, f.At)
}

// Series is what the detector reads of a run: per-interval goodput and,
// when known, per-interval amplification.
type Series struct {
	// Start and Interval place row i at [Start+i·Interval, Start+(i+1)·Interval).
	Start, Interval time.Duration
	// Goodput per interval (any unit; only ratios to the baseline matter).
	Goodput []float64
	// Amplification per interval: the largest over services of attempts
	// that arrived divided by logical requests offered. nil if unknown.
	Amplification []float64
	// End is the end of the arrival window: intervals ending after it,
	// when no new requests arrive, are ignored.
	End time.Duration
}

// SeriesOf reads a run's goodput and amplification per interval from its
// time series ("goodput", or "succeeded" per interval; "offered" and
// "attempts/SERVICE"). end is the arrival window's end (the scenario's
// duration).
func SeriesOf(r *metrics.Result, end time.Duration) (Series, error) {
	ts := r.Series
	if ts == nil || len(ts.Rows) == 0 {
		return Series{}, errors.New("result has no time series")
	}
	if ts.Interval <= 0 {
		return Series{}, fmt.Errorf("time series interval %v: must be > 0", ts.Interval)
	}
	s := Series{Start: ts.Start, Interval: ts.Interval, End: end}
	s.Goodput = ts.Values(metrics.ColGoodput)
	if s.Goodput == nil {
		s.Goodput = ts.Values(metrics.ColSucceeded)
	}
	if s.Goodput == nil {
		return Series{}, fmt.Errorf("time series has neither a goodput nor a succeeded column (columns: %s)", strings.Join(ts.Columns, ", "))
	}
	offered := ts.Values(metrics.ColOffered)
	if offered == nil {
		return s, nil
	}
	for i, c := range ts.Columns {
		if !strings.HasPrefix(c, metrics.Column(metrics.MetricAttempts, "")) || strings.Contains(c, "->") {
			continue
		}
		if s.Amplification == nil {
			s.Amplification = make([]float64, len(ts.Rows))
		}
		for r, row := range ts.Rows {
			if offered[r] > 0 {
				s.Amplification[r] = max(s.Amplification[r], row[i]/offered[r])
			}
		}
	}
	return s, nil
}

// Verdict is the detector's finding for one run.
type Verdict struct {
	// Recovers reports whether the run returned to its baseline within the
	// bound; TimeToRecover is then how long after the trigger ended the
	// first of the K recovered intervals began.
	Recovers      bool
	TimeToRecover time.Duration
	// Late reports a run that did return to its baseline, but only after
	// the bound: TimeToRecover then says when. Such a run is slow to
	// recover, not collapsed, and its verdict says so.
	Late bool
	// Bound is the recovery bound the run was judged against.
	Bound time.Duration
	// Baseline is the mean goodput per interval before the trigger;
	// GoodputFloor the least goodput a recovered interval has.
	Baseline     float64
	GoodputFloor float64
	// BaselineAmp and AmpCeiling are the same for amplification (0 when
	// the series has none).
	BaselineAmp float64
	AmpCeiling  float64
	// Trigger is the trigger the run was judged against.
	Trigger Trigger
	// Final is the mean goodput of the last K assessed intervals relative
	// to the baseline (1 = fully back), to show how far a run that does
	// not recover stays from its baseline.
	Final float64
}

// String returns "recovers after 4s", "recovers in 35s (beyond the 30s
// bound)" or "does not recover (goodput 12 % of baseline at the end)".
func (v Verdict) String() string {
	if v.Recovers {
		return fmt.Sprintf("recovers after %v", v.TimeToRecover)
	}
	if v.Late {
		return v.lateString()
	}
	return fmt.Sprintf("does not recover (goodput %.0f%% of baseline at the end)", 100*v.Final)
}

func (v Verdict) lateString() string {
	return fmt.Sprintf("recovers in %v (beyond the %v bound)", v.TimeToRecover, v.Bound)
}

// Detect decides whether a run recovered from its trigger (see the package
// documentation for the formulas). The intervals before the trigger and
// after warm-up form the baseline; at least two whole ones are needed, and
// the series must extend RecoveryBound plus K intervals past the trigger's
// end for a "does not recover" to be conclusive.
func Detect(s Series, warmup time.Duration, t Trigger, cfg DetectorConfig) (Verdict, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return Verdict{}, err
	}
	if s.Interval <= 0 {
		return Verdict{}, fmt.Errorf("detect: interval %v: must be > 0", s.Interval)
	}
	if s.Amplification != nil && len(s.Amplification) != len(s.Goodput) {
		return Verdict{}, fmt.Errorf("detect: %d amplification values for %d goodput values", len(s.Amplification), len(s.Goodput))
	}
	if t.End < t.Start {
		return Verdict{}, fmt.Errorf("detect: trigger ends (%v) before it starts (%v)", t.End, t.Start)
	}
	start := func(i int) time.Duration { return s.Start + time.Duration(i)*s.Interval }
	end := s.End
	if end <= 0 {
		end = start(len(s.Goodput))
	}

	var good, amp []float64
	for i := range s.Goodput {
		if start(i) >= warmup && start(i+1) <= t.Start {
			good = append(good, s.Goodput[i])
			if s.Amplification != nil {
				amp = append(amp, s.Amplification[i])
			}
		}
	}
	if len(good) < 2 {
		return Verdict{}, fmt.Errorf("detect: %d whole intervals between warm-up (%v) and the trigger (%v); need at least 2 for a baseline", len(good), warmup, t.Start)
	}
	v := Verdict{Trigger: t, Bound: cfg.RecoveryBound}
	var sd float64
	v.Baseline, sd = stat.MeanStdDev(good, nil)
	if v.Baseline <= 0 {
		return Verdict{}, fmt.Errorf("detect: no goodput before the trigger (baseline %g)", v.Baseline)
	}
	tol := max(cfg.Tolerance, cfg.NoiseZ*sd/v.Baseline)
	if tol >= 1 {
		return Verdict{}, fmt.Errorf("detect: baseline goodput too noisy to judge recovery (sd %.3g is %.0f%% of its mean %.3g); use longer intervals", sd, 100*sd/v.Baseline, v.Baseline)
	}
	v.GoodputFloor = (1 - tol) * v.Baseline
	if amp != nil {
		var sdA float64
		v.BaselineAmp, sdA = stat.MeanStdDev(amp, nil)
		tolA := cfg.AmpTolerance
		if v.BaselineAmp > 0 {
			tolA = max(tolA, cfg.NoiseZ*sdA/v.BaselineAmp)
		}
		v.AmpCeiling = (1 + tolA) * v.BaselineAmp
	}
	recovered := func(i int) bool {
		if s.Goodput[i] < v.GoodputFloor {
			return false
		}
		return amp == nil || s.Amplification[i] <= v.AmpCeiling
	}

	need := t.End + cfg.RecoveryBound + time.Duration(cfg.Consecutive)*s.Interval
	if end < need {
		return Verdict{}, fmt.Errorf("detect: the series ends at %v; judging recovery within %v of the trigger's end (%v) over %d intervals needs it to reach %v", end, cfg.RecoveryBound, t.End, cfg.Consecutive, need)
	}
	run := 0
	var assessed []int
	for i := range s.Goodput {
		if start(i) >= t.End && start(i+1) <= end {
			assessed = append(assessed, i)
		}
	}
	for _, i := range assessed {
		if !recovered(i) {
			run = 0
			continue
		}
		run++
		if run == cfg.Consecutive {
			first := i - cfg.Consecutive + 1
			v.TimeToRecover = start(first) - t.End
			// Back, but after the bound: late, which is not a collapse.
			v.Recovers = v.TimeToRecover <= cfg.RecoveryBound
			v.Late = !v.Recovers
			break
		}
	}
	if n := min(cfg.Consecutive, len(assessed)); n > 0 {
		var sum float64
		for _, i := range assessed[len(assessed)-n:] {
			sum += s.Goodput[i]
		}
		v.Final = sum / float64(n) / v.Baseline
	}
	return v, nil
}
