package analysis

import (
	"fmt"
	"strings"
	"time"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/topology"
)

// Assess judges a run of sc for the verdict written at the top of its
// summary: whether it recovered from the scenario's trigger (Detect with
// the default configuration, the recovery bound shortened to what the
// arrival window shows after the trigger), its peak amplification over
// one interval and where, its amplification during each fault window, and
// the shares of requests failed and unknown.
func Assess(sc *topology.Scenario, r *metrics.Result) *metrics.Verdict {
	s := &r.Summary
	v := &metrics.Verdict{}
	if off := s.Requests.Offered; off > 0 {
		v.FailedShare = float64(s.Requests.Failed) / float64(off)
		v.UnknownShare = float64(s.Requests.Unknown) / float64(off)
	}
	if ts := r.Series; ts != nil && ts.Interval > 0 {
		peakAmplification(v, ts, sc.Warmup)
		for _, f := range sc.Faults {
			if w, ok := windowAmplification(ts, f); ok {
				v.Windows = append(v.Windows, w)
			}
		}
	}
	v.WholeRunAmplification = s.Amplification
	if v.PeakService != "" {
		v.PeakBasis = metrics.PeakBasis
	}
	judgeRecovery(v, sc, r)
	v.Outcome = outcomeOf(v, s)
	if v.Outcome == metrics.OutcomeNotRecovered || v.Outcome == metrics.OutcomeInterrupted || v.Outcome == metrics.OutcomeDiverged {
		v.Reason = reasonOf(sc, r)
	}
	return v
}

// outcomeOf is the verdict in one word or two, from the recovery judged
// and the run's status: a diverged run and an interrupted one are said so
// rather than "not recovered", and an interrupted run that offered nothing
// after warm-up was not run at all.
func outcomeOf(v *metrics.Verdict, s *metrics.Summary) string {
	switch {
	case s.Status == metrics.StatusDiverged:
		return metrics.OutcomeDiverged
	case s.Status == metrics.StatusInterrupted && s.Requests.Offered == 0:
		return metrics.OutcomeNotRun
	case s.Status == metrics.StatusInterrupted && v.Recovery != "recovered" && v.Recovery != "recovered late":
		return metrics.OutcomeInterrupted
	}
	return v.Recovery
}

// attemptColumns returns the services that have an attempts/S column.
func attemptColumns(ts *metrics.TimeSeries) []string {
	var out []string
	for _, c := range ts.Columns {
		if svc, ok := strings.CutPrefix(c, "attempts/"); ok && !strings.Contains(svc, "->") {
			out = append(out, svc)
		}
	}
	return out
}

// peakAmplification finds the interval after warm-up and service with the
// most attempts per logical request offered in that interval.
func peakAmplification(v *metrics.Verdict, ts *metrics.TimeSeries, warmup time.Duration) {
	offered := ts.Values("offered")
	if offered == nil {
		return
	}
	for _, svc := range attemptColumns(ts) {
		att := ts.Values("attempts/" + svc)
		for i := range att {
			start := ts.Start + time.Duration(i)*ts.Interval
			if start < warmup || offered[i] <= 0 {
				continue
			}
			if a := att[i] / offered[i]; a > v.PeakAmplification {
				v.PeakAmplification, v.PeakService, v.PeakAtS = a, svc, start.Seconds()
			}
		}
	}
}

// windowAmplification is the amplification at the busiest service over
// the intervals that lie inside fault f's window.
func windowAmplification(ts *metrics.TimeSeries, f topology.Fault) (metrics.WindowAmplification, bool) {
	w := metrics.WindowAmplification{Label: faultLabel(f), AtS: f.At.Seconds(), ForS: f.For.Seconds()}
	offered := ts.Values("offered")
	if offered == nil {
		return w, false
	}
	var rows []int
	for i := range offered {
		start := ts.Start + time.Duration(i)*ts.Interval
		if start >= f.At && start+ts.Interval <= f.At+f.For {
			rows = append(rows, i)
		}
	}
	var off float64
	for _, i := range rows {
		off += offered[i]
	}
	if off <= 0 {
		return w, false
	}
	for _, svc := range attemptColumns(ts) {
		att := ts.Values("attempts/" + svc)
		var n float64
		for _, i := range rows {
			n += att[i]
		}
		if a := n / off; a > w.Amplification {
			w.Amplification, w.Service = a, svc
		}
	}
	return w, w.Service != ""
}

