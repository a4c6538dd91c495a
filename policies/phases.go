package policies

import "time"

// PhaseTimeouts bound the phases of one attempt before its answer, beside
// the attempt's overall Timeout. A single socket timeout hides where the
// time went: a pool wait, a connect or a TLS handshake that runs out fails
// before any byte of the request left the caller (NotSent: the callee
// cannot have done the work), while a first byte that does not come in
// time follows a sent request (Timeout: the result is unknown). Zero means
// the phase has no bound of its own.
type PhaseTimeouts struct {
	// Pool bounds the wait for a pooled connection (GetConn→GotConn).
	Pool time.Duration
	// Connect bounds opening a new connection (TCP connect).
	Connect time.Duration
	// TLS bounds a new connection's TLS handshake.
	TLS time.Duration
	// FirstByte bounds the wait from the request's last byte written to
	// the response's first byte.
	FirstByte time.Duration
}

// Validate reports a negative phase timeout, naming its key.
func (p PhaseTimeouts) Validate() error {
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"pool_timeout", p.Pool}, {"connect_timeout", p.Connect}, {"tls_timeout", p.TLS}, {"first_byte_timeout", p.FirstByte}} {
		if f.d < 0 {
			return fieldErrorf(f.name, "must be ≥ 0, got %v", f.d)
		}
	}
	return nil
}

// IsZero reports whether no phase is bounded.
func (p PhaseTimeouts) IsZero() bool { return p == PhaseTimeouts{} }

// Sent reports whether an attempt that failed with class o may have
// reached its callee: every class but NotSent and the caller's own local
// fast fails (breaker, throttle).
func Sent(o Outcome) bool { return o != NotSent && o != BreakerOpen && o != Throttled }
