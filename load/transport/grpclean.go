package transport

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/stormsim/stormsim/load/internal/clock"
	"github.com/stormsim/stormsim/policies"
)

// GRPCLean is the driver's unary gRPC client for one plaintext grpc://
// target: gRPC over HTTP/2 (golang.org/x/net/http2's framer and hpack)
// on Connections connections, each multiplexing many calls, with a
// reader goroutine per connection matching answers to streams. It does
// what the driver needs of grpc-go's client and nothing more, so that an
// attempt costs no client stream, no context and no allocated timer: the
// request's fixed headers are indexed once and then copied as the same
// bytes, the attempt's stream state is
// pooled, and its deadline is a reused timer. The answer is classified by
// ClassifyGRPC from the same status code, message and trailers grpc-go
// would report (grpc-go's mapping of HTTP statuses and RST_STREAM codes),
// so both clients' answers read alike.
//
// It sends the stormsim metadata and the remaining deadline as
// grpc-timeout as GRPCClient does; a call the deadline or the attempt's
// timeout ends is reset (RST_STREAM CANCEL). A stream the server did not
// process (REFUSED_STREAM, or above a GOAWAY's last stream) is sent once
// more, on a connection that takes new streams (after a GOAWAY, a new
// one), as grpc-go's transparent retry does. It does
// not speak TLS, compression, service-config retries or name resolution,
// nor does it enforce phase timeouts (those runs use GRPCClient). Safe for
// concurrent use.
type GRPCLean struct {
	target string // the URL attempts to it carry
	addr   string
	fixed  []hpack.HeaderField // the request headers every call sends
	dial   func(ctx context.Context, network, addr string) (net.Conn, error)
	// fallback sends the attempts to other URLs (GRPCLeanConfig.Fallback).
	fallback Transport

	// streams pools the streams whose calls ended with their answer; an
	// abandoned stream is dropped instead, the reader may still hold it.
	streams *sync.Pool

	mu     sync.Mutex
	conns  []*grpcLeanConn // nil entries are not dialed yet
	next   int
	closed bool
}

// GRPCLeanConfig configures a GRPCLean.
type GRPCLeanConfig struct {
	// Target is the grpc://HOST:PORT/pkg.Service/Method the client
	// calls: attempts whose URL it is.
	Target string
	// Fallback sends the attempts to any other URL (a replica's, a
	// request template's); nil: they fail as Error.
	Fallback Transport
	// Connections is how many HTTP/2 connections to open; default 1.
	Connections int
	// Dial, if set, opens connections instead of a net.Dialer.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// grpcLeanWindow is the receive window the client grants each stream and,
// replenished, the connection: large enough that an answer up to
// MaxBodyBytes never waits for a window update.
const grpcLeanWindow = 4 << 20

// grpcLeanDialTimeout bounds opening a connection.
const grpcLeanDialTimeout = 5 * time.Second

// NewGRPCLean returns a client of c.Target; Close releases its
// connections.
func NewGRPCLean(c GRPCLeanConfig) (*GRPCLean, error) {
	addr, method, err := ParseGRPCTarget(c.Target)
	if err != nil {
		return nil, err
	}
	g := &GRPCLean{target: c.Target, addr: addr, dial: c.Dial, fallback: c.Fallback, streams: &sync.Pool{New: newGRPCLeanStream}, conns: make([]*grpcLeanConn, max(c.Connections, 1))}
	if g.dial == nil {
		g.dial = (&net.Dialer{Timeout: grpcLeanDialTimeout, KeepAlive: 30 * time.Second}).DialContext
	}
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", method}, {":authority", addr},
		{"content-type", "application/grpc+proto"}, {"user-agent", "stormsim"}, {"te", "trailers"}} {
		g.fixed = append(g.fixed, hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	return g, nil
}

// Close closes every connection; attempts in flight fail.
func (g *GRPCLean) Close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	for i, c := range g.conns {
		if c != nil {
			c.nc.Close()
			g.conns[i] = nil
		}
	}
}

// errGRPCLeanClosed ends attempts sent after Close.
var errGRPCLeanClosed = errors.New("grpc client closed")

// conn returns the next usable connection, dialing one in its slot if
// the slot holds none or a broken or draining one; dialed reports a dial.
func (g *GRPCLean) conn(lp *leanPhases) (*grpcLeanConn, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil, errGRPCLeanClosed
	}
	i := g.next
	g.next = (g.next + 1) % len(g.conns)
	if c := g.conns[i]; c != nil && c.usable() {
		lp.reused = true
		return c, nil
	}
	// Dialing under the lock: attempts wait for the one connection
	// rather than each dialing its own.
	lp.dialing = true
	t := time.Now()
	c, err := g.open()
	lp.dialing = false
	if err != nil {
		return nil, err
	}
	lp.dialed, lp.dial = true, time.Since(t)
	g.conns[i] = c
	return c, nil
}

// usable reports whether new streams may start on c.
func (c *grpcLeanConn) usable() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err == nil && c.werr == nil && !c.draining && c.nextID < 1<<31-1
}

