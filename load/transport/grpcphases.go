package transport

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"

	"github.com/stormsim/stormsim/policies"
)

// The phases of a gRPC attempt, traced by grpcStats and the channel's
// dialer (grpcConnWatch.dial), on the same scale as net/http's (Phase):
//
//	pool_wait   from the call (on a channel stormsim did not dial, from
//	            grpc-go's first stats.Begin) to its stream's headers going
//	            out: grpc-go's
//	            wait for a ready transport (the picker) and for a stream
//	            slot on it (MAX_CONCURRENT_STREAMS), transparent retries of
//	            streams that never reached the server included
//	connect     the TCP connect of a new connection (the dialer)
//	tls         its handshake: the HTTP/2 preface and settings exchange
//	            (grpc:// is plaintext), until the server's first bytes
//	write       the headers going out to the request message written
//	first_byte  the message written to the response's headers (or its
//	            trailers, for a trailers-only answer)
//	read        the headers to the end of the call
//
// A gRPC connection belongs to the ClientConn, not to an attempt: it is
// dialed when the channel leaves idle or reconnects, and every attempt
// waiting meanwhile waits for it. Its connect and handshake are counted
// once, by the attempt that first sends on it (the cold one); an attempt
// that fails while waiting failed in the phase the connection is in (or
// that the last connection attempt failed in, for grpc-go's fail-fast
// UNAVAILABLE), which is never sent.

// grpcConnKey names the connections of a GRPCClient: those to one address
// with one pair of connection phase timeouts, which the dialer enforces.
type grpcConnKey struct {
	addr         string
	connect, tls time.Duration
}

// grpcConnWatch follows the connections of one ClientConn: the one being
// opened (its phase and since when), the phase the last failed attempt to
// open one failed in, and the open ones by local address, each with its
// connect and handshake durations until an attempt claims them.
type grpcConnWatch struct {
	lim policies.PhaseTimeouts // Connect and TLS
	// dialer, if set, connects instead of a net.Dialer (GRPCClient.dial).
	dialer func(ctx context.Context, network, addr string) (net.Conn, error)

	mu      sync.Mutex
	opening Phase // PhaseConnect or PhaseTLS while a connection opens, else PhaseNone
	since   time.Time
	failed  Phase // where the last connection attempt failed; PhaseNone once one opened
	// failedTimeout: that failure was the phase's own timeout.
	failedTimeout bool
	conns         map[string]*grpcConnRec
}

// grpcConnRec is one open connection's opening: its connect and handshake
// durations, counted by the first attempt sent on it.
type grpcConnRec struct {
	connect, handshake time.Duration
	claimed            bool
}

func newGRPCConnWatch(lim policies.PhaseTimeouts) *grpcConnWatch {
	return &grpcConnWatch{lim: policies.PhaseTimeouts{Connect: lim.Connect, TLS: lim.TLS}, conns: map[string]*grpcConnRec{}}
}

// dial is the ClientConn's dialer: a TCP connect bounded by
// connect_timeout, then a connection whose handshake (the server's first
// bytes) is bounded by tls_timeout.
func (w *grpcConnWatch) dial(ctx context.Context, addr string) (net.Conn, error) {
	start := time.Now()
	w.mu.Lock()
	w.opening, w.since = PhaseConnect, start
	w.mu.Unlock()
	d := net.Dialer{Timeout: w.lim.Connect}
	dial := d.DialContext
	if w.dialer != nil {
		dial = w.dialer
	}
	c, err := dial(ctx, "tcp", addr)
	if err != nil {
		var ne net.Error
		w.fail(PhaseConnect, w.lim.Connect > 0 && ctx.Err() == nil && errors.As(err, &ne) && ne.Timeout())
		return nil, err
	}
	now := time.Now()
	hc := &handshakeConn{Conn: c, w: w, local: c.LocalAddr().String(), start: now,
		rec: &grpcConnRec{connect: now.Sub(start)}}
	w.mu.Lock()
	w.opening, w.since = PhaseTLS, now
	w.mu.Unlock()
	if w.lim.TLS > 0 {
		hc.mu.Lock()
		hc.timer = time.AfterFunc(w.lim.TLS, hc.timedOut)
		hc.mu.Unlock()
	}
	return hc, nil
}

