package transport

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stormsim/stormsim/load/internal/http1"
)

// Lean is the driver's HTTP/1.1 client for a plain http:// target:
// a pool of persistent connections on which each attempt writes its
// request and reads the answer itself. It does what the driver needs of
// net/http's client and nothing more, so that an attempt costs no request
// or header objects, no context and no timer: its timeout is the
// connection's deadline, and the run's end is one callback that expires
// every connection's deadline at once. The answer is classified as
// ClassifyStatus and ClassifyError classify net/http's.
//
// It speaks HTTP/1.1 with keep-alive: answers delimited by Content-Length,
// chunked encoding or the connection's end; 1xx interim answers skipped;
// no redirects, cookies, proxies, compression or TLS (those targets use
// net/http). Safe for concurrent use.
type Lean struct {
	addr   string // host:port to dial
	target []byte // "<request-target> HTTP/1.1\r\nHost: <host>\r\n"
	slots  chan struct{}
	// base is the context the run's own attempts carry: its end is
	// watched once, by abortAll, rather than by every attempt.
	base context.Context

	mu      sync.Mutex
	idle    []*leanConn
	open    map[*leanConn]struct{}
	aborted bool
	// dial, if set, opens connections instead of a net.Dialer (an
	// in-memory network in tests).
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// fallback sends attempts to other URLs (LeanConfig.Fallback).
	fallback Transport
}

// leanConn is one connection with its buffers.
type leanConn struct {
	c      net.Conn
	r      *bufio.Reader
	w      *bufio.Writer
	reused bool // it served an attempt before
}

// errLeanAborted ends attempts sent after the run's end.
var errLeanAborted = errors.New("load: run ended")

// LeanConfig configures a Lean. Target is required; every other field
// has the default its comment gives.
type LeanConfig struct {
	// Target is the plain http URL every attempt with a parsed URL
	// (Attempt.Parsed) is sent to (LeanUsable).
	Target *url.URL
	// Connections bounds the connections held; default 1.
	Connections int
	// Abort, if set, is the context the run's own attempts carry: when it
	// ends, every attempt in flight and every later one fails at once,
	// watched by one callback rather than by every attempt.
	Abort context.Context
	// Dial, if set, opens connections instead of a net.Dialer (an
	// in-memory network in tests).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Fallback sends the attempts whose URL is not the target's (no
	// Attempt.Parsed: a request template's own URL); nil means
	// NewHTTP(nil, false).
	Fallback Transport
}

// NewLean returns a client of c.Target; CloseIdle releases its idle
// connections.
func NewLean(c LeanConfig) *Lean {
	u := c.Target
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = "80"
	}
	lc := &Lean{addr: net.JoinHostPort(host, port), slots: make(chan struct{}, max(c.Connections, 1)), base: c.Abort,
		open: map[*leanConn]struct{}{}, dial: c.Dial, fallback: c.Fallback}
	if lc.fallback == nil {
		lc.fallback = NewHTTP(nil, false)
	}
	lc.target = []byte(" " + u.RequestURI() + " HTTP/1.1\r\nHost: " + u.Host + "\r\n")
	if lc.base != nil {
		context.AfterFunc(lc.base, lc.abortAll)
	}
	return lc
}

// Send sends a to the target, bounded by o.Timeout (the connection's
// deadline) and by ctx, and with o.Record records its phases; an attempt
// with no parsed URL goes to the fallback transport. The lean client keeps
// no reference to a once it returns. It neither enforces phase timeouts
// nor tells not-sent failures apart (an edge that needs them uses HTTP).
func (lc *Lean) Send(ctx context.Context, a *Attempt, o Sending) Answer {
	if a.Parsed == nil {
		return lc.fallback.Send(ctx, a, o)
	}
	return lc.do(ctx, a, o.Timeout, o.Record)
}

// LeanUsable reports whether the driver's attempts to u may use a
// Lean: a plain http URL.
func LeanUsable(u *url.URL) bool { return u != nil && u.Scheme == "http" && u.User == nil }

// abortAll fails every attempt in flight and every later one.
func (lc *Lean) abortAll() {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	lc.aborted = true
	for cn := range lc.open {
		cn.c.SetDeadline(time.Unix(1, 0))
	}
}

// leanPhases times one lean attempt through the phases httptrace marks
// for net/http's (pool wait, connect, write, first byte, read), from
// timestamps alone: the lean client enforces no phase timeout (edges that
// set one are driven with net/http), so it needs no timers.
type leanPhases struct {
	start, got, wrote, first time.Time
	dial                     time.Duration // a new connection's connect, when dialed
	dialing                  bool          // a dial is under way (a failure now is in connect)
	dialed, waited, reused   bool
}

