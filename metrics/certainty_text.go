package metrics

import (
	"fmt"
	"strings"
)

// Certain returns how many intents reached a known terminal state: those
// resolved by a reply, a query, a recovery task or the reconciliation job.
// An intent in the manual queue is certain only after a person works it,
// and one never resolved is not; Result.Certainty holds the time to
// certainty of exactly the Certain ones.
func (c *Certainty) Certain() int64 {
	r := c.ResolvedBy
	return r.Reply + r.Query + r.Recovery + r.Reconciliation
}

// Unresolved returns the intents the run could not make certain: in the
// manual queue or never resolved.
func (c *Certainty) Unresolved() int64 { return c.ResolvedBy.Manual + c.ResolvedBy.Never }

// Resolution is one way intents became certain (or did not), under its
// JSON name in resolved_by, with how many intents it settled.
type Resolution struct {
	Name    string
	Intents int64
}

// Resolutions lists r's counts under their JSON names, in the order a
// reader follows an intent: the reply first, never last. The text summary
// and report.html print them in this order.
func (r ResolvedBy) Resolutions() []Resolution {
	return []Resolution{{"reply", r.Reply}, {"query", r.Query}, {"recovery", r.Recovery},
		{"reconciliation", r.Reconciliation}, {"manual", r.Manual}, {"never", r.Never}}
}

// writeCertainty writes the certainty block of FormatText: time to
// certainty, what resolved the intents, alerts and the manual queue, the
// confirming traffic, then the query load per service. Nothing without a
// Certainty, so summaries of scenarios without convergence read as before.
func writeCertainty(ew *ErrWriter, s *Summary) {
	c := s.Certainty
	if c == nil {
		return
	}
	p := ew.Printf
	if n := c.Certain(); n > 0 {
		p("certainty  %d intents: time to certainty mean %s  p50 %s  p99 %s  max %s (ms from the first attempt, over the %d that became certain)\n",
			c.Intents, num(c.MeanMs), num(c.P50Ms), num(c.P99Ms), num(c.MaxMs), n)
	} else {
		p("certainty  %d intents: time to certainty - (none became certain)\n", c.Intents)
	}
	var by []string
	for _, r := range c.ResolvedBy.Resolutions() {
		by = append(by, fmt.Sprintf("%s %d (%s)", r.Name, r.Intents, pct(r.Intents, c.Intents)))
	}
	p("           resolved by %s\n", strings.Join(by, "  "))
	p("           alerts %d (unknown past alert_after)  unknown at most %d at once  manual queue max %d, %d at the end\n",
		c.Alerts, c.UnknownMax, c.ManualQueueMax, c.ManualQueueEnd)
	p("           queries %d, %s per intent that queried", c.Queries, num(c.QueriesPerIntent))
	if c.Resubmits > 0 {
		p("  resubmits %d (NOT_FOUND past the lease)", c.Resubmits)
	}
	p("\n")
	if rc := c.Recoveries; rc != nil {
		p("           recovery tasks: succeeded %d  failed_final %d  resumed %d  unknown %d (to reconciliation)\n",
			rc.Succeeded, rc.Failed, rc.Resumed, rc.Unknown)
	}
	if rc := c.Reconciliation; rc != nil {
		p("           reconciliation %d runs: %d items, %d repaired", rc.Runs, rc.Items, rc.Repaired)
		if rc.Rerepaired > 0 {
			p(" (%d REPAIRED TWICE: a second run must repair nothing)", rc.Rerepaired)
		}
		p(", %d fact queries failed, %d to manual\n", rc.Failed, rc.ToManual)
	}
	var load []string
	for _, v := range s.Services {
		var parts []string
		if v.Queries > 0 {
			parts = append(parts, fmt.Sprintf("%d status queries (%s of its %d attempts)", v.Queries, pct(v.Queries, v.Attempts), v.Attempts))
		}
		if v.FactQueries > 0 {
			parts = append(parts, fmt.Sprintf("%d fact queries", v.FactQueries))
		}
		if len(parts) > 0 {
			load = append(load, v.Name+" "+strings.Join(parts, ", "))
		}
	}
	if len(load) > 0 {
		p("query load %s\n", strings.Join(load, "; "))
	}
}
