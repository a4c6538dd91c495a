package tune

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/stormsim/stormsim/metrics"
)

// DefaultPhaseMargin multiplies a phase's measured p99 into its timeout:
// the p99 leaves one attempt in a hundred beyond it, and the margin keeps
// those from failing while still cutting a phase that hangs.
const DefaultPhaseMargin = 2

// PhasePlan recommends phase timeouts for one edge of a load run, from
// the phases it measured (metrics.PhaseReport): each phase bounded at
// Margin × its p99, and the overall attempt timeout sized for a cold
// attempt (new connection) rather than a warm one.
type PhasePlan struct {
	From   string  `json:"from"`
	To     string  `json:"to"`
	Margin float64 `json:"margin"`
	// Pool, Connect, TLS and FirstByte are the recommended pool_timeout,
	// connect_timeout, tls_timeout and first_byte_timeout; 0 when the
	// phase was not measured.
	Pool      time.Duration `json:"pool_timeout_ns"`
	Connect   time.Duration `json:"connect_timeout_ns"`
	TLS       time.Duration `json:"tls_timeout_ns"`
	FirstByte time.Duration `json:"first_byte_timeout_ns"`
	// Timeout is the recommended overall attempt timeout: Margin × the
	// larger p99 of cold and warm attempts, so that a cold attempt (new
	// connection) is not cut for its handshake.
	Timeout time.Duration `json:"timeout_ns"`
	// Cold and Warm are the measured attempt times on new and on reused
	// connections.
	Cold metrics.PhaseStat `json:"cold"`
	Warm metrics.PhaseStat `json:"warm"`
	// Bimodal says the cold p99 is more than twice the warm p99: one
	// timeout for both either cuts cold attempts or waits too long for
	// warm ones, so the phases should be bounded apart.
	Bimodal bool `json:"bimodal"`
	// Warnings name the timeouts read from a p99 of too few samples to
	// bound it (MinSamples): a connect_timeout from 10 cold connections.
	Warnings []string `json:"warnings,omitempty"`
}

// RecommendPhases returns a plan per edge that measured its phases (load
// mode's net/http path). margin ≤ 0 means DefaultPhaseMargin.
func RecommendPhases(edges []metrics.EdgeSummary, margin float64) ([]PhasePlan, error) {
	if margin <= 0 {
		margin = DefaultPhaseMargin
	}
	var out []PhasePlan
	for _, e := range edges {
		if e.Phases == nil {
			continue
		}
		ph := e.Phases.Phases
		at := func(name string) time.Duration {
			s, ok := ph[name]
			if !ok || s.Count == 0 {
				return 0
			}
			// Whole milliseconds, rounded up: the p99 is read from log
			// buckets, good to 9%, so finer digits would be noise.
			return max(time.Millisecond, time.Duration(math.Ceil(margin*s.P99Ms))*time.Millisecond)
		}
		p := PhasePlan{From: e.From, To: e.To, Margin: margin,
			Pool: at("pool_wait"), Connect: at("connect"), TLS: at("tls"), FirstByte: at("first_byte"),
			Cold: ph[metrics.PhaseCold], Warm: ph[metrics.PhaseWarm]}
		p.Timeout = max(at(metrics.PhaseCold), at(metrics.PhaseWarm))
		var few []string
		for _, name := range []string{"pool_wait", "connect", "tls", "first_byte", metrics.PhaseCold, metrics.PhaseWarm} {
			if st, ok := ph[name]; ok && st.Count > 0 && int(st.Count) < MinSamples(0.99, UpperBoundConfidence) {
				few = append(few, fmt.Sprintf("%s (%d samples)", name, st.Count))
			}
		}
		if len(few) > 0 {
			p.Warnings = append(p.Warnings, fmt.Sprintf("the p99 of %s: fewer than the %d that bound a p99 from above at %g%% confidence %s; "+
				"a timeout from it may cut more than 1%% of attempts: run the load longer (or, for new connections, with more of them)",
				strings.Join(few, ", "), MinSamples(0.99, UpperBoundConfidence), 100*UpperBoundConfidence, minSamplesRule(0.99)))
		}
		p.Bimodal = p.Cold.Count > 0 && p.Warm.Count > 0 && p.Cold.P99Ms > 2*p.Warm.P99Ms
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("tune: no edge measured its phases (a load run over net/http: --http-client net, or a policy with phase timeouts)")
	}
	return out, nil
}

// WritePhasePlans writes plans as text for people.
func WritePhasePlans(w io.Writer, plans []PhasePlan) error {
	ew := metrics.NewErrWriter(w)
	for _, p := range plans {
		ew.Printf("%s->%s (timeouts at %g × the phase's p99)\n", p.From, p.To, p.Margin)
		for _, kv := range []struct {
			key string
			d   time.Duration
		}{{"pool_timeout", p.Pool}, {"connect_timeout", p.Connect}, {"tls_timeout", p.TLS}, {"first_byte_timeout", p.FirstByte}, {"timeout", p.Timeout}} {
			if kv.d > 0 {
				ew.Printf("  %-19s %v\n", kv.key+":", kv.d)
			}
		}
		ew.Printf("  attempts on a new connection (cold): %d, p50 %.3gms p99 %.3gms\n", p.Cold.Count, p.Cold.P50Ms, p.Cold.P99Ms)
		ew.Printf("  attempts on a reused connection (warm): %d, p50 %.3gms p99 %.3gms\n", p.Warm.Count, p.Warm.P50Ms, p.Warm.P99Ms)
		if p.Bimodal {
			ew.Printf("  cold attempts are more than twice as slow as warm ones at p99: bound the pool wait, connect and TLS\n  phases on their own rather than raising one timeout for both\n")
		}
		for _, w := range p.Warnings {
			ew.Printf("  warning: %s\n", w)
		}
	}
	return ew.Err()
}