// failedIn is the phase an attempt that failed was in, as
// phaseTrace.failedIn reads it from httptrace's marks.
func (lp *leanPhases) failedIn() Phase {
	switch {
	case lp.dialing:
		return PhaseConnect
	case lp.got.IsZero():
		return PhasePool
	case lp.wrote.IsZero():
		return PhaseWrite
	case lp.first.IsZero():
		return PhaseFirstByte
	}
	return PhaseRead
}

// failed marks an's failure with its phase: one before the write is not
// sent. The outcome the policy sees is left as classified, as net/http's
// traced sends leave it on edges without phase semantics (the only edges
// the lean client serves).
func (lp *leanPhases) failed(an Answer) Answer {
	an.Phase = lp.failedIn()
	an.NotSent = !an.Phase.Sent()
	return an
}

// do sends attempt a bounded by timeout (0: none) and by ctx, classifies
// its answer and, with rec, records its phases.
func (lc *Lean) do(ctx context.Context, a *Attempt, timeout time.Duration, rec *PhaseRecorder) Answer {
	lp := leanPhases{start: time.Now()}
	an := lc.send(ctx, a, timeout, &lp)
	if rec != nil {
		rec.recordLean(&lp, an, time.Now())
	}
	return an
}

// send is do's exchange, timed into lp.
func (lc *Lean) send(ctx context.Context, a *Attempt, timeout time.Duration, lp *leanPhases) Answer {
	var deadline time.Time
	if timeout > 0 {
		deadline = lp.start.Add(timeout)
	}
	if d, ok := ctx.Deadline(); ok && (deadline.IsZero() || d.Before(deadline)) {
		deadline = d
	}
	select {
	case lc.slots <- struct{}{}:
	default:
		lp.waited = true // every connection is busy: wait for one
		select {
		case lc.slots <- struct{}{}:
		case <-ctx.Done():
			return lp.failed(ClassifyError(ctx.Err(), context.Cause(ctx)))
		}
	}
	defer func() { <-lc.slots }()
	for try := 0; ; try++ {
		cn, err := lc.conn(ctx, deadline, lp)
		if err != nil {
			return lp.failed(ClassifyError(err, context.Cause(ctx)))
		}
		var stop func() bool
		if ctx != lc.base && ctx.Done() != nil {
			// An attempt of its own lifetime (a hedge, a retry in flight
			// when its call ended): its end expires its connection.
			stop = context.AfterFunc(ctx, func() { cn.c.SetDeadline(time.Unix(1, 0)) })
		}
		// The attempt's own deadline is set before ctx is checked, not
		// after: the callbacks that expire the connection at ctx's end
		// (abortAll, stop's) run after ctx is done, in goroutines of
		// their own, so one that ran before this SetDeadline would be
		// undone by it, and the attempt would run on to an answer after
		// its end. Checked after it, a ctx not yet done leaves every
		// expiry still to come; a ctx done fails the attempt unsent.
		if err := cn.c.SetDeadline(deadline); err != nil || ctx.Err() != nil {
			if stop != nil {
				stop()
			}
			lc.drop(cn)
			if err == nil {
				err = ctx.Err()
			}
			return lp.failed(ClassifyError(err, context.Cause(ctx)))
		}
		lp.got, lp.wrote, lp.first, lp.reused = time.Now(), time.Time{}, time.Time{}, cn.reused
		ans, keep, replay, err := lc.exchange(cn, a, lp)
		if stop != nil && !stop() {
			keep = false // the deadline may have been expired by ctx
		}
		if keep && err == nil {
			lc.put(cn)
		} else {
			lc.drop(cn)
		}
		if err == nil {
			return ans
		}
		// A kept-alive connection the target closed meanwhile fails
		// before any answer: try once more on a new one, as net/http does
		// for requests that are safe to replay.
		if replay && try == 0 && ctx.Err() == nil {
			continue
		}
		return lp.failed(ClassifyError(err, context.Cause(ctx)))
	}
}

// conn returns an idle connection or dials a new one (timed into lp).
func (lc *Lean) conn(ctx context.Context, deadline time.Time, lp *leanPhases) (*leanConn, error) {
	lc.mu.Lock()
	if lc.aborted {
		lc.mu.Unlock()
		return nil, errLeanAborted
	}
	for n := len(lc.idle); n > 0; n = len(lc.idle) {
		cn := lc.idle[n-1]
		lc.idle[n-1] = nil
		lc.idle = lc.idle[:n-1]
		if idleClean(cn.c) {
			lc.mu.Unlock()
			return cn, nil
		}
		// Bytes arrived while the connection was idle, answering no
		// request (or it was closed): as net/http, close it rather than
		// read them as the next attempt's answer.
		cn.c.Close()
		delete(lc.open, cn)
	}
	lc.mu.Unlock()
	d := net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second, Deadline: deadline}
	t0 := time.Now()
	lp.dialing = true
	dial := d.DialContext
	if lc.dial != nil {
		dial = lc.dial
	}
	c, err := dial(ctx, "tcp", lc.addr)
	if err != nil {
		return nil, err
	}
	lp.dialing, lp.dialed, lp.waited, lp.dial = false, true, true, time.Since(t0)
	cn := &leanConn{c: c, r: bufio.NewReaderSize(c, 4096), w: bufio.NewWriterSize(c, 4096)}
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if lc.aborted {
		c.Close()
		return nil, errLeanAborted
	}
	lc.open[cn] = struct{}{}
	return cn, nil
}

