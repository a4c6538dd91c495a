package serve

import (
	"math"
	"testing"

	"github.com/stormsim/stormsim/metrics"
)

// TestServeCrashedOwnerRecovery: one owner crashes after its call to the
// ledger (the simulator's TestCrashedOwnerRecovery, served): its record
// stays PROCESSING and the client retries. With recovery the retries past
// the lease are answered in progress and the recovery task, at the
// lease's end (200ms), asks the ledger (1ms): found, SUCCEEDED — executed
// once, certain by recovery at 201ms. Without recovery a retry past the
// lease takes the key over and runs the effect a second time. Exact
// counts, the same in both modes.
func TestServeCrashedOwnerRecovery(t *testing.T) {
	for _, tc := range []struct {
		name       string
		sets       []string
		executions int64
		by         metrics.ResolvedBy
		recovered  int64
	}{
		{name: "recovery", executions: 1, by: metrics.ResolvedBy{Recovery: 1}, recovered: 1},
		{name: "takeover", sets: []string{"services.orders.recovery=null"}, executions: 2, by: metrics.ResolvedBy{Reply: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			simS, serveS := bothModes(t, "crashed-owner.yaml", tc.sets...)
			for _, run := range []struct {
				name string
				s    metrics.Summary
			}{{"simulator", simS}, {"serve", serveS}} {
				s, c := run.s, run.s.Certainty
				if c == nil {
					t.Fatalf("%s: no certainty", run.name)
				}
				orders := serviceNamed(t, s, "orders")
				if orders.Executions != tc.executions || c.ResolvedBy != tc.by {
					t.Errorf("%s: executions %d, resolved %+v; want %d, %+v", run.name, orders.Executions, c.ResolvedBy, tc.executions, tc.by)
				}
				if tc.recovered == 0 {
					continue
				}
				if c.Recoveries == nil || c.Recoveries.Succeeded != tc.recovered || serviceNamed(t, s, "ledger").FactQueries != 1 {
					t.Errorf("%s: recoveries %+v, ledger fact queries %d; want %d succeeded, 1 fact query",
						run.name, c.Recoveries, serviceNamed(t, s, "ledger").FactQueries, tc.recovered)
				}
				if c.P50Ms < 200.8 || c.P50Ms > 201.2 {
					t.Errorf("%s: time to certainty %vms, want 201 (lease end + the ledger's query)", run.name, c.P50Ms)
				}
			}
		})
	}
}

// TestServeRecoveriesAgree: owners crashing at random (p = 0.1) over
// about N = 500 Poisson writes, each crash recovered from the ledger's
// records. The crashes are binomial: mean Np = 50, sd √(Np(1−p)) = 6.7;
// each mode's recoveries within 4 sd (27) of Np — on the writes it
// actually offered — and the two within 4·√2 sd (38). In both, every
// write executes exactly once (the fence holds), every crash is resolved
// by recovery and every other write by its reply.
func TestServeRecoveriesAgree(t *testing.T) {
	const p = 0.1
	simS, serveS := bothModes(t, "crashes.yaml")
	rec := func(name string, s metrics.Summary) float64 {
		c := s.Certainty
		if c == nil || c.Recoveries == nil {
			t.Fatalf("%s: certainty %+v, want recoveries", name, c)
		}
		n := float64(c.Intents)
		sd := math.Sqrt(n * p * (1 - p))
		got := float64(c.Recoveries.Succeeded)
		if math.Abs(got-n*p) > 4*sd {
			t.Errorf("%s: %v recoveries of %v writes, want %v ± %.0f", name, got, n, n*p, 4*sd)
		}
		if c.ResolvedBy != (metrics.ResolvedBy{Reply: c.Intents - c.Recoveries.Succeeded, Recovery: c.Recoveries.Succeeded}) {
			t.Errorf("%s: resolved %+v with %d recoveries of %d intents", name, c.ResolvedBy, c.Recoveries.Succeeded, c.Intents)
		}
		if orders := serviceNamed(t, s, "orders"); orders.Executions != c.Intents || s.Duplicates != 0 {
			t.Errorf("%s: %d executions, %d duplicates of %d writes; want each once", name, orders.Executions, s.Duplicates, c.Intents)
		}
		t.Logf("%s: %d intents, recoveries %+v, p50 %.1fms max %.1fms", name, c.Intents, *c.Recoveries, c.P50Ms, c.MaxMs)
		return got
	}
	rs, rv := rec("simulator", simS), rec("serve", serveS)
	if n := float64(simS.Certainty.Intents); math.Abs(rs-rv) > 4*math.Sqrt(2*n*p*(1-p)) {
		t.Errorf("recoveries: simulator %v, serve %v, want within %.0f", rs, rv, 4*math.Sqrt(2*n*p*(1-p)))
	}
}
