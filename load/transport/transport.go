package transport

import (
	"context"
	"net"
	"net/http"
	"time"

	"github.com/stormsim/stormsim/load/internal/clock"
	"github.com/stormsim/stormsim/policies"
)

// Transport sends one attempt and classifies what came back. An edge
// chooses its transport once, when it is built: HTTP (net/http, its phases
// traced), Lean (the driver's HTTP/1.1 client to one target) or a
// GRPCClient; Func adapts a function. Implementations are safe for
// concurrent use.
type Transport interface {
	// Send performs a, bounded by ctx and by o.Timeout, and returns its
	// answer; it never keeps a once it returns.
	Send(ctx context.Context, a *Attempt, o Sending) Answer
}

// Sending is how an edge bounds and observes one attempt. The zero value
// sends with no timeout, no phase timeouts and no recording.
type Sending struct {
	// Timeout bounds the attempt from when it is sent; 0 means ctx alone.
	Timeout time.Duration
	// Clock runs Timeout (the run's clock, scripted in tests); nil means
	// the wall clock.
	Clock clock.Clock
	// Phases are the edge's phase timeouts, enforced as the attempt goes
	// through its phases (pool_timeout, connect_timeout, ...).
	Phases policies.PhaseTimeouts
	// PhaseAware: the edge tells a failure before the request was written
	// (NotSent) from others, so such a failure reaches it as NotSent.
	PhaseAware bool
	// Record, if not nil, records the attempt's phases.
	Record *PhaseRecorder
}

// bound returns ctx bounded by o.Timeout on o.Clock.
func (o *Sending) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if o.Timeout <= 0 {
		return ctx, func() {}
	}
	if o.Clock == nil {
		return context.WithTimeout(ctx, o.Timeout)
	}
	return clock.WithTimeout(o.Clock, ctx, o.Timeout)
}

// Func adapts a function that sends an attempt bounded by its context to
// a Transport: Send bounds the context by the attempt's timeout, and
// neither enforces phase timeouts nor records phases.
type Func func(ctx context.Context, a *Attempt) Answer

// Send calls f with ctx bounded by o.Timeout.
func (f Func) Send(ctx context.Context, a *Attempt, o Sending) Answer {
	ctx, cancel := o.bound(ctx)
	defer cancel()
	return f(ctx, a)
}

// NewHTTPTransport returns a net/http transport holding at most conns connections
// to each host, all kept alive for reuse.
func NewHTTPTransport(conns int) *http.Transport {
	return &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxConnsPerHost:     conns,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
		// Bounded: net/http's default would let a peer make us hold 10 MB
		// of headers per answer.
		MaxResponseHeaderBytes: MaxResponseHeaderBytes,
	}
}

// HTTP sends attempts with net/http, tracing each one's phases
// (SendTraced) and enforcing the edge's phase timeouts. It is safe for
// concurrent use.
type HTTP struct {
	client *http.Client
	// rt, if set, is client's transport, used directly (send).
	rt http.RoundTripper
}

// NewHTTP returns the transport sending through client (nil:
// http.DefaultClient). With direct, attempts go to client's RoundTripper
// itself, skipping http.Client's redirect and cookie handling and its
// copies of each request: for a client that follows no redirect and keeps
// no cookie, as the driver's own.
func NewHTTP(client *http.Client, direct bool) *HTTP {
	if client == nil {
		client = http.DefaultClient
	}
	h := &HTTP{client: client}
	if direct && client.Transport != nil {
		h.rt = client.Transport
	}
	return h
}

// Send performs a with net/http, traced.
func (h *HTTP) Send(ctx context.Context, a *Attempt, o Sending) Answer {
	ctx, cancel := o.bound(ctx)
	defer cancel()
	return sendTraced(ctx, h.client, h.rt, a, o.Phases, o.PhaseAware, o.Record)
}