// grpcLeanConn is one HTTP/2 connection and its streams.
type grpcLeanConn struct {
	nc   net.Conn
	pool *sync.Pool // the client's (GRPCLean.streams)

	// wmu orders writes; wpending counts writers holding or waiting for
	// it, so that the last one flushes everyone's frames at once (a call's
	// frames are flushed by the flusher, woken through flushc).
	wmu      sync.Mutex
	wpending atomic.Int32
	flushc   chan struct{}
	ended    chan struct{} // closed when the connection ends (fail)
	bw       *bufio.Writer
	fr       *http2.Framer
	hbuf     []byte // a request's header block, under wmu
	henc     *hpack.Encoder
	hw       hpackSink
	// prefix is the fixed headers' encoding once it no longer changes
	// (prefixed); encoded counts their encodings until then; tableDefault:
	// the server allows the default dynamic table. All under wmu.
	prefix       []byte
	encoded      int
	tableDefault bool

	mu       sync.Mutex
	cond     sync.Cond // signalled when a send window grows, a stream closes or the connection ends
	streams  map[uint32]*grpcLeanStream
	nextID   uint32
	err      error // why the connection ended; nil while it serves
	werr     error // a write failed: no new streams (writeFailed)
	draining bool  // a GOAWAY came: no new streams
	lastID   uint32
	// The peer's settings and the send windows they govern.
	connWin     int64
	initWin     int64
	maxFrame    int
	maxStreams  uint32
	recvPending int64           // bytes received on the connection, not yet granted back
	reserved    int             // calls between reserving a stream and opening it
	waiting     []chan struct{} // calls waiting for a place among the streams, in order (admit)
}

// hpackSink appends an encoder's output to a request's header block.
type hpackSink struct{ c *grpcLeanConn }

func (s hpackSink) Write(p []byte) (int, error) {
	s.c.hbuf = append(s.c.hbuf, p...)
	return len(p), nil
}

// open dials a connection, sends the client preface and settings, and
// starts its reader.
func (g *GRPCLean) open() (*grpcLeanConn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), grpcLeanDialTimeout)
	defer cancel()
	nc, err := g.dial(ctx, "tcp", g.addr)
	if err != nil {
		return nil, err
	}
	c := &grpcLeanConn{nc: nc, pool: g.streams, bw: bufio.NewWriterSize(nc, 32<<10), streams: map[uint32]*grpcLeanStream{}, nextID: 1,
		connWin: 65535, initWin: 65535, maxFrame: 16384, maxStreams: 1<<32 - 1}
	c.cond.L = &c.mu
	c.flushc, c.ended = make(chan struct{}, 1), make(chan struct{})
	go c.flusher()
	c.fr = http2.NewFramer(c.bw, bufio.NewReaderSize(nc, 32<<10))
	c.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	c.fr.MaxHeaderListSize = MaxResponseHeaderBytes
	c.fr.SetMaxReadFrameSize(1 << 20)
	c.hw = hpackSink{c}
	c.henc = hpack.NewEncoder(c.hw)
	c.tableDefault = true
	// The reader starts first: on a synchronous connection (net.Pipe) the
	// server may write its settings before it reads the preface.
	c.wmu.Lock()
	go c.read()
	c.bw.WriteString(http2.ClientPreface)
	c.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: grpcLeanWindow}, http2.Setting{ID: http2.SettingEnablePush, Val: 0})
	c.fr.WriteWindowUpdate(0, grpcLeanWindow-65535)
	err = c.bw.Flush()
	c.wmu.Unlock()
	if err != nil {
		c.fail(err)
		return nil, err
	}
	return c, nil
}

// grpcLeanStream is one call's state, pooled; the reader fills its
// result, then signals done.
type grpcLeanStream struct {
	id   uint32
	done chan struct{}
	win  int64 // send window, under the connection's mu

	// The answer, written by the reader before done.
	code       codes.Code
	msg        string
	md         metadata.MD // the trailers (non-OK answers only)
	headers    bool        // response headers came
	msgs       int         // response messages seen
	hdr        [5]byte     // the message prefix being read
	hdrN       int
	left       int64 // bytes left of the current message
	first      time.Time
	unprocessd bool // the server did not process it: retry on a new connection

	// timer runs the attempt's deadline; stopped, it delivers no stale
	// value (Go 1.23's timers), so a pooled stream reuses it.
	timer *time.Timer
}

// newGRPCLeanStream makes a stream for a client's pool of them. The
// pool is the client's own, not global: a timer belongs to the synctest
// bubble that made it, and a client stays in its test's.
func newGRPCLeanStream() any {
	s := &grpcLeanStream{done: make(chan struct{}, 1), timer: time.NewTimer(time.Hour)}
	s.timer.Stop()
	return s
}

// Send performs a as a unary call of the target's method with a.Body as
// the encoded request, bounded by ctx, o.Timeout and a.Remaining (sent as
// grpc-timeout), and classifies the answer (ClassifyGRPC); with o.Record
// it records the attempt's phases. It keeps no reference to a once it
// returns. An attempt to another URL goes to the fallback transport.
func (g *GRPCLean) Send(ctx context.Context, a *Attempt, o Sending) Answer {
	if a.URL != g.target {
		if g.fallback == nil {
			return Answer{Outcome: policies.Error, Kind: KindOther}
		}
		return g.fallback.Send(ctx, a, o)
	}
	lp := leanPhases{start: time.Now()}
	an := g.send(ctx, a, o, &lp)
	if o.Record != nil {
		o.Record.recordLean(&lp, an, time.Now())
	}
	return an
}

