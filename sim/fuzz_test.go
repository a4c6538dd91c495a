package sim

import (
	"context"
	"strings"
	"testing"

	"github.com/stormsim/stormsim/internal/scenariogen"
)

// FuzzRun checks invariants that hold for every scenario: the run
// completes, every logical request gets exactly one outcome, and once it
// has drained no attempt, request, worker or queue slot is left held.
func FuzzRun(f *testing.F) {
	for _, seed := range [][]byte{
		{}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, {3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
		{255, 254, 253, 7, 7, 7, 7, 0, 1, 0, 1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		sc := scenariogen.FromBytes(b)
		m, err := build(sc)
		if err != nil {
			t.Skipf("scenario rejected: %v", err) // an invalid mix, not a model failure
		}
		res := m.run(context.Background(), Options{})
		sum := res.Summary
		if sum.Status != StatusComplete {
			t.Fatalf("status %s", sum.Status)
		}
		r := sum.Requests
		if r.Offered != r.Succeeded+r.Failed+r.Unknown {
			t.Fatalf("outcomes do not add up: %+v", r)
		}
		if m.alive != 0 || m.liveReqs != 0 {
			t.Fatalf("left alive: %d attempts, %d requests", m.alive, m.liveReqs)
		}
		// Every call and group record went back to its pool: a step's
		// calls finished, or were aborted with the attempt that made them.
		if c, g := &m.calls, &m.groups; len(c.free) != c.made || len(g.free) != g.made {
			t.Fatalf("records not returned: %d of %d calls, %d of %d groups", c.made-len(c.free), c.made, g.made-len(g.free), g.made)
		}
		for _, svc := range m.services {
			for _, s := range svc.reps {
				if !s.cm.Drained() {
					t.Fatalf("%s replica %d not drained: busy %d queue %d inflight %d", s.name, s.rep, s.cm.Busy(), s.qlen(), s.cm.Inflight())
				}
			}
		}
		// Every attempt sent to a replica came back to its balancer.
		for _, e := range m.edges {
			for i := 0; e.bal != nil && i < e.bal.Replicas(); i++ {
				if n := e.bal.Outstanding(i); n != 0 {
					t.Fatalf("edge %s->%s: %d attempts still outstanding at replica %d", e.from, e.to, n, i)
				}
			}
		}
		for _, s := range sum.Services {
			var att int64
			for _, r := range s.Replicas {
				att += r.Attempts
				if r.Utilization < 0 || r.Utilization > 1+1e-9 {
					t.Fatalf("%s replica %d utilization %v", s.Name, r.Replica, r.Utilization)
				}
			}
			if len(s.Replicas) > 0 && att != s.Attempts {
				t.Fatalf("%s: replicas' attempts %d, service's %d", s.Name, att, s.Attempts)
			}
		}
		for _, s := range sum.Services {
			if s.Attempts < s.Succeeded+s.Failed+s.Rejected {
				t.Fatalf("%s answered more than it received: %+v", s.Name, s)
			}
			if s.Utilization < 0 || s.Utilization > 1+1e-9 {
				t.Fatalf("%s utilization %v", s.Name, s.Utilization)
			}
		}
		ts := res.Series
		for i, name := range ts.Columns {
			for r, row := range ts.Rows {
				v := row[i]
				if v < -1e-9 || ((strings.HasPrefix(name, "utilization/") || strings.HasPrefix(name, "replica_utilization/")) && v > 1+1e-9) {
					t.Fatalf("row %d: %s = %v", r, name, v)
				}
			}
		}
		if sum.Amplification < 0 || sum.SimTimeS < sc.Duration.Seconds() {
			t.Fatalf("bad summary %+v", sum)
		}
	})
}