// judgeRecovery sets v's recovery fields from the detector.
func judgeRecovery(v *metrics.Verdict, sc *topology.Scenario, r *metrics.Result) {
	notJudged := func(why string) { v.Recovery, v.Note = "not judged", why }
	if len(triggerFaults(sc)) == 0 && !hasSpike(sc) {
		v.Recovery = "no trigger"
		return
	}
	t, err := TriggerOf(sc)
	if err != nil {
		notJudged(err.Error())
		return
	}
	v.Trigger = t.Label
	if bg := backgroundLabel(sc); bg != "" {
		// Said with the trigger: the baseline and the recovery include it.
		v.Trigger += " (background, before and after it too: " + bg + ")"
	}
	if d := r.Summary.Diverged; d != nil {
		v.Recovery, v.Note = "not recovered", fmt.Sprintf("the run diverged at %.1f s (%s)", d.AtS, d.Reason)
		return
	}
	// An interrupted run is judged on the arrivals it simulated: a
	// recovery seen in them stands, anything else is "interrupted", never
	// "not recovered" over time it never reached.
	end, interrupted := sc.Duration, r.Summary.Status == metrics.StatusInterrupted
	if interrupted {
		end = min(end, time.Duration(r.Summary.SimTimeS*float64(time.Second)))
		if end < t.End {
			notJudged(fmt.Sprintf("interrupted at %v, before the trigger ended at %v", end.Round(100*time.Millisecond), t.End))
			return
		}
	}
	s, err := SeriesOf(r, end)
	if err != nil {
		notJudged(err.Error())
		return
	}
	cfg := DetectorConfig{}.WithDefaults()
	room := end - t.End - time.Duration(cfg.Consecutive)*s.Interval
	if room < 0 && interrupted {
		notJudged(fmt.Sprintf("interrupted at %v, %v after the trigger ended: too soon to judge recovery (needs %d intervals)",
			end.Round(100*time.Millisecond), (end - t.End).Round(100*time.Millisecond), cfg.Consecutive))
		return
	}
	if room < 0 {
		notJudged(fmt.Sprintf("the arrivals end %v after the trigger; judging recovery needs %d intervals of them", max(sc.Duration-t.End, 0), cfg.Consecutive))
		return
	}
	cfg.RecoveryBound = min(cfg.RecoveryBound, room)
	d, err := Detect(s, sc.Warmup, t, cfg)
	if err != nil {
		notJudged(strings.TrimPrefix(err.Error(), "detect: "))
		return
	}
	v.BoundS = cfg.RecoveryBound.Seconds()
	after := d.TimeToRecover.Seconds()
	switch {
	case d.Recovers:
		v.Recovery, v.RecoveredAfterS = "recovered", &after
	case d.Late:
		v.Recovery, v.RecoveredAfterS = "recovered late", &after
	case interrupted:
		v.Recovery = "not judged"
		v.Note = fmt.Sprintf("interrupted at %v, %v after the trigger ended, with goodput %.0f%% of its baseline and no recovery yet",
			end.Round(100*time.Millisecond), (end - t.End).Round(100*time.Millisecond), 100*d.Final)
	default:
		v.Recovery = "not recovered"
		v.Note = fmt.Sprintf("goodput %.0f%% of its baseline at the end of the arrivals, %v after the trigger", 100*d.Final, sc.Duration-t.End)
	}
}

// hasSpike reports whether sc's schedule rises above its base rate.
func hasSpike(sc *topology.Scenario) bool {
	for _, st := range sc.Workload.Schedule {
		if st.Rate > sc.Workload.Rate {
			return true
		}
	}
	return false
}