func (g *GRPCLean) send(ctx context.Context, a *Attempt, o Sending, lp *leanPhases) Answer {
	// A scripted clock runs the attempt's timeout on its own timer; the
	// wall clock runs the remaining deadline, and the timeout with it.
	timeout := o.Timeout
	var fake <-chan time.Time
	if _, real := o.Clock.(clock.Real); timeout > 0 && o.Clock != nil && !real {
		t, ch := o.Clock.NewTimer(timeout)
		defer t.Stop()
		fake, timeout = ch, 0
	}
	// Which bound ends the attempt first: the attempt's timeout (a
	// timeout of the attempt, as ClassifyError reads a context's) or the
	// remaining deadline (the call's DEADLINE_EXCEEDED).
	bound, byTimeout := a.Remaining, false
	if timeout > 0 && (bound <= 0 || timeout <= bound) {
		bound, byTimeout = timeout, true
	}
	var deadline time.Time
	if bound > 0 {
		deadline = lp.start.Add(bound)
	}
	for try := 0; ; try++ {
		c, err := g.conn(lp)
		if err != nil {
			if errors.Is(err, errGRPCLeanClosed) {
				return Answer{Outcome: policies.Error, Kind: KindOther}
			}
			return lp.failed(ClassifyGRPC(status.Error(codes.Unavailable, "connection error: transport: Error while dialing: "+err.Error()), nil))
		}
		lp.got = time.Now()
		an, retry := c.call(ctx, a, g.fixed, deadline, byTimeout, fake, lp)
		if !retry || try > 0 {
			return an
		}
	}
}

// call sends a on c and waits for its answer; retry reports a stream the
// server did not process, to send again on another connection.
func (c *grpcLeanConn) call(ctx context.Context, a *Attempt, fixed []hpack.HeaderField, deadline time.Time, byTimeout bool, fake <-chan time.Time, lp *leanPhases) (an Answer, retry bool) {
	s := c.pool.Get().(*grpcLeanStream)
	s.code, s.msg, s.md, s.headers, s.msgs, s.hdrN, s.left, s.first, s.unprocessd = codes.OK, "", nil, false, 0, 0, 0, time.Time{}, false
	body := len(a.Body) + 5

	// Reserve a place among the streams the server allows, then take
	// the stream id under the write lock: HEADERS must open streams in the
	// order of their ids.
	// Calls over the server's MAX_CONCURRENT_STREAMS wait in order of
	// arrival, each handed its place as one frees (admit), so that none
	// is overtaken indefinitely; the wait ends with the call's bounds.
	var timer <-chan time.Time
	if !deadline.IsZero() {
		s.timer.Reset(time.Until(deadline))
		timer = s.timer.C
	}
	c.mu.Lock()
	if c.err == nil && (len(c.waiting) > 0 || uint32(len(c.streams)+c.reserved) >= c.maxStreams) {
		turn := make(chan struct{}, 1)
		c.waiting = append(c.waiting, turn)
		c.mu.Unlock()
		var ended func() Answer
		select {
		case <-turn:
		case <-timer:
			ended = timedOut(byTimeout)
		case <-fake:
			ended = timedOut(true)
		case <-ctx.Done():
			ended = func() Answer { return ClassifyError(ctx.Err(), context.Cause(ctx)) }
		}
		c.mu.Lock()
		if ended != nil {
			if !c.unwait(turn) {
				// Its turn came meanwhile: pass it on.
				c.reserved--
				c.admit()
			}
			c.mu.Unlock()
			s.timer.Stop()
			c.pool.Put(s)
			return lp.failed(ended()), false
		}
	} else {
		c.reserved++
	}
	c.mu.Unlock()

	remaining := time.Duration(0)
	if a.Remaining > 0 {
		remaining = a.Remaining - time.Since(lp.start)
	}
	c.wpending.Add(1)
	c.wmu.Lock()
	c.mu.Lock()
	c.reserved--
	if c.err != nil || c.draining {
		err := c.err
		c.cond.Broadcast()
		c.admit()
		c.mu.Unlock()
		c.wpending.Add(-1)
		c.wmu.Unlock()
		c.pool.Put(s)
		if err == nil {
			return lp.failed(ClassifyGRPC(status.Error(codes.Unavailable, "the connection is draining"), nil)), true
		}
		return lp.failed(connAnswer(err)), true
	}
	s.id = c.nextID
	c.nextID += 2
	s.win = c.initWin
	c.streams[s.id] = s
	// Send the whole message now if the windows allow (the usual case);
	// else a writer goroutine sends it as they open.
	inline := int64(body) <= c.connWin && int64(body) <= s.win && body <= c.maxFrame
	if inline {
		c.connWin -= int64(body)
		s.win -= int64(body)
	}
	maxFrame := c.maxFrame
	c.mu.Unlock()

	c.prefixed(fixed)
	if a.Remaining > 0 {
		c.field("grpc-timeout", grpcTimeout(remaining))
	}
	c.fields(a)
	werr := c.writeHeaders(s.id, maxFrame)
	if inline && werr == nil {
		werr = c.writeMessage(s.id, a.Body)
	}
	if c.wpending.Add(-1) == 0 && werr == nil {
		select {
		case c.flushc <- struct{}{}: // the flusher sends them
		default: // it is already due to
		}
	}
	c.wmu.Unlock()
	// pool: s goes back to the pool after the call, which only a call
	// that got its answer and started no writer allows.
	pool := inline
	if werr != nil {
		c.writeFailed(werr)
	} else if !inline {
		go c.writeSlow(s, a.Body)
	}
	lp.wrote = time.Now() // the frames are the connection's: the flusher sends them a yield later

	select {
	case <-s.done:
		an, retry = s.answer(lp), s.unprocessd
	case <-timer:
		pool = false
		an = c.abandon(s, lp, timedOut(byTimeout))
	case <-fake:
		pool = false
		an = c.abandon(s, lp, timedOut(true))
	case <-ctx.Done():
		pool = false
		an = c.abandon(s, lp, func() Answer { return ClassifyError(ctx.Err(), context.Cause(ctx)) })
	}
	s.timer.Stop()
	if pool {
		c.pool.Put(s)
	}
	return an, retry
}