// fail records that the connection being opened failed in phase p.
func (w *grpcConnWatch) fail(p Phase, timedOut bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.opening, w.failed, w.failedTimeout = PhaseNone, p, timedOut
}

// opened records an open connection.
func (w *grpcConnWatch) opened(local string, rec *grpcConnRec) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.opening, w.failed, w.failedTimeout = PhaseNone, PhaseNone, false
	w.conns[local] = rec
}

// forget drops a closed connection.
func (w *grpcConnWatch) forget(local string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.conns, local)
}

// claim returns the opening of the connection at local address local if
// no attempt was sent on it before, else nil.
func (w *grpcConnWatch) claim(local string) *grpcConnRec {
	w.mu.Lock()
	defer w.mu.Unlock()
	rec := w.conns[local]
	if rec == nil || rec.claimed {
		return nil
	}
	rec.claimed = true
	return rec
}

// blame is the phase an attempt that got no stream failed in, given the
// error grpc-go returned (nil when the attempt's context ended it): the
// phase of the connection being opened, or, for grpc-go's fail-fast
// UNAVAILABLE, the one the last connection attempt failed in (timedOut:
// by its phase timeout). PhaseNone: the wait itself (pool_wait).
func (w *grpcConnWatch) blame(err error) (p Phase, timedOut bool, since time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil && status.Code(err) == codes.Unavailable && w.failed != PhaseNone {
		return w.failed, w.failedTimeout, time.Time{}
	}
	return w.opening, false, w.since
}

// handshakeConn is a new connection until its handshake completes: the
// first bytes read from the server (its HTTP/2 settings) end it, and its
// tls_timeout closes it if they do not come in time.
type handshakeConn struct {
	net.Conn
	w     *grpcConnWatch
	rec   *grpcConnRec
	local string
	start time.Time

	once  sync.Once
	mu    sync.Mutex // guards timer, which may fire before it is set
	timer *time.Timer
}

// settle ends the handshake once: ok, the connection opened; else it
// failed in the handshake (timedOut: by tls_timeout).
func (c *handshakeConn) settle(ok, timedOut bool) bool {
	done := false
	c.once.Do(func() {
		done = true
		c.mu.Lock()
		if c.timer != nil {
			c.timer.Stop()
		}
		c.mu.Unlock()
		if ok {
			c.rec.handshake = time.Since(c.start)
			c.w.opened(c.local, c.rec)
			return
		}
		c.w.fail(PhaseTLS, timedOut)
	})
	return done
}

func (c *handshakeConn) timedOut() {
	if c.settle(false, true) {
		c.Conn.Close()
	}
}

func (c *handshakeConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.settle(true, false)
	} else if err != nil {
		c.settle(false, false)
	}
	return n, err
}

func (c *handshakeConn) Close() error {
	c.settle(false, false) // no-op once the handshake completed
	return c.Conn.Close()
}

// grpcTraceKey carries an attempt's *grpcTrace to the stats handler.
type grpcTraceKey struct{}

// grpcTrace is one gRPC attempt's phaseTrace and the ClientConn's watch.
type grpcTrace struct {
	*phaseTrace
	w      *grpcConnWatch
	number int // the attempt's number (1-based)
	begins int // grpc-go attempts (stats.Begin) under this one
	// transparent counts grpc-go's transparent retries (streams that never
	// reached the server, sent again by grpc-go itself).
	transparent int
}

// grpcStats is a ClientConn's stats.Handler: it follows the attempts of
// the calls through their grpcTrace, and forgets closed connections.
type grpcStats struct{ w *grpcConnWatch }

type grpcConnAddrKey struct{}

