package serve

import (
	"testing"

	"github.com/stormsim/stormsim/metrics"
)

// TestServeStuckFactReconciliation: one stuck downstream call handed to
// reconciliation (the simulator's TestStuckFactReconciliation, served).
// Without a query endpoint at the warehouse the job's fact queries cannot
// tell, and after max_tries 2 the record goes to the manual queue; with
// one, the warehouse's records prove the write: repaired once, never
// again, at the second scan's fact query (502ms). Exact counts, the same
// in both modes.
func TestServeStuckFactReconciliation(t *testing.T) {
	for _, tc := range []struct {
		name string
		sets []string
		want func(r *metrics.Reconciliation) bool
		by   metrics.ResolvedBy
	}{
		{"manual", nil, func(r *metrics.Reconciliation) bool {
			return r.Items == 2 && r.Failed == 2 && r.ToManual == 1 && r.Repaired == 0 && r.Rerepaired == 0
		}, metrics.ResolvedBy{Manual: 1}},
		{"proved", []string{"services.warehouse.query_time.dist=constant", "services.warehouse.query_time.value=2ms"},
			func(r *metrics.Reconciliation) bool {
				return r.Items == 1 && r.Repaired == 1 && r.Rerepaired == 0 && r.Failed == 0 && r.Runs >= 2
			}, metrics.ResolvedBy{Reconciliation: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			simS, serveS := bothModes(t, "stuck-fact.yaml", tc.sets...)
			for _, run := range []struct {
				name string
				s    metrics.Summary
			}{{"simulator", simS}, {"serve", serveS}} {
				c := run.s.Certainty
				if c == nil {
					t.Fatalf("%s: no certainty", run.name)
				}
				if r := c.Reconciliation; r == nil || !tc.want(r) {
					t.Errorf("%s: reconciliation %+v", run.name, r)
				}
				if c.ResolvedBy != tc.by {
					t.Errorf("%s: resolved %+v, want %+v", run.name, c.ResolvedBy, tc.by)
				}
				if tc.by.Manual == 1 && (c.ManualQueueEnd != 1 || c.ManualQueueMax != 1) {
					t.Errorf("%s: manual queue end %d max %d, want 1 and 1", run.name, c.ManualQueueEnd, c.ManualQueueMax)
				}
				if tc.by.Reconciliation == 1 && (c.P50Ms < 501.8 || c.P50Ms > 502.6) {
					t.Errorf("%s: time to certainty %vms, want 502 (the second scan's fact query)", run.name, c.P50Ms)
				}
			}
		})
	}
}