// timedOut returns the answer of a call its bound ended: the attempt's
// timeout (byTimeout) as a context's timeout, the remaining deadline as the
// call's own DEADLINE_EXCEEDED.
func timedOut(byTimeout bool) func() Answer {
	if byTimeout {
		return func() Answer { return ClassifyError(context.DeadlineExceeded, context.DeadlineExceeded) }
	}
	return func() Answer {
		return ClassifyGRPC(status.Error(codes.DeadlineExceeded, "context deadline exceeded"), nil)
	}
}

// admit hands the places among the streams the server allows to the
// calls waiting for one, first come first served (under mu). A
// connection that ended admits every waiter, to fail as it opens.
func (c *grpcLeanConn) admit() {
	for len(c.waiting) > 0 && (c.err != nil || uint32(len(c.streams)+c.reserved) < c.maxStreams) {
		c.reserved++
		c.waiting[0] <- struct{}{}
		c.waiting = c.waiting[1:]
	}
}

// unwait removes turn from the waiting calls, reporting whether it was
// still there (under mu).
func (c *grpcLeanConn) unwait(turn chan struct{}) bool {
	for i, w := range c.waiting {
		if w == turn {
			c.waiting = append(c.waiting[:i], c.waiting[i+1:]...)
			return true
		}
	}
	return false
}

// abandon ends a call its deadline or context ended: it resets the
// stream unless its answer already came, in which case that answer
// stands.
func (c *grpcLeanConn) abandon(s *grpcLeanStream, lp *leanPhases, ended func() Answer) Answer {
	if open, _ := c.remove(s); !open {
		<-s.done
		return s.answer(lp)
	}
	c.write(func() error { return c.fr.WriteRSTStream(s.id, http2.ErrCodeCancel) })
	return lp.failed(ended())
}

// answer classifies the answer the reader recorded in s.
func (s *grpcLeanStream) answer(lp *leanPhases) Answer {
	lp.first = s.first
	if s.code == codes.OK {
		return ClassifyGRPC(nil, nil)
	}
	an := ClassifyGRPC(status.Error(s.code, s.msg), s.md)
	if !s.headers {
		// No gRPC answer came (a reset stream, a broken connection, a
		// non-gRPC answer): a transport failure, as GRPCClient's trace
		// reads one.
		if an.Kind == KindNone {
			an.Kind, an.Status = KindOther, 0
		}
		return lp.failed(an)
	}
	return an
}

// prefixed starts the request's header block with the fixed headers
// (under wmu). They are the only fields the connection's encoder indexes
// (every other is written never-indexed), so from the second call on the
// dynamic table holds exactly them and their encoding is the same bytes
// each time: those are kept and copied. A server allowing a dynamic table
// smaller than the default (SETTINGS_HEADER_TABLE_SIZE) has every block
// encoded afresh.
func (c *grpcLeanConn) prefixed(fixed []hpack.HeaderField) {
	if c.prefix != nil {
		c.hbuf = append(c.hbuf[:0], c.prefix...)
		return
	}
	c.hbuf = c.hbuf[:0]
	for _, f := range fixed {
		c.henc.WriteField(f)
	}
	if c.encoded++; c.encoded == 2 && c.tableDefault {
		c.prefix = append([]byte(nil), c.hbuf...)
	}
}

// field appends one header field to the request's header block (under
// wmu).
func (c *grpcLeanConn) field(k, v string) {
	c.henc.WriteField(hpack.HeaderField{Name: k, Value: v, Sensitive: true})
}