func (h grpcStats) TagConn(ctx context.Context, info *stats.ConnTagInfo) context.Context {
	if info.LocalAddr == nil {
		return ctx
	}
	return context.WithValue(ctx, grpcConnAddrKey{}, info.LocalAddr.String())
}

func (h grpcStats) HandleConn(ctx context.Context, s stats.ConnStats) {
	if _, ok := s.(*stats.ConnEnd); ok {
		if local, ok := ctx.Value(grpcConnAddrKey{}).(string); ok {
			h.w.forget(local)
		}
	}
}

func (h grpcStats) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }

func (h grpcStats) HandleRPC(ctx context.Context, s stats.RPCStats) {
	t, ok := ctx.Value(grpcTraceKey{}).(*grpcTrace)
	if !ok {
		return
	}
	t.bind(h.w)
	switch s := s.(type) {
	case *stats.Begin:
		t.began(s.IsTransparentRetryAttempt)
		if sp := trace.SpanFromContext(ctx); sp.IsRecording() && t.number >= 1 {
			// The client span of a traced channel (Tracing), marked as
			// over HTTP (resendCount).
			sp.SetAttributes(attribute.Int("http.request.resend_count", t.number-1))
		}
	case *stats.DelayedPickComplete:
		t.mu.Lock()
		t.waited = true
		t.mu.Unlock()
	case *stats.OutHeader:
		t.gotStream(s.LocalAddr)
	case *stats.OutPayload:
		t.end(PhaseWrite)
		t.begin(PhaseFirstByte, t.lim.FirstByte)
	case *stats.InHeader:
		t.firstByte()
	case *stats.InTrailer:
		t.firstByte()
	}
}

// bind gives t the watch of the channel its call went out on, if it has
// none (a call through load.EdgeClient.UnaryClientInterceptor, on a channel
// dialed with GRPCDialOptions).
func (t *grpcTrace) bind(w *grpcConnWatch) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.w == nil {
		t.w = w
	}
}

// watch is the watch t is bound to, nil if none.
func (t *grpcTrace) watch() *grpcConnWatch {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.w
}

// began is a grpc-go attempt beginning: after the first, a retry by
// grpc-go (transparent, or its own retry from a service config) of a
// stream that failed, whose wait for a stream starts again; the pool wait
// runs from the call's start.
func (t *grpcTrace) began(transparent bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.begins++
	if t.begins == 1 {
		if !t.open[PhasePool] && !t.ended[PhasePool] {
			// A call on a channel stormsim did not dial (the
			// interceptor's): its wait starts here, traced at last.
			t.started[PhasePool], t.open[PhasePool] = time.Now(), true
			if lim, _ := t.lim.PoolWait(); lim > 0 && t.cancel != nil {
				t.timer[PhasePool] = time.AfterFunc(lim, func() { t.cancel(errPhaseTimeout{PhasePool}) })
			}
		}
		return
	}
	if transparent {
		t.transparent++
	}
	for _, p := range []Phase{PhaseWrite, PhaseFirstByte, PhaseRead} {
		t.open[p], t.ended[p] = false, false
		if t.timer[p] != nil {
			t.timer[p].Stop()
		}
	}
	if t.ended[PhasePool] {
		t.open[PhasePool], t.ended[PhasePool] = true, false
		if lim, _ := t.lim.PoolWait(); lim > 0 && t.cancel != nil {
			// pool_timeout bounds the whole wait, from the call's start.
			t.timer[PhasePool] = time.AfterFunc(max(0, lim-time.Since(t.started[PhasePool])), func() { t.cancel(errPhaseTimeout{PhasePool}) })
		}
	}
}

// gotStream is the stream's headers going out on the connection at local:
// the pool wait ends, the write begins, and the attempt counts the
// connection's opening if it is the first sent on it.
func (t *grpcTrace) gotStream(local net.Addr) {
	var rec *grpcConnRec
	if w := t.watch(); local != nil && w != nil {
		rec = w.claim(local.String())
	}
	t.mu.Lock()
	// A retry beneath the attempt (began) on the connection the attempt
	// opened still paid for the opening: not reused.
	t.reused = rec == nil && !t.ended[PhaseConnect]
	if rec != nil {
		t.dur[PhaseConnect], t.ended[PhaseConnect] = rec.connect, true
		t.dur[PhaseTLS], t.ended[PhaseTLS] = rec.handshake, true
		if t.rec != nil {
			t.rec.dialed.Add(1)
			t.rec.shook.Add(1)
		}
	}
	t.mu.Unlock()
	t.end(PhasePool)
	t.begin(PhaseWrite, 0)
}

