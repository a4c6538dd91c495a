package experiments

import (
	"testing"
)

// A deploy resets every connection: one overall timeout collapses into
// timeouts and retries, phase timeouts with transparent retries do not.
func TestDeployReconnect(t *testing.T) {
	const n = 4
	runs := append(seeds("", n), seeds("phase-timeouts", n)...)
	rs := runExperiment(t, "deploy-reconnect", runs...)
	for i, r := range rs {
		s, e := r.Summary, r.Summary.Edges[0]
		if e.Pool == nil || e.Pool.Resets == 0 {
			t.Fatalf("run %d: the deploy reset no connection", i)
		}
		unknown := float64(s.Requests.Unknown) / float64(s.Requests.Offered)
		if i < n {
			// The reset comes at 20s of 40s, after the 5s warm-up: a
			// collapse leaves a large share of the counted requests
			// unknown (a spike alone would leave a few percent).
			if unknown < 0.1 || e.Retries < s.Requests.Offered/10 {
				t.Errorf("baseline seed %d: %.1f%% unknown, %d retries: no storm", i+1, 100*unknown, e.Retries)
			}
			continue
		}
		// Only an answer slower than the 100ms first-byte bound can time
		// out: P(lognormal p50 5ms, p99 30ms > 100ms) ≈ 5e-5 per attempt,
		// and three in a row for an unknown outcome. Allow 1e-3.
		if unknown > 1e-3 || e.Retries > s.Requests.Offered/1000 {
			t.Errorf("phase-timeouts seed %d: %.2f%% unknown, %d retries of %d: still a storm", i+1-n, 100*unknown, e.Retries, s.Requests.Offered)
		}
		// A transparent retry never re-sends a sent write: duplicates can
		// only come from the ordinary retries of first-byte timeouts.
		if s.Duplicates > e.Retries {
			t.Errorf("phase-timeouts seed %d: %d duplicates from %d retries", i+1-n, s.Duplicates, e.Retries)
		}
	}
}