// fields appends a's metadata: its headers in lower case (grpc-go's
// reserved ones dropped, binary ones base64-encoded, as grpc-go sends
// them), then the stormsim metadata, which replaces headers of the same
// names.
func (c *grpcLeanConn) fields(a *Attempt) {
	for k, vs := range a.Header {
		k = strings.ToLower(k)
		if isGRPCReserved(k) || k == MetadataRequestID || k == MetadataAttempt || k == MetadataWrite || k == MetadataWarmup || k == a.keyMetadata() {
			continue
		}
		for _, v := range vs {
			if strings.HasSuffix(k, "-bin") {
				v = base64.RawStdEncoding.EncodeToString([]byte(v))
			}
			c.field(k, v)
		}
	}
	if a.RequestID != "" {
		c.field(MetadataRequestID, a.RequestID)
	}
	var num [20]byte
	c.henc.WriteField(hpack.HeaderField{Name: MetadataAttempt, Value: string(strconv.AppendInt(num[:0], int64(a.Number), 10)), Sensitive: true})
	if a.Write {
		c.field(MetadataWrite, "1")
	}
	if a.Warmup {
		c.field(MetadataWarmup, "1")
	}
	if a.IdempotencyKey != "" {
		c.field(a.keyMetadata(), a.IdempotencyKey)
	}
}

// isGRPCReserved reports the metadata keys gRPC's transport owns, which
// grpc-go neither sends from a call's metadata nor reports in trailers.
func isGRPCReserved(k string) bool {
	if k != "" && k[0] == ':' {
		return true
	}
	switch k {
	case "content-type", "user-agent", "grpc-message-type", "grpc-encoding", "grpc-message", "grpc-status", "grpc-timeout", "te":
		return true
	}
	return false
}

// writeHeaders writes the header block in hbuf opening stream id, in
// CONTINUATION frames after the first if it exceeds maxFrame (under wmu).
func (c *grpcLeanConn) writeHeaders(id uint32, maxFrame int) error {
	block := c.hbuf
	first := block[:min(len(block), maxFrame)]
	block = block[len(first):]
	if err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: first, EndHeaders: len(block) == 0}); err != nil {
		return err
	}
	for len(block) > 0 {
		part := block[:min(len(block), maxFrame)]
		block = block[len(part):]
		if err := c.fr.WriteContinuation(id, len(block) == 0, part); err != nil {
			return err
		}
	}
	return nil
}

// writeMessage writes body as one length-prefixed, uncompressed gRPC
// message ending the stream (under wmu).
func (c *grpcLeanConn) writeMessage(id uint32, body []byte) error {
	c.hbuf = append(c.hbuf[:0], 0, byte(len(body)>>24), byte(len(body)>>16), byte(len(body)>>8), byte(len(body)))
	c.hbuf = append(c.hbuf, body...)
	return c.fr.WriteData(id, true, c.hbuf)
}

// writeSlow sends a message larger than the send windows or the frame
// size allow at once, in frames as the windows open; it stops if the
// stream or the connection ends first.
func (c *grpcLeanConn) writeSlow(s *grpcLeanStream, body []byte) {
	msg := make([]byte, 5, 5+len(body))
	msg[1], msg[2], msg[3], msg[4] = byte(len(body)>>24), byte(len(body)>>16), byte(len(body)>>8), byte(len(body))
	msg = append(msg, body...)
	for len(msg) > 0 {
		c.mu.Lock()
		for c.err == nil && c.streams[s.id] == s && (c.connWin <= 0 || s.win <= 0) {
			c.cond.Wait()
		}
		if c.err != nil || c.streams[s.id] != s {
			c.mu.Unlock()
			return
		}
		n := int(min(int64(len(msg)), c.connWin, s.win, int64(c.maxFrame)))
		c.connWin -= int64(n)
		s.win -= int64(n)
		c.mu.Unlock()
		chunk, end := msg[:n], n == len(msg)
		msg = msg[n:]
		if err := c.write(func() error { return c.fr.WriteData(s.id, end, chunk) }); err != nil {
			return
		}
	}
}

// write writes one frame with f and flushes unless another writer waits.
func (c *grpcLeanConn) write(f func() error) error {
	c.wpending.Add(1)
	c.wmu.Lock()
	err := f()
	if c.wpending.Add(-1) == 0 && err == nil {
		err = c.bw.Flush()
	}
	c.wmu.Unlock()
	if err != nil {
		c.writeFailed(err)
	}
	return err
}

// flusher flushes the calls' frames, once for all those written since
// it last did, until the connection ends. Woken by a call, it first yields
// the processor once, as grpc-go's loopy writer does, so that the calls
// already due and runnable add their frames to the same write: an open-loop
// driver sends each call at its own instant, so calls seldom meet at the
// write lock, and one write per call cost both ends a system call each
// (half the writes and 10–40 % less p99 at 56 000–72 000 calls/s in issue
// 38's measurements). A failed flush ends new streams as a call's failed
// write does.
func (c *grpcLeanConn) flusher() {
	for {
		select {
		case <-c.flushc:
		case <-c.ended:
			return
		}
		runtime.Gosched()
		c.wmu.Lock()
		var err error
		if c.bw.Buffered() > 0 {
			err = c.bw.Flush()
		}
		c.wmu.Unlock()
		if err != nil {
			c.writeFailed(err)
		}
	}
}

// writeAsync writes one frame with f (under wmu) on another goroutine:
// the reader's own frames (acks, window updates, resets). The reader never
// waits for the write lock, so it goes on draining the server while a
// call's write waits for the server to read: a server that stops reading
// until its answers are read (grpc-go's throttles its reader behind its
// writer) cannot deadlock the connection.
func (c *grpcLeanConn) writeAsync(f func() error) { go c.write(f) }

