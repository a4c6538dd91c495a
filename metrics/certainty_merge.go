package metrics

import (
	"fmt"
	"math"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// mergeCertainty completes Merge's out with the convergence of the parts'
// writes, when any part has it: the time-to-certainty histograms summed
// bucket by bucket, Summary.Certainty and each service's query load. Parts
// that partition a run's intents give, of the whole run:
//
//   - exactly: every count (intents, resolved_by, alerts, queries,
//     resubmits, recoveries, reconciliation, manual_queue_end, each
//     service's queries and fact_queries), queries_per_intent (the
//     querying intents are recovered from each part's ratio), max_ms (the
//     largest), mean_ms (each part's mean weighted by its certain
//     intents), and p50_ms and p99_ms (from the merged histogram, clamped
//     to max_ms, as the producers read them);
//   - a lower bound: unknown_max and manual_queue_max. Each part knows
//     only its own peak, and the parts' peaks need not coincide, so the
//     whole run's peak lies between the largest of them and their sum.
//     The merge reports the most it can prove: the largest part's peak,
//     the merged series' largest unknown_intents (manual_queue) at an
//     interval's end, and for the manual queue its merged final length.
//     reconciliation.runs sums the scans of every part's job, which is
//     what shards that each ran the job did.
//
// Without histograms the quantiles of several parts cannot be combined:
// the part with the most certain intents stands in, as for latency.
func mergeCertainty(parts []*Result, out *Result) error {
	h, err := mergeHist(parts, func(r *Result) *hdrhistogram.Histogram { return r.Certainty })
	if err != nil {
		return fmt.Errorf("metrics: merge: certainty: %w", err)
	}
	out.Certainty = h
	var c *Certainty
	var querying int64
	var weighted float64 // Σ mean·certain over the parts
	var largest *Certainty
	for _, p := range parts {
		pc := p.Summary.Certainty
		if pc == nil {
			continue
		}
		if c == nil {
			c = &Certainty{}
		}
		c.Intents += pc.Intents
		c.ResolvedBy.add(pc.ResolvedBy)
		c.Alerts += pc.Alerts
		c.UnknownMax = max(c.UnknownMax, pc.UnknownMax)
		c.ManualQueueMax = max(c.ManualQueueMax, pc.ManualQueueMax)
		c.ManualQueueEnd += pc.ManualQueueEnd
		c.Queries += pc.Queries
		c.Resubmits += pc.Resubmits
		if pc.QueriesPerIntent > 0 {
			querying += int64(math.Round(float64(pc.Queries) / pc.QueriesPerIntent))
		}
		c.MaxMs = max(c.MaxMs, pc.MaxMs)
		weighted += pc.MeanMs * float64(pc.Certain())
		if largest == nil || pc.Certain() > largest.Certain() {
			largest = pc
		}
		if rc := pc.Recoveries; rc != nil {
			if c.Recoveries == nil {
				c.Recoveries = &Recoveries{}
			}
			c.Recoveries.add(rc)
		}
		if rc := pc.Reconciliation; rc != nil {
			if c.Reconciliation == nil {
				c.Reconciliation = &Reconciliation{}
			}
			c.Reconciliation.add(rc)
		}
	}
	mergeQueryLoad(parts, &out.Summary)
	if c == nil {
		return nil
	}
	if len(parts) == 1 {
		out.Summary.Certainty = parts[0].Summary.Certainty.clone()
		return nil
	}
	if n := c.Certain(); n > 0 {
		c.MeanMs = weighted / float64(n)
	}
	if querying > 0 {
		c.QueriesPerIntent = float64(c.Queries) / float64(querying)
	}
	switch {
	case h != nil && h.TotalCount() > 0:
		l := LatencyOf(h)
		c.P50Ms, c.P99Ms = min(l.P50, c.MaxMs), min(l.P99, c.MaxMs)
	case largest != nil:
		c.P50Ms, c.P99Ms = largest.P50Ms, largest.P99Ms
	}
	if ts := out.Series; ts != nil {
		for _, v := range ts.Values(ColUnknownIntents) {
			c.UnknownMax = max(c.UnknownMax, int64(v))
		}
		for _, v := range ts.Values(ColManualQueue) {
			c.ManualQueueMax = max(c.ManualQueueMax, int64(v))
		}
	}
	c.ManualQueueMax = max(c.ManualQueueMax, c.ManualQueueEnd)
	out.Summary.Certainty = c
	return nil
}

// clone returns a deep copy of c.
func (c *Certainty) clone() *Certainty {
	d := *c
	if c.Recoveries != nil {
		rc := *c.Recoveries
		d.Recoveries = &rc
	}
	if c.Reconciliation != nil {
		rc := *c.Reconciliation
		d.Reconciliation = &rc
	}
	return &d
}

// mergeQueryLoad sums each service's status and fact queries over the
// parts into s's services of the same name.
func mergeQueryLoad(parts []*Result, s *Summary) {
	idx := make(map[string]int, len(s.Services))
	for i, v := range s.Services {
		idx[v.Name] = i
	}
	for _, p := range parts {
		for _, ps := range p.Summary.Services {
			if i, ok := idx[ps.Name]; ok {
				s.Services[i].Queries += ps.Queries
				s.Services[i].FactQueries += ps.FactQueries
			}
		}
	}
}

func (r *ResolvedBy) add(o ResolvedBy) {
	r.Reply += o.Reply
	r.Query += o.Query
	r.Recovery += o.Recovery
	r.Reconciliation += o.Reconciliation
	r.Manual += o.Manual
	r.Never += o.Never
}

func (r *Recoveries) add(o *Recoveries) {
	r.Succeeded += o.Succeeded
	r.Failed += o.Failed
	r.Resumed += o.Resumed
	r.Unknown += o.Unknown
}

func (r *Reconciliation) add(o *Reconciliation) {
	r.Runs += o.Runs
	r.Items += o.Items
	r.Repaired += o.Repaired
	r.Rerepaired += o.Rerepaired
	r.Failed += o.Failed
	r.ToManual += o.ToManual
}