func (lc *Lean) put(cn *leanConn) {
	cn.reused = true
	lc.mu.Lock()
	defer lc.mu.Unlock()
	lc.idle = append(lc.idle, cn)
}

func (lc *Lean) drop(cn *leanConn) {
	cn.c.Close()
	lc.mu.Lock()
	defer lc.mu.Unlock()
	delete(lc.open, cn)
}

// CloseIdle closes the idle connections.
func (lc *Lean) CloseIdle() {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	for _, cn := range lc.idle {
		cn.c.Close()
		delete(lc.open, cn)
	}
	lc.idle = nil
}

// exchange writes a's request on cn, whose deadline send has set, and
// reads the answer. keep says cn
// may serve another attempt; replay, with an error, that nothing of an
// answer arrived on a reused connection and a's request is safe to send
// again (GET, HEAD, or carrying an idempotency key).
func (lc *Lean) exchange(cn *leanConn, a *Attempt, lp *leanPhases) (ans Answer, keep, replay bool, err error) {
	lc.writeRequest(cn.w, a)
	if err := cn.w.Flush(); err != nil {
		return ans, false, cn.reused && safeToReplay(a), err
	}
	lp.wrote = time.Now()
	var h leanHeader
	for {
		// Peek first: a connection closed while idle fails here.
		if _, err := cn.r.Peek(1); err != nil {
			return ans, false, cn.reused && safeToReplay(a), err
		}
		if lp.first.IsZero() {
			lp.first = time.Now()
		}
		if h, err = readLeanHead(cn.r); err != nil {
			return ans, false, false, err
		}
		if h.status >= 200 || h.status == 101 {
			break
		}
	}
	// A 101 hands the connection over to another protocol: its bytes
	// are no HTTP answer, so the connection serves no other attempt.
	keep = !h.close && h.status != 101
	switch {
	case a.Method == "HEAD" || h.status == 204 || h.status == 304 || (h.status >= 100 && h.status < 200):
	case h.chunked:
		err = discardChunked(cn.r)
	case h.length >= 0:
		_, err = cn.r.Discard(int(h.length))
	default: // delimited by the connection's end
		keep = false
		_, err = io.Copy(io.Discard, cn.r)
	}
	if err != nil {
		return ans, false, false, err
	}
	if cn.r.Buffered() > 0 {
		// More than the answer came: no request of ours asked for it.
		keep = false
	}
	return classifyStatus(h.status, h.get), keep, false, nil
}

// safeToReplay reports whether a's request may be sent twice.
func safeToReplay(a *Attempt) bool {
	return a.Method == "GET" || a.Method == "HEAD" || a.IdempotencyKey != ""
}

// writeRequest writes a's request head and body.
func (lc *Lean) writeRequest(w *bufio.Writer, a *Attempt) {
	w.WriteString(a.Method)
	w.Write(lc.target)
	for k, vs := range a.Header {
		for _, v := range vs {
			writeHeaderLine(w, k, v)
		}
	}
	a.eachHeader(func(k, v string) { writeHeaderLine(w, k, v) })
	if len(a.Body) > 0 || (a.Method != "GET" && a.Method != "HEAD") {
		var buf [20]byte
		w.WriteString("Content-Length: ")
		w.Write(strconv.AppendInt(buf[:0], int64(len(a.Body)), 10))
		w.WriteString("\r\n")
	}
	w.WriteString("\r\n")
	w.Write(a.Body)
}

func writeHeaderLine(w *bufio.Writer, k, v string) {
	w.WriteString(k)
	w.WriteString(": ")
	w.WriteString(v)
	w.WriteString("\r\n")
}

// leanHeader is what the driver reads of an answer's head: its status,
// how its body is delimited, and the headers classifyStatus consults
// (kept as strings only when present, which a plain OK never is).
type leanHeader struct {
	status  int
	length  int64 // -1: not given
	chunked bool
	close   bool
	// values of HeaderOutcome, HeaderRetryAfterMs, "Retry-After" and
	// HeaderDontRetry, in that order
	vals [4]string
}

var leanNames = [4]string{HeaderOutcome, HeaderRetryAfterMs, "Retry-After", HeaderDontRetry}