// writeFailed stops new streams on a connection a write failed on. The
// reader goes on delivering the answers already received (a server may
// answer and close at once) until the connection's end reaches it, or
// for at most grpcLeanDrain.
func (c *grpcLeanConn) writeFailed(err error) {
	c.mu.Lock()
	first := c.werr == nil && c.err == nil
	if first {
		c.werr = err
	}
	c.mu.Unlock()
	if first {
		time.AfterFunc(grpcLeanDrain, func() { c.fail(err) })
	}
}

// grpcLeanDrain bounds how long answers are read after a write failed.
const grpcLeanDrain = time.Second

// fail ends the connection: every open stream fails with err's answer.
func (c *grpcLeanConn) fail(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	close(c.ended)
	streams := c.streams
	c.streams = map[uint32]*grpcLeanStream{}
	c.cond.Broadcast()
	c.admit()
	c.mu.Unlock()
	c.nc.Close()
	for _, s := range streams {
		s.code, s.msg, s.md = codes.Unavailable, connMessage(err), nil
		// A stream the server never answered and that was written after
		// the connection was lost is not retried: it may have been
		// processed.
		s.done <- struct{}{}
	}
}

// connMessage is the status message grpc-go gives calls on a
// connection that ended with err.
func connMessage(err error) string {
	return "error reading from server: " + err.Error()
}

// connAnswer is the answer of a call on a connection that ended with err.
func connAnswer(err error) Answer {
	return ClassifyGRPC(status.Error(codes.Unavailable, connMessage(err)), nil)
}

// read reads the connection's frames until it ends, delivering each
// stream's answer.
func (c *grpcLeanConn) read() {
	for {
		f, err := c.fr.ReadFrame()
		var se http2.StreamError
		if errors.As(err, &se) {
			// A malformed frame of one stream (its headers): that call
			// fails, the connection goes on.
			if s := c.stream(se.StreamID); s != nil {
				c.finishWith(s, false, codes.Internal, "transport: "+se.Error())
			}
			continue
		}
		if err != nil {
			c.fail(err)
			return
		}
		switch f := f.(type) {
		case *http2.MetaHeadersFrame:
			c.onHeaders(f)
		case *http2.DataFrame:
			c.onData(f)
		case *http2.RSTStreamFrame:
			c.onReset(f)
		case *http2.SettingsFrame:
			if err := c.onSettings(f); err != nil {
				c.fail(err)
				return
			}
		case *http2.WindowUpdateFrame:
			c.mu.Lock()
			if f.StreamID == 0 {
				c.connWin += int64(f.Increment)
			} else if s := c.streams[f.StreamID]; s != nil {
				s.win += int64(f.Increment)
			}
			c.cond.Broadcast()
			c.mu.Unlock()
		case *http2.PingFrame:
			if !f.IsAck() {
				data := f.Data
				c.writeAsync(func() error { return c.fr.WritePing(true, data) })
			}
		case *http2.GoAwayFrame:
			c.onGoAway(f)
		}
	}
}

func (c *grpcLeanConn) onSettings(f *http2.SettingsFrame) error {
	if f.IsAck() {
		return nil
	}
	var table *uint32
	c.mu.Lock()
	err := f.ForeachSetting(func(st http2.Setting) error {
		switch st.ID {
		case http2.SettingInitialWindowSize:
			d := int64(st.Val) - c.initWin
			c.initWin = int64(st.Val)
			for _, s := range c.streams {
				s.win += d
			}
		case http2.SettingMaxFrameSize:
			c.maxFrame = int(st.Val)
		case http2.SettingMaxConcurrentStreams:
			c.maxStreams = st.Val
		case http2.SettingHeaderTableSize:
			table = &st.Val
		}
		return nil
	})
	c.cond.Broadcast()
	c.admit()
	c.mu.Unlock()
	if err != nil {
		return err
	}
	// A failed write ends the connection through writeFailed.
	c.writeAsync(func() error {
		if table != nil {
			// Before the ack: blocks written after it use the new size.
			c.henc.SetMaxDynamicTableSizeLimit(*table)
			c.tableDefault = *table >= 4096
			c.prefix, c.encoded = nil, 0
		}
		return c.fr.WriteSettingsAck()
	})
	return nil
}

// stream returns the open stream id, or nil.
func (c *grpcLeanConn) stream(id uint32) *grpcLeanStream {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.streams[id]
}

// remove takes s from the open streams, freeing its place, and reports
// whether it was open (else the reader or its caller took it first) and
// whether a draining connection is now idle.
func (c *grpcLeanConn) remove(s *grpcLeanStream) (open, idle bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, open = c.streams[s.id]; open {
		delete(c.streams, s.id)
		c.cond.Broadcast()
		c.admit()
	}
	return open, c.draining && len(c.streams) == 0
}

// finish removes s from the open streams and delivers its answer,
// unless its caller abandoned it first; with reset, it also resets the
// stream at the server.
func (c *grpcLeanConn) finish(s *grpcLeanStream, reset bool) {
	open, idle := c.remove(s)
	if !open {
		return
	}
	if reset {
		id := s.id
		c.writeAsync(func() error { return c.fr.WriteRSTStream(id, http2.ErrCodeCancel) })
	}
	s.done <- struct{}{}
	if idle {
		c.nc.Close()
	}
}

