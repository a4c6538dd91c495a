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
	// Queue bounds the same wait as Pool when the pool is a proxy's
	// per-server queue (HAProxy's server maxconn with timeout queue):
	// running out is the proxy's own 503, Unavailable, and the request
	// never reached the server. At most one of Pool and Queue is set.
	Queue time.Duration
}

// PoolWait is the bound on an attempt's wait for a slot of its replica's
// pool and the class of an attempt whose wait ran out: Queue's
// Unavailable (the proxy answered 503 itself) when set, else Pool's
// NotSent (the caller's own pool gave up). 0 leaves the wait unbounded.
// It is the one place that decides what a queue timeout means, for the
// simulator and for load mode alike.
func (p PhaseTimeouts) PoolWait() (time.Duration, Outcome) {
	if p.Queue > 0 {
		return p.Queue, Unavailable
	}
	return p.Pool, NotSent
}

// Validate reports a negative phase timeout, naming its key.
func (p PhaseTimeouts) Validate() error {
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"pool_timeout", p.Pool}, {"connect_timeout", p.Connect}, {"tls_timeout", p.TLS}, {"first_byte_timeout", p.FirstByte},
		{"queue_timeout", p.Queue}} {
		if f.d < 0 {
			return fieldErrorf(f.name, "must be ≥ 0, got %v", f.d)
		}
	}
	if p.Pool > 0 && p.Queue > 0 {
		return fieldErrorf("queue_timeout", "bounds the same wait as pool_timeout: keep one")
	}
	return nil
}

// IsZero reports whether no phase is bounded.
func (p PhaseTimeouts) IsZero() bool { return p == PhaseTimeouts{} }

// Sent reports whether an attempt that failed with class o may have
// reached its callee: every class but NotSent and the caller's own local
// fast fails (breaker, throttle).
func Sent(o Outcome) bool { return o != NotSent && o != BreakerOpen && o != Throttled }
