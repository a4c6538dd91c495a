package analysis

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/topology"
)

// reasonWindow is how many intervals at the end of the arrivals reasonOf
// reads: the detector's K, so the reason describes the same stretch of the
// run whose failure to recover the verdict reports.
const reasonWindow = DefaultConsecutive

// reasonOf says in one line why a run did not recover, where the result
// shows it, and "" where it does not:
//
//   - a diverged run: where and why the simulator stopped it;
//   - a callee whose queue wait at the end of the arrivals (Little's law:
//     the mean queue length over the attempts admitted per second) is at
//     least its caller's per-attempt timeout: the caller gives up on most
//     attempts before they start, so the callee's work is wasted while the
//     attempts still arriving keep the queue full;
//   - otherwise, a service still receiving more than twice the attempts
//     per offered request it received before the trigger.
func reasonOf(sc *topology.Scenario, r *metrics.Result) string {
	if d := r.Summary.Diverged; d != nil {
		s := fmt.Sprintf("the run diverged at %.1f s: %s", d.AtS, d.Reason)
		if d.Service != "" {
			s += fmt.Sprintf(" (largest queue: %s, %d waiting)", d.Service, d.Queue)
		}
		return s
	}
	ts := r.Series
	if ts == nil || ts.Interval <= 0 || len(ts.Rows) == 0 {
		return ""
	}
	end := sc.Duration
	if r.Summary.Status == metrics.StatusInterrupted {
		end = min(end, time.Duration(r.Summary.SimTimeS*float64(time.Second)))
	}
	rows := lastRows(ts, end, reasonWindow)
	if len(rows) == 0 {
		return ""
	}
	var best struct {
		ratio          float64
		caller, callee string
		wait, timeout  time.Duration
	}
	for _, e := range timeoutEdges(sc) {
		w, ok := queueWait(ts, e.callee, rows)
		if !ok || w < e.timeout {
			continue
		}
		if ratio := float64(w) / float64(e.timeout); ratio > best.ratio {
			best.ratio, best.caller, best.callee, best.wait, best.timeout = ratio, e.caller, e.callee, w, e.timeout
		}
	}
	if best.callee != "" {
		return fmt.Sprintf("%s queue wait ≈%v at the end of the arrivals exceeds %s %v timeout: most of %s's work is wasted, its attempts given up before they start, while the attempts still arriving keep its queue full",
			possessive(best.callee), best.wait.Round(time.Millisecond), possessive(best.caller), best.timeout, best.callee)
	}
	return lingeringAmplification(ts, sc, rows)
}

// possessive is name's, or name' for a name ending in s.
func possessive(name string) string {
	if strings.HasSuffix(name, "s") {
		return name + "'"
	}
	return name + "'s"
}

// edge is one caller's per-attempt timeout toward one callee.
type edge struct {
	caller, callee string
	timeout        time.Duration
}

// timeoutEdges lists the scenario's calls that bound each attempt, the
// client's toward the entry first.
func timeoutEdges(sc *topology.Scenario) []edge {
	var out []edge
	if c := sc.Workload.Client; c.Timeout > 0 {
		out = append(out, edge{"the client", sc.Workload.Entry, c.Timeout})
	}
	var walk func(caller string, calls []topology.Call)
	walk = func(caller string, calls []topology.Call) {
		for _, c := range calls {
			if c.To != "" && c.Timeout > 0 {
				out = append(out, edge{caller, c.To, c.Timeout})
			}
			walk(caller, c.Parallel)
		}
	}
	for _, s := range sc.Services {
		walk(s.Name, s.Calls)
	}
	return out
}

// lastRows returns the indices of the last n rows that end by end.
func lastRows(ts *metrics.TimeSeries, end time.Duration, n int) []int {
	var rows []int
	for i := len(ts.Rows) - 1; i >= 0 && len(rows) < n; i-- {
		if ts.Start+time.Duration(i+1)*ts.Interval <= end {
			rows = append(rows, i)
		}
	}
	return rows
}

// queueWait is Little's law over rows: svc's mean queue length divided by
// the attempts it admitted (arrived, not rejected) per second.
func queueWait(ts *metrics.TimeSeries, svc string, rows []int) (time.Duration, bool) {
	q := ts.Values(metrics.Column(metrics.MetricQueue, svc))
	att := ts.Values(metrics.Column(metrics.MetricAttempts, svc))
	rej := ts.Values(metrics.Column(metrics.MetricRejected, svc))
	if q == nil || att == nil {
		return 0, false
	}
	var queue, admitted float64
	for _, i := range rows {
		queue += q[i]
		admitted += att[i]
		if rej != nil {
			admitted -= rej[i]
		}
	}
	if admitted <= 0 || queue <= 0 {
		return 0, false
	}
	perSecond := admitted / (float64(len(rows)) * ts.Interval.Seconds())
	wait := queue / float64(len(rows)) / perSecond
	if math.IsInf(wait, 0) || math.IsNaN(wait) {
		return 0, false
	}
	return time.Duration(wait * float64(time.Second)), true
}

// lingeringAmplification names the service whose attempts per offered
// request over rows are furthest above their level before the trigger,
// when more than twice it.
func lingeringAmplification(ts *metrics.TimeSeries, sc *topology.Scenario, rows []int) string {
	offered := ts.Values(metrics.ColOffered)
	t, err := TriggerOf(sc)
	if offered == nil || err != nil {
		return ""
	}
	var before []int
	for i := range ts.Rows {
		start := ts.Start + time.Duration(i)*ts.Interval
		if start >= sc.Warmup && start+ts.Interval <= t.Start {
			before = append(before, i)
		}
	}
	ratio := func(att []float64, rows []int) float64 {
		var a, o float64
		for _, i := range rows {
			a, o = a+att[i], o+offered[i]
		}
		if o <= 0 {
			return math.NaN()
		}
		return a / o
	}
	best, bestSvc, bestBase := 0.0, "", 0.0
	for _, svc := range attemptColumns(ts) {
		att := ts.Values(metrics.Column(metrics.MetricAttempts, svc))
		now, base := ratio(att, rows), ratio(att, before)
		if math.IsNaN(now) || math.IsNaN(base) || base <= 0 {
			continue
		}
		if now > 2*base && now/base > best {
			best, bestSvc, bestBase = now/base, svc, base
		}
	}
	if bestSvc == "" {
		return ""
	}
	who := "retries"
	if sc.Queries() {
		who = "retries and status queries" // both are attempts
	}
	return fmt.Sprintf("%s keep %s at %.2f× attempts per offered request at the end of the arrivals (%.2f× before the trigger)",
		who, bestSvc, best*bestBase, bestBase)
}
