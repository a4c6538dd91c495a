package metrics

import "github.com/stormsim/stormsim/policies"

// EdgeSummaryOf is the summary of one call edge from its policies'
// counters and its breaker's opens: the one conversion the simulator and
// load mode report edges through.
func EdgeSummaryOf(from, to string, st policies.EdgeStats, breakerOpens int64) EdgeSummary {
	return EdgeSummary{
		From: from, To: to, Calls: st.Calls, Attempts: st.Attempts, Retries: st.Retries,
		RetriesDenied: st.RetriesDenied, RetriesDeadline: st.RetriesDeadline,
		BreakerFastFail: st.BreakerFastFail, BreakerOpens: breakerOpens,
		HedgesSent: st.HedgesSent, HedgesWon: st.HedgesWon,
		PushbackWaits: st.PushbackWaits, Throttled: st.Throttled,
		Succeeded: st.Succeeded, Failed: st.Failed, Unknown: st.Unknown,
		NotSent: st.NotSent, TransparentRetries: st.TransparentRetries,
	}
}

// Add adds o's counters to e's, keeping e's From and To: the edges of one
// caller-callee pair (fan-out members) or of one run's shards.
func (e *EdgeSummary) Add(o EdgeSummary) {
	e.Calls += o.Calls
	e.Attempts += o.Attempts
	e.Retries += o.Retries
	e.RetriesDenied += o.RetriesDenied
	e.RetriesDeadline += o.RetriesDeadline
	e.BreakerFastFail += o.BreakerFastFail
	e.BreakerOpens += o.BreakerOpens
	e.HedgesSent += o.HedgesSent
	e.HedgesWon += o.HedgesWon
	e.PushbackWaits += o.PushbackWaits
	e.Throttled += o.Throttled
	e.Succeeded += o.Succeeded
	e.Failed += o.Failed
	e.Unknown += o.Unknown
	e.Ejections += o.Ejections
	e.NotSent += o.NotSent
	e.TransparentRetries += o.TransparentRetries
	if o.Pool != nil {
		e.AddPool(*o.Pool)
	}
	if o.Phases != nil {
		if e.Phases == nil {
			e.Phases = &PhaseReport{Phases: map[string]PhaseStat{}}
		}
		e.Phases.Add(*o.Phases)
	}
}