// finishWith ends s with a status of the client's own making, resetting
// the stream unless the server ended it (ended).
func (c *grpcLeanConn) finishWith(s *grpcLeanStream, ended bool, code codes.Code, msg string) {
	s.code, s.msg, s.md = code, msg, nil
	c.finish(s, !ended)
}

func (c *grpcLeanConn) onHeaders(f *http2.MetaHeadersFrame) {
	s := c.stream(f.StreamID)
	if s == nil {
		return
	}
	end := f.StreamEnded()
	if s.first.IsZero() {
		s.first = time.Now()
	}
	if s.headers && !end {
		c.finishWith(s, end, codes.Internal, "a HEADERS frame cannot appear in the middle of a stream")
		return
	}
	if f.Truncated {
		c.finishWith(s, end, codes.Internal, "peer header list size exceeded limit")
		return
	}
	isGRPC := s.headers
	var httpStatus, grpcStatus, grpcMessage string
	var md metadata.MD
	hasStatus := false
	contentType := "malformed header: missing HTTP content-type"
	for _, hf := range f.Fields {
		switch hf.Name {
		case "content-type":
			if !grpcContentType(hf.Value) {
				contentType = fmt.Sprintf("transport: received unexpected content-type %q", hf.Value)
				break
			}
			contentType, isGRPC = "", true
			if end {
				md = appendMD(md, hf.Name, hf.Value)
			}
		case "grpc-status":
			grpcStatus, hasStatus = hf.Value, true
		case "grpc-message":
			grpcMessage = hf.Value
		case ":status":
			httpStatus = hf.Value
		default:
			if end && (!isGRPCReserved(hf.Name) || hf.Name == ":authority" || hf.Name == "user-agent") {
				v := hf.Value
				if strings.HasSuffix(hf.Name, "-bin") {
					b, err := decodeBin(v)
					if err != nil {
						c.finishWith(s, end, codes.Internal, fmt.Sprintf("transport: malformed %s: %v", hf.Name, err))
						return
					}
					v = string(b)
				}
				md = appendMD(md, hf.Name, v)
			}
		}
	}
	if !isGRPC {
		code, msg := codes.Internal, "malformed header: missing HTTP status"
		if httpStatus != "" {
			sc, err := strconv.Atoi(httpStatus)
			if err != nil {
				c.finishWith(s, end, codes.Internal, fmt.Sprintf("transport: malformed http-status: %v", err))
				return
			}
			if sc >= 100 && sc < 200 && !end {
				s.first = time.Time{}
				return
			}
			code, msg = httpStatusCode(sc), fmt.Sprintf("unexpected HTTP status code received from server: %d (%s)", sc, http.StatusText(sc))
		}
		c.finishWith(s, end, code, msg+"; "+contentType)
		return
	}
	s.headers = true
	if !end {
		return
	}
	s.code, s.msg, s.md = codes.Unknown, decodeGRPCMessage(grpcMessage), md
	if hasStatus {
		n, err := strconv.ParseInt(grpcStatus, 10, 32)
		if err != nil {
			s.code, s.msg, s.md = codes.Unknown, fmt.Sprintf("transport: malformed grpc-status: %v", err), nil
		} else {
			s.code = codes.Code(uint32(n))
		}
	}
	if s.code == codes.OK {
		s.md = nil
		// A unary call answers exactly one message.
		switch {
		case s.msgs == 0:
			s.code, s.msg = codes.Internal, "cardinality violation: received no response message from non-streaming RPC"
		case s.hdrN != 0 || s.left != 0:
			s.code, s.msg = codes.Internal, "unexpected EOF"
		}
	}
	c.finish(s, false)
}

// grpcContentType reports whether v is a gRPC content type
// (application/grpc, or with a +subtype or ;parameters).
func grpcContentType(v string) bool {
	rest, ok := strings.CutPrefix(strings.ToLower(v), "application/grpc")
	return ok && (rest == "" || rest[0] == '+' || rest[0] == ';')
}

func appendMD(md metadata.MD, k, v string) metadata.MD {
	if md == nil {
		md = metadata.MD{}
	}
	md[k] = append(md[k], v)
	return md
}

// decodeBin decodes a binary metadata value, padded or not.
func decodeBin(v string) ([]byte, error) {
	if len(v)%4 == 0 {
		return base64.StdEncoding.DecodeString(v)
	}
	return base64.RawStdEncoding.DecodeString(v)
}

// httpStatusCode is the code grpc-go gives an answer with HTTP status sc
// and no gRPC status.
func httpStatusCode(sc int) codes.Code {
	switch sc {
	case http.StatusBadRequest:
		return codes.Internal
	case http.StatusUnauthorized:
		return codes.Unauthenticated
	case http.StatusForbidden:
		return codes.PermissionDenied
	case http.StatusNotFound:
		return codes.Unimplemented
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return codes.Unavailable
	}
	return codes.Unknown
}