// get returns the value of header k if it is one leanHeader keeps.
func (h *leanHeader) get(k string) string {
	for i, n := range leanNames {
		if n == k {
			return h.vals[i]
		}
	}
	return ""
}

// errLeanHead reports an answer head the lean client cannot read.
var errLeanHead = errors.New("load: malformed HTTP answer")

// readLeanHead reads an answer's status line and headers, at most
// MaxResponseHeaderBytes of them, refusing what net/http's client
// refuses (http.ReadResponse): a malformed status line or version,
// header names that are not tokens, control bytes (NUL, CR, ...) in
// values, Content-Length headers that differ or are not a number, and a
// Transfer-Encoding other than one "chunked" on HTTP/1.1.
func readLeanHead(r *bufio.Reader) (h leanHeader, err error) {
	h.length = -1
	line, err := r.ReadSlice('\n')
	if err != nil {
		return h, headErr(err)
	}
	n := len(line)
	// "HTTP/1.x NNN[ reason]"
	line = trimEOL(line)
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || !isDigit(line[7]) || line[8] != ' ' ||
		(len(line) > 12 && line[12] != ' ') {
		return h, errLeanHead
	}
	for _, c := range line[9:12] {
		if !isDigit(c) {
			return h, errLeanHead
		}
		h.status = h.status*10 + int(c-'0')
	}
	http11 := line[7] != '0'
	h.close = !http11 // HTTP/1.0 closes unless told otherwise
	var length []byte // the first Content-Length
	encodings := 0
	for {
		line, err = r.ReadSlice('\n')
		if err != nil {
			return h, headErr(err)
		}
		if n += len(line); n > MaxResponseHeaderBytes {
			return h, errLeanHead
		}
		line = trimEOL(line)
		if len(line) == 0 {
			break
		}
		if line[0] == ' ' || line[0] == '\t' {
			// A folded line (obs-fold): net/http joins it to the one
			// before, or refuses it first; the lean client refuses it.
			return h, errLeanHead
		}
		i := bytes.IndexByte(line, ':')
		if i <= 0 {
			return h, errLeanHead
		}
		name, val := line[:i], line[i+1:]
		for _, c := range name {
			if !validHeaderNameByte(c) {
				return h, errLeanHead
			}
		}
		for _, c := range val {
			if !validHeaderValueByte(c) {
				return h, errLeanHead
			}
		}
		val = bytes.Trim(val, " \t")
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length == nil {
				length = val
				v, err := strconv.ParseUint(string(val), 10, 63) // no copy: string(val) is not kept
				if err != nil {
					return h, errLeanHead
				}
				h.length = int64(v)
			} else if !bytes.Equal(length, val) {
				return h, errLeanHead // two lengths: which one frames the body?
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			encodings++
			h.chunked = bytes.EqualFold(val, []byte("chunked"))
			if http11 && (encodings > 1 || !h.chunked) {
				return h, errLeanHead
			}
		case bytes.EqualFold(name, []byte("Connection")):
			lv := bytes.ToLower(val)
			if bytes.Contains(lv, []byte("close")) {
				h.close = true
			} else if bytes.Contains(lv, []byte("keep-alive")) {
				h.close = false
			}
		default:
			for k, ln := range leanNames {
				if h.vals[k] == "" && bytes.EqualFold(name, []byte(ln)) {
					h.vals[k] = string(val) // the first, as http.Header.Get
				}
			}
		}
	}
	if !http11 {
		h.chunked = false // HTTP/1.0 has no Transfer-Encoding (as net/http reads it)
	}
	if h.chunked {
		h.length = -1
	}
	return h, nil
}

// trimEOL drops a line's LF and the one CR before it.
func trimEOL(line []byte) []byte {
	line = bytes.TrimSuffix(line, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r"))
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// validHeaderNameByte reports whether c may be in a header name: a token
// character (RFC 9110), or a space, which net/http tolerates.
func validHeaderNameByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', isDigit(c):
		return true
	}
	return c == ' ' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// validHeaderValueByte reports whether c may be in a header value: no
// control byte but a tab (obs-text, 0x80 and above, allowed), as
// net/textproto reads values.
func validHeaderValueByte(c byte) bool {
	return c == '\t' || (c >= 0x20 && c != 0x7f)
}

// headErr maps a read error of an answer's head: a head too long for the
// buffer is malformed.
func headErr(err error) error {
	if errors.Is(err, bufio.ErrBufferFull) {
		return errLeanHead
	}
	return err
}

// discardChunked reads and drops a chunked body and its trailers, with
// net/http's syntax (http1.SkipChunked).
func discardChunked(r *bufio.Reader) error {
	if err := http1.SkipChunked(r, -1); err != nil {
		if errors.Is(err, http1.ErrMalformed) {
			return errLeanHead
		}
		return err
	}
	return nil
}
