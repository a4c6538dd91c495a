package metrics

import (
	"fmt"
	"math"
	"strings"
)

// PhaseNames are the phases of an HTTP attempt that load mode measures
// (net/http/httptrace), in the order they happen: the wait for a pooled
// connection (GetConn→GotConn, a new connection's DNS, connect and TLS
// included), the DNS lookup, TCP connect and TLS handshake of a new
// connection, writing the request, waiting for the first response byte,
// and reading the rest of the response.
var PhaseNames = []string{"pool_wait", "dns", "connect", "tls", "write", "first_byte", "read"}

// PhaseCold and PhaseWarm name, beside the phases, the whole time of
// answered attempts (GetConn to the last byte) sent on a new connection
// (cold: its connect and handshake included) and on a reused one (warm).
// Mixed into one distribution they make it multi-modal, and a timeout set
// at its tail either cuts every cold attempt or waits too long for warm ones.
const (
	PhaseCold = "attempt_cold"
	PhaseWarm = "attempt_warm"
)

// PhaseStat summarizes one phase's durations over the attempts that went
// through it; quantiles come from an HDR histogram at 2 significant
// figures (within 1 %).
type PhaseStat struct {
	Count  int64   `json:"count"`
	MeanMs float64 `json:"mean_ms"`
	P50Ms  float64 `json:"p50_ms"`
	P99Ms  float64 `json:"p99_ms"`
	MaxMs  float64 `json:"max_ms"`
	// SDMs is the durations' standard deviation (exact, not bucketed):
	// how far one phase strays from its mean, which a model calibrated on
	// the mean must allow for.
	SDMs float64 `json:"sd_ms,omitempty"`
}

// PhaseReport is one edge's attempts split by phase (load mode): how long
// each phase took, in which phase failed attempts failed, and how many
// failed before they were sent (not_sent: pool wait, DNS, connect, TLS),
// which the callee cannot have seen, counted apart from those whose
// outcome is unknown.
type PhaseReport struct {
	Phases map[string]PhaseStat `json:"phases"`
	// FailedIn counts failed attempts by the phase they failed in.
	FailedIn map[string]int64 `json:"failed_in,omitempty"`
	// NotSent counts attempts that failed before any byte was written.
	NotSent int64 `json:"not_sent"`
	// NewConnections counts connections dialed; Handshakes TLS handshakes
	// completed; Reused attempts sent on a connection already open.
	NewConnections int64 `json:"new_connections"`
	Handshakes     int64 `json:"handshakes"`
	Reused         int64 `json:"reused"`
	// Waited counts attempts that found no idle connection and waited for
	// one (a new one, or one another attempt released): the simulator's
	// pool.waited.
	Waited int64 `json:"waited"`
	// GRPCTransparentRetries counts, over gRPC, the streams grpc-go itself
	// sent again beneath the attempts because they never reached the
	// server (gRFC A6's transparent retry: refused, or on a connection
	// that closed before they went out); none of them was seen by the
	// callee, and they are not attempts of the call policy.
	GRPCTransparentRetries int64 `json:"grpc_transparent_retries,omitempty"`
}

// Add merges o into r: counts add, means are weighted by count, maxima
// are kept; merged quantiles are the larger of the two, an upper bound.
func (r *PhaseReport) Add(o PhaseReport) {
	if r.Phases == nil {
		r.Phases = map[string]PhaseStat{}
	}
	for name, s := range o.Phases {
		t := r.Phases[name]
		if n := t.Count + s.Count; n > 0 {
			// The second moments add; the variance is theirs less the
			// merged mean's square.
			m2 := (float64(t.Count)*(t.SDMs*t.SDMs+t.MeanMs*t.MeanMs) + float64(s.Count)*(s.SDMs*s.SDMs+s.MeanMs*s.MeanMs)) / float64(n)
			t.MeanMs = (t.MeanMs*float64(t.Count) + s.MeanMs*float64(s.Count)) / float64(n)
			t.SDMs = math.Sqrt(max(0, m2-t.MeanMs*t.MeanMs))
		}
		t.Count += s.Count
		t.P50Ms, t.P99Ms, t.MaxMs = max(t.P50Ms, s.P50Ms), max(t.P99Ms, s.P99Ms), max(t.MaxMs, s.MaxMs)
		r.Phases[name] = t
	}
	for name, n := range o.FailedIn {
		if r.FailedIn == nil {
			r.FailedIn = map[string]int64{}
		}
		r.FailedIn[name] += n
	}
	r.NotSent += o.NotSent
	r.NewConnections += o.NewConnections
	r.Handshakes += o.Handshakes
	r.Reused += o.Reused
	r.Waited += o.Waited
	r.GRPCTransparentRetries += o.GRPCTransparentRetries
}

// writeConnLines adds to the text summary one line per edge with a
// connection pool (simulator) or measured phases (load mode): where the
// time before the answer went, and how many attempts were never sent.
// Edges with neither print nothing, so existing summaries are unchanged.
func writeConnLines(ew *ErrWriter, edges []EdgeSummary) {
	for _, e := range edges {
		if pl := e.Pool; pl != nil {
			ew.Printf("pool       %s->%s: %d of %d attempts waited for a connection, mean %s ms, max %s ms; %d handshakes; not sent %d (pool %d, connect %d, tls %d)\n",
				e.From, e.To, pl.Waited, pl.Acquired, num(pl.WaitMeanMs), num(pl.WaitMaxMs), pl.Handshakes,
				pl.PoolTimeouts+pl.ConnectTimeouts+pl.TLSTimeouts, pl.PoolTimeouts, pl.ConnectTimeouts, pl.TLSTimeouts)
		}
		ph := e.Phases
		if ph == nil {
			continue
		}
		var parts []string
		for _, name := range PhaseNames {
			if st, ok := ph.Phases[name]; ok {
				parts = append(parts, fmt.Sprintf("%s %s", name, num(st.P99Ms)))
			}
		}
		var failed []string
		for _, name := range PhaseNames {
			if n := ph.FailedIn[name]; n > 0 {
				failed = append(failed, fmt.Sprintf("%s %d", name, n))
			}
		}
		var grpc string
		if n := ph.GRPCTransparentRetries; n > 0 {
			grpc = fmt.Sprintf("; %d grpc-go transparent retries", n)
		}
		ew.Printf("phases     %s->%s p99 ms: %s; not sent %d; failed in: %s; %d new connections, %d reused%s\n",
			e.From, e.To, strings.Join(parts, ", "), ph.NotSent, orDash(strings.Join(failed, ", ")), ph.NewConnections, ph.Reused, grpc)
	}
}
