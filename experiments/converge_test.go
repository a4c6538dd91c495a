package experiments

import (
	"testing"

	"github.com/stormsim/stormsim/metrics"
)

// The order-recovery walk-through's completion conditions (issue 34,
// item 7), as its page states them.
func TestOrderRecovery(t *testing.T) {
	rs := runExperiment(t, "order-recovery", run{}, run{variant: "warehouse-query"}, run{variant: "reconcile-often"})
	for i, r := range rs {
		s, c := r.Summary, r.Summary.Certainty
		if c == nil {
			t.Fatalf("run %d: no certainty", i)
		}
		// One order per order key.
		if s.Duplicates != 0 {
			t.Errorf("run %d: %d duplicate orders", i, s.Duplicates)
		}
		// Each event changes inventory once, though some were published twice.
		inv := service(t, r, "inventory").Consumer
		if inv.DuplicateEffects != 0 || inv.LostEffects != 0 || inv.Published <= inv.Intents {
			t.Errorf("run %d: inventory %+v: want republished events applied once each", i, *inv)
		}
		// Every UNKNOWN can be queried: each intent unknown to the page
		// sent queries, and none stays uncertain.
		polled := int64(float64(c.Queries)/c.QueriesPerIntent + 0.5)
		if s.Requests.Unknown == 0 || polled != s.Requests.Unknown || c.ResolvedBy.Never != 0 {
			t.Errorf("run %d: %d unknown, %d polled, %d never certain", i, s.Requests.Unknown, polled, c.ResolvedBy.Never)
		}
		if got := service(t, r, "order").Queries; got != c.Queries {
			t.Errorf("run %d: order counts %d queries, certainty %d", i, got, c.Queries)
		}
		// Reconciliation repairs nothing twice.
		if rc := c.Reconciliation; rc == nil || rc.Rerepaired != 0 || rc.Runs < 2 {
			t.Errorf("run %d: reconciliation %+v", i, rc)
		}
	}
	base, query, often := rs[0].Summary.Certainty, rs[1].Summary.Certainty, rs[2].Summary.Certainty
	// Without an idempotent query at the warehouse nothing proves a stuck
	// order: each goes to the manual queue and, older than alert_after,
	// alerts; recovery hands the crashed owners' records on as UNKNOWN.
	if base.ResolvedBy.Manual == 0 || base.ResolvedBy.Reconciliation != 0 || base.Alerts < base.ResolvedBy.Manual ||
		base.ManualQueueEnd != base.ResolvedBy.Manual || base.Recoveries.Unknown == 0 || base.Recoveries.Succeeded != 0 {
		t.Errorf("baseline: %+v, recoveries %+v", *base, *base.Recoveries)
	}
	// With one, recovery and reconciliation settle every stuck order.
	if query.ResolvedBy.Manual != 0 || query.ResolvedBy.Reconciliation == 0 || query.Recoveries.Succeeded == 0 {
		t.Errorf("warehouse-query: %+v", *query)
	}
	// Scanning twice as often gives the same repairs.
	if often.Reconciliation.Repaired != query.Reconciliation.Repaired || often.Reconciliation.Runs <= query.Reconciliation.Runs {
		t.Errorf("reconcile-often repaired %d in %d scans, warehouse-query %d in %d", often.Reconciliation.Repaired,
			often.Reconciliation.Runs, query.Reconciliation.Repaired, query.Reconciliation.Runs)
	}
}

// The same outage, polled every 100 ms without jitter vs from a random
// phase with a jittered, capped backoff: the query load per hop and the
// time to certainty differ by the margins the page reports.
func TestPollingStorm(t *testing.T) {
	rs := runExperiment(t, "polling-storm", run{variant: "fixed"}, run{variant: "backoff"})
	fixed, backoff := rs[0].Summary, rs[1].Summary
	of, ob := service(t, rs[0], "order"), service(t, rs[1], "order")
	for _, s := range []metrics.Summary{fixed, backoff} {
		if s.Duplicates != 0 {
			t.Errorf("%d duplicates", s.Duplicates)
		}
	}
	if of.Queries < 10*ob.Queries || of.Queries != fixed.Certainty.Queries {
		t.Errorf("queries at order: fixed %d, backoff %d: want fixed ≥ 10× backoff", of.Queries, ob.Queries)
	}
	if of.Amplification < 5*ob.Amplification {
		t.Errorf("order amplification: fixed %.1f, backoff %.1f", of.Amplification, ob.Amplification)
	}
	if fixed.Certainty.P99Ms < 2*backoff.Certainty.P99Ms || backoff.Certainty.ResolvedBy.Never != 0 || fixed.Certainty.ResolvedBy.Never == 0 {
		t.Errorf("certainty: fixed %+v, backoff %+v", *fixed.Certainty, *backoff.Certainty)
	}
}