// decodeGRPCMessage undoes grpc-message's percent-encoding; a malformed
// escape is kept as it came.
func decodeGRPCMessage(m string) string {
	if !strings.Contains(m, "%") {
		return m
	}
	var b strings.Builder
	for i := 0; i < len(m); i++ {
		if m[i] == '%' && i+2 < len(m) {
			if v, err := strconv.ParseUint(m[i+1:i+3], 16, 8); err == nil {
				b.WriteByte(byte(v))
				i += 2
				continue
			}
		}
		b.WriteByte(m[i])
	}
	return b.String()
}

func (c *grpcLeanConn) onData(f *http2.DataFrame) {
	n := int64(f.Length)
	if n > 0 {
		// Grant the connection's window back in large steps; each stream's
		// window outlasts any answer the client accepts.
		c.mu.Lock()
		c.recvPending += n
		grant := c.recvPending >= grpcLeanWindow/2
		if grant {
			c.recvPending = 0
		}
		c.mu.Unlock()
		if grant {
			c.writeAsync(func() error { return c.fr.WriteWindowUpdate(0, grpcLeanWindow/2) })
		}
	}
	s := c.stream(f.StreamID)
	if s == nil {
		return
	}
	if !s.headers {
		c.finishWith(s, f.StreamEnded(), codes.Internal, "received DATA before HEADERS")
		return
	}
	data := f.Data()
	for len(data) > 0 {
		if s.left > 0 {
			k := min(int64(len(data)), s.left)
			s.left -= k
			data = data[k:]
			continue
		}
		k := copy(s.hdr[s.hdrN:], data)
		s.hdrN += k
		data = data[k:]
		if s.hdrN < 5 {
			break
		}
		s.hdrN = 0
		s.msgs++
		size := int64(s.hdr[1])<<24 | int64(s.hdr[2])<<16 | int64(s.hdr[3])<<8 | int64(s.hdr[4])
		switch {
		case s.hdr[0] != 0:
			c.finishWith(s, f.StreamEnded(), codes.Internal, "grpc: compressed flag set with identity or empty encoding")
			return
		case size > MaxBodyBytes:
			c.finishWith(s, f.StreamEnded(), codes.ResourceExhausted, fmt.Sprintf("grpc: received message larger than max (%d vs. %d)", size, MaxBodyBytes))
			return
		case s.msgs > 1:
			c.finishWith(s, f.StreamEnded(), codes.Internal, "cardinality violation: expected <EOF> for non client-streaming RPCs, but received another message")
			return
		}
		s.left = size
	}
	if f.StreamEnded() {
		// A stream must end with trailers.
		c.finishWith(s, f.StreamEnded(), codes.Internal, "server closed the stream without sending trailers")
	}
}

func (c *grpcLeanConn) onReset(f *http2.RSTStreamFrame) {
	s := c.stream(f.StreamID)
	if s == nil {
		return
	}
	code := codes.Unknown
	switch f.ErrCode {
	case http2.ErrCodeNo, http2.ErrCodeProtocol, http2.ErrCodeInternal, http2.ErrCodeSettingsTimeout, http2.ErrCodeStreamClosed,
		http2.ErrCodeFrameSize, http2.ErrCodeCompression, http2.ErrCodeConnect, http2.ErrCodeHTTP11Required:
		code = codes.Internal
	case http2.ErrCodeFlowControl, http2.ErrCodeEnhanceYourCalm:
		code = codes.ResourceExhausted
	case http2.ErrCodeRefusedStream:
		code, s.unprocessd = codes.Unavailable, !s.headers
	case http2.ErrCodeCancel:
		code = codes.Canceled
	case http2.ErrCodeInadequateSecurity:
		code = codes.PermissionDenied
	}
	s.code, s.msg, s.md = code, fmt.Sprintf("stream terminated by RST_STREAM with error code: %v", f.ErrCode), nil
	c.finish(s, false)
}

// onGoAway stops new streams on c and fails those the server will not
// process, to be retried on a new connection.
func (c *grpcLeanConn) onGoAway(f *http2.GoAwayFrame) {
	c.mu.Lock()
	c.draining, c.lastID = true, f.LastStreamID
	var refused []*grpcLeanStream
	for id, s := range c.streams {
		if id > f.LastStreamID {
			refused = append(refused, s)
			delete(c.streams, id)
		}
	}
	idle := len(c.streams) == 0
	c.cond.Broadcast()
	c.admit()
	c.mu.Unlock()
	for _, s := range refused {
		s.code, s.msg, s.md, s.unprocessd = codes.Unavailable, "the stream is rejected because server is draining the connection", nil, true
		s.done <- struct{}{}
	}
	if idle {
		c.nc.Close()
	}
}

// grpcTimeout formats d as a grpc-timeout value: at most 8 digits of the
// finest unit that holds it, rounded up so the callee never sees more
// time than is left.
func grpcTimeout(d time.Duration) string {
	if d <= 0 {
		return "0n"
	}
	const maxDigits = 1e8 - 1
	for _, u := range []struct {
		d time.Duration
		c byte
	}{{time.Nanosecond, 'n'}, {time.Microsecond, 'u'}, {time.Millisecond, 'm'}, {time.Second, 'S'}, {time.Minute, 'M'}, {time.Hour, 'H'}} {
		n := (d + u.d - 1) / u.d
		if n <= maxDigits {
			return strconv.FormatInt(int64(n), 10) + string(u.c)
		}
	}
	return strconv.FormatInt(maxDigits, 10) + "H"
}