// firstByte is the answer's first frame (headers, or trailers only).
func (t *grpcTrace) firstByte() {
	t.mu.Lock()
	open := t.open[PhaseFirstByte]
	t.mu.Unlock()
	if open {
		t.end(PhaseFirstByte)
		t.begin(PhaseRead, 0)
	}
}

// failedBeforeStream marks, for an attempt that got no stream, the
// connection phase it failed in (see blame), returning the phase timeout
// that failed it if that is what did.
func (t *grpcTrace) failedBeforeStream(err error, ctxEnded bool) error {
	t.mu.Lock()
	waiting := t.open[PhasePool]
	t.mu.Unlock()
	if !waiting {
		return nil
	}
	if ctxEnded {
		err = nil
	}
	w := t.watch()
	if w == nil {
		return nil
	}
	p, timedOut, since := w.blame(err)
	if p == PhaseNone {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.open[p] = true
	if !since.IsZero() {
		t.started[p] = since
	} else {
		t.started[p] = time.Now()
	}
	if timedOut {
		return errPhaseTimeout{p}
	}
	return nil
}

// sendGRPCTraced is one attempt through invoke with its phases traced
// into rec and its phase timeouts enforced: pool_timeout and
// first_byte_timeout by the attempt, connect_timeout and tls_timeout by
// the connection's dialer (w). invoke returns the answer and grpc-go's
// error. A failure that is no answer of the callee is classified as
// net/http's are (phaseTrace.classify); one before the stream left is a
// failed connection (KindConnect) unless the attempt's context ended it.
//
// w nil: the call goes out on a channel stormsim did not dial (the
// interceptor's), traced only if it was dialed with GRPCDialOptions,
// whose stats handler then binds its watch; the wait starts at grpc-go's
// first Begin. A call no stats handler saw is returned as it came back:
// nothing says where it failed, so nothing claims it was not sent.
func sendGRPCTraced(ctx context.Context, number int, w *grpcConnWatch, lim policies.PhaseTimeouts, phaseAware bool, rec *PhaseRecorder,
	invoke func(ctx context.Context) (Answer, error)) Answer {
	t := &grpcTrace{phaseTrace: &phaseTrace{lim: lim, rec: rec}, w: w, number: number}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	t.cancel = cancel
	if w != nil {
		d, _ := lim.PoolWait()
		t.begin(PhasePool, d)
	}
	an, err := invoke(context.WithValue(ctx, grpcTraceKey{}, t))
	if t.watch() == nil {
		t.stop()
		return an
	}
	t.mu.Lock()
	answered := t.ended[PhaseFirstByte] // the callee's status came back
	t.mu.Unlock()
	if an.Outcome != policies.OK && (!answered || ctx.Err() != nil) {
		var cause error
		if ctx.Err() != nil {
			cause = context.Cause(ctx)
		} else if an.Kind == KindNone {
			an.Kind, an.Status = KindOther, 0
		}
		if pt := t.failedBeforeStream(err, ctx.Err() != nil); pt != nil {
			cause = pt
		}
		if t.failedIn() < PhaseWrite && an.Kind == KindOther {
			an.Kind = KindConnect // no stream: no connection to send it on
		}
		an = t.classify(an, cause, phaseAware)
	}
	t.end(PhaseRead)
	t.stop()
	if rec != nil {
		rec.record(t.phaseTrace, an)
		t.mu.Lock()
		n := t.transparent
		t.mu.Unlock()
		rec.grpcTransparent.Add(int64(n))
	}
	return an
}
