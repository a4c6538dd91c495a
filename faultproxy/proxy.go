package faultproxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stormsim/stormsim/load/transport"
	"github.com/stormsim/stormsim/topology"
)

// Defaults of Config's bounds.
const (
	DefaultMaxHeaderBytes   = 64 << 10
	DefaultMaxBodyBytes     = 1 << 20
	DefaultMaxResponseBytes = 16 << 20
	DefaultMaxHold          = 2 * time.Minute
)

// Config configures a Proxy. Zero fields take the documented defaults.
type Config struct {
	// Upstream is the base URL requests are forwarded to (http://HOST:PORT);
	// a request's path and query are appended to its path.
	Upstream string
	// Faults are applied per request; Seed seeds their draws (0: 1).
	Faults []topology.ProxyFault
	Seed   uint64
	// Rule, if set, is consulted before Faults.
	Rule Rule
	// Log, if set, receives one JSON line per request (a Record).
	Log io.Writer
	// OnRecord, if set, is called with each request's Record when it ends.
	OnRecord func(Record)
	// KeyHeader names the idempotency key header (default Idempotency-Key).
	KeyHeader string
	// MaxHeaderBytes bounds a request's header block (default 64 KiB; the
	// server of Listen refuses a larger one with 431, the proxy's transport
	// an upstream's larger one with 502). MaxBodyBytes bounds a request
	// body (default 1 MiB, else 413), MaxResponseBytes an answer's (default
	// 16 MiB, else 502).
	MaxHeaderBytes   int
	MaxBodyBytes     int64
	MaxResponseBytes int64
	// MaxHold bounds how long a held request, blackhole or held drop keeps
	// its connection (default 2 minutes).
	MaxHold time.Duration
	// Epoch is time 0 of the fault windows (default: New's call).
	Epoch time.Time
	// Transport, if set, carries requests to the upstream instead of the
	// proxy's own keep-alive transport.
	Transport http.RoundTripper
	// H2C makes the server of Listen accept HTTP/2 without TLS (prior
	// knowledge, as gRPC clients send it) beside HTTP/1.1; a request that
	// came over it goes to the upstream over h2c too. Its faults reset the
	// request's stream where HTTP/1 closes or resets the connection.
	H2C bool
}

// Proxy is the fault proxy, an http.Handler. Build it with New.
type Proxy struct {
	up        *url.URL
	lines     []line
	seed      uint64
	rule      Rule
	keyHeader string
	maxBody   int64
	maxResp   int64
	maxHold   time.Duration
	epoch     time.Time
	rt        http.RoundTripper
	rt2       http.RoundTripper // h2c to the upstream, for requests that came over h2c
	own       []*http.Transport // the transports the proxy built, to close
	h2c       bool
	maxHeader int
	onRecord  func(Record)
	log       io.Writer
	logMu     sync.Mutex
	seq       atomic.Uint64
	metrics   *metrics
	done      chan struct{} // closed by Close: holds end
	closeOnce sync.Once
	// handlers counts the requests being served, hijacked ones included
	// (http.Server.Shutdown does not wait for those), so that a Server's
	// Close returns only once every request's record is out.
	handlers sync.WaitGroup
}

// New returns a proxy to cfg.Upstream.
func New(cfg Config) (*Proxy, error) {
	up, err := url.Parse(cfg.Upstream)
	if err != nil {
		return nil, fmt.Errorf("faultproxy: upstream: %w", err)
	}
	if up.Scheme != "http" || up.Host == "" {
		return nil, fmt.Errorf("faultproxy: upstream: want http://HOST:PORT, got %q", cfg.Upstream)
	}
	p := &Proxy{
		up: up, lines: newLines(cfg.Faults), seed: cfg.Seed, rule: cfg.Rule,
		keyHeader: cfg.KeyHeader, maxBody: cfg.MaxBodyBytes, maxResp: cfg.MaxResponseBytes,
		maxHold: cfg.MaxHold, epoch: cfg.Epoch, rt: cfg.Transport, maxHeader: cfg.MaxHeaderBytes,
		onRecord: cfg.OnRecord, log: cfg.Log, metrics: newMetrics(), done: make(chan struct{}), h2c: cfg.H2C,
	}
	if p.seed == 0 {
		p.seed = topology.DefaultSeed
	}
	if p.keyHeader == "" {
		p.keyHeader = transport.HeaderIdempotencyKey
	}
	if p.maxBody == 0 {
		p.maxBody = DefaultMaxBodyBytes
	}
	if p.maxResp == 0 {
		p.maxResp = DefaultMaxResponseBytes
	}
	if p.maxHold == 0 {
		p.maxHold = DefaultMaxHold
	}
	if p.maxHeader == 0 {
		p.maxHeader = DefaultMaxHeaderBytes
	}
	if p.epoch.IsZero() {
		p.epoch = time.Now()
	}
	newTransport := func(h2c bool) *http.Transport {
		t := &http.Transport{
			DialContext:            (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConnsPerHost:    1024,
			IdleConnTimeout:        90 * time.Second,
			DisableCompression:     true, // the client's Accept-Encoding goes through as it is
			MaxResponseHeaderBytes: int64(p.maxHeader),
		}
		if h2c {
			t.Protocols = new(http.Protocols)
			t.Protocols.SetUnencryptedHTTP2(true)
		}
		p.own = append(p.own, t)
		return t
	}
	if p.rt == nil {
		p.rt = newTransport(false)
	}
	if p.h2c {
		p.rt2 = newTransport(true)
	}
	return p, nil
}

// Close ends every hold and closes the proxy's idle upstream connections.
func (p *Proxy) Close() {
	p.closeOnce.Do(func() { close(p.done) })
	for _, t := range p.own {
		t.CloseIdleConnections()
	}
}

// since returns the time since the epoch.
func (p *Proxy) since() time.Duration { return time.Since(p.epoch) }

// ServeHTTP applies the request's fault and forwards it or not.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.handlers.Add(1)
	defer p.handlers.Done()
	req := Request{
		Seq: p.seq.Add(1), ID: r.Header.Get(transport.HeaderRequestID), Key: r.Header.Get(p.keyHeader),
		Method: r.Method, Path: r.URL.Path, Header: r.Header, At: p.since(),
	}
	req.Attempt, _ = strconv.Atoi(r.Header.Get(transport.HeaderAttempt))
	var d Decision
	ok := false
	if p.rule != nil {
		if d, ok = p.rule(&req); ok && d.Source == "" {
			d.Source = "rule"
		}
	}
	if !ok {
		d = decide(p.lines, p.seed, &req)
	}
	rec := Record{
		Seq: req.Seq, RequestID: req.ID, Attempt: req.Attempt, Key: req.Key, Method: req.Method,
		Path: r.URL.RequestURI(), Fault: d.Fault.String(), Source: d.Source, AtMS: ms(req.At),
		LatencyAddMS: ms(d.LatencyAdd), LatencyReplyMS: ms(d.LatencyReply),
	}
	if d.Fault == DropResponse {
		if d.Drop == "" {
			d.Drop = topology.DropClose
		}
		rec.Drop = string(d.Drop)
	}
	p.serve(w, r, &d, &rec)
	rec.DoneMS = ms(p.since())
	p.record(&rec)
	if rec.abort {
		panic(http.ErrAbortHandler) // net/http resets the stream, quietly
	}
}

// serve carries out d for r, filling rec.
func (p *Proxy) serve(w http.ResponseWriter, r *http.Request, d *Decision, rec *Record) {
	ctx := r.Context()
	if !p.sleep(ctx, d.LatencyAdd) || !p.release(ctx, d.Hold) {
		rec.Error = "client gone before forwarding"
		return
	}
	switch d.Fault {
	case ResetBefore, Blackhole:
		p.withhold(w, r, d, rec)
		return
	case Error:
		if d.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.FormatInt(int64((d.RetryAfter+time.Second-1)/time.Second), 10))
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, "stormsim proxy: injected 503\n")
		rec.Status = http.StatusServiceUnavailable
		return
	}
	resp, body, err := p.forward(r, d, rec)
	if err != nil {
		status := http.StatusBadGateway
		if errors.Is(err, errBodyTooLarge) {
			status = http.StatusRequestEntityTooLarge
		}
		rec.Error = err.Error()
		if ctx.Err() != nil {
			rec.Error = "client gone: " + rec.Error
			return
		}
		http.Error(w, "stormsim proxy: "+err.Error(), status)
		rec.Status = status
		return
	}
	rec.UpstreamStatus = resp.StatusCode
	rec.AnsweredMS = ms(p.since())
	if !p.sleep(ctx, d.LatencyReply) {
		rec.Error = "client gone before the answer was delivered"
		return
	}
	if d.Fault == ResetAfter || d.Fault == DropResponse {
		p.withhold(w, r, d, rec)
		return
	}
	p.reply(w, resp, body)
	rec.Status = resp.StatusCode
	rec.Delivered = true
}

var errBodyTooLarge = errors.New("request body over the proxy's limit")

// forward sends r upstream with its body read whole and returns the
// answer with its body read whole.
func (p *Proxy) forward(r *http.Request, d *Decision, rec *Record) (*http.Response, []byte, error) {
	if r.ContentLength > p.maxBody {
		return nil, nil, fmt.Errorf("%w (%d bytes)", errBodyTooLarge, p.maxBody)
	}
	var body []byte
	if r.Body != nil && r.Body != http.NoBody {
		b, err := readAll(r.Body, r.ContentLength, p.maxBody)
		if err != nil {
			return nil, nil, fmt.Errorf("reading the request body: %w", err)
		}
		if int64(len(b)) > p.maxBody {
			return nil, nil, fmt.Errorf("%w (%d bytes)", errBodyTooLarge, p.maxBody)
		}
		body = b
	}
	u := *p.up
	u.Path = strings.TrimSuffix(p.up.Path, "/") + r.URL.Path
	u.RawPath = ""
	if r.URL.RawPath != "" {
		u.RawPath = strings.TrimSuffix(p.up.EscapedPath(), "/") + r.URL.RawPath
	}
	u.RawQuery = r.URL.RawQuery
	ctx := r.Context()
	// The instant the request was written to the upstream is worth a
	// trace only to someone who reads it: a rule, the log, a record's
	// reader.
	if forwarded := d.Forwarded; forwarded != nil || p.log != nil || p.onRecord != nil {
		ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) {
			at := p.since()
			rec.ForwardedMS = ms(at)
			if forwarded != nil {
				forwarded(at)
			}
		}})
	}
	out := (&http.Request{
		Method: r.Method, URL: &u, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: r.Header.Clone(), Body: http.NoBody, Host: p.up.Host,
	}).WithContext(ctx)
	if len(body) > 0 {
		out.Body, out.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		// No GetBody: net/http may then not send a write twice on its own.
	}
	te := r.Header.Values("Te")
	removeHopByHop(out.Header)
	out.Header.Del("Expect") // the body is here already
	for _, v := range te {
		if strings.EqualFold(strings.TrimSpace(v), "trailers") {
			out.Header.Set("Te", "trailers") // the one TE that goes on: gRPC needs it
		}
	}
	if _, ok := r.Header["User-Agent"]; !ok {
		out.Header["User-Agent"] = nil // as the client sent it: none
	}
	rt := p.rt
	if r.ProtoMajor >= 2 && p.rt2 != nil {
		rt = p.rt2
	}
	resp, err := rt.RoundTrip(out)
	if err != nil {
		return nil, nil, fmt.Errorf("upstream %s: %w", p.up.Host, err)
	}
	rec.forwarded = true
	defer resp.Body.Close()
	rb, err := readAll(resp.Body, resp.ContentLength, p.maxResp)
	if err != nil {
		return nil, nil, fmt.Errorf("upstream %s: reading the answer: %w", p.up.Host, err)
	}
	if int64(len(rb)) > p.maxResp {
		return nil, nil, fmt.Errorf("upstream %s: answer over the proxy's limit (%d bytes)", p.up.Host, p.maxResp)
	}
	return resp, rb, nil
}

// readAll reads r to its end, at most limit+1 bytes, into a buffer sized
// for a declared length n (-1: unknown).
func readAll(r io.Reader, n, limit int64) ([]byte, error) {
	if n < 0 || n > limit {
		return io.ReadAll(io.LimitReader(r, limit+1))
	}
	b := make([]byte, 0, n+1) // +1: the read that finds the end
	buf := bytes.NewBuffer(b)
	_, err := buf.ReadFrom(io.LimitReader(r, limit+1))
	return buf.Bytes(), err
}

// reply writes the upstream's answer: its headers but the hop-by-hop
// ones, its length if it gave one (else chunked), its body and trailers.
func (p *Proxy) reply(w http.ResponseWriter, resp *http.Response, body []byte) {
	h := w.Header()
	for k, vs := range resp.Header {
		h[k] = vs // resp is the proxy's own: its values are not shared
	}
	removeHopByHop(h)
	for k := range resp.Trailer {
		h.Add("Trailer", k)
	}
	chunked := resp.ContentLength < 0 && len(resp.TransferEncoding) > 0
	if !chunked && resp.ContentLength >= 0 && h.Get("Content-Length") == "" && len(body) > 0 {
		h.Set("Content-Length", strconv.Itoa(len(body)))
	}
	w.WriteHeader(resp.StatusCode)
	if chunked {
		if f, ok := w.(http.Flusher); ok {
			f.Flush() // no length: net/http chunks what follows
		}
	}
	w.Write(body)
	for k, vs := range resp.Trailer {
		h[k] = vs
	}
}

// sleep waits d unless the client goes or the proxy closes; it reports
// whether to go on.
func (p *Proxy) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-p.done:
		return false
	}
}

// release waits for hold to close (nil: at once), at most MaxHold, unless
// the client goes or the proxy closes; it reports whether to go on.
func (p *Proxy) release(ctx context.Context, hold <-chan struct{}) bool {
	if hold == nil {
		return true
	}
	t := time.NewTimer(p.maxHold)
	defer t.Stop()
	select {
	case <-hold:
		return true
	case <-t.C:
		return true // held as long as allowed: go on
	case <-ctx.Done():
		return false
	case <-p.done:
		return false
	}
}

// hijack takes over the client's connection.
func hijack(w http.ResponseWriter) (net.Conn, error) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		return nil, errors.New("the connection cannot be taken over (not HTTP/1)")
	}
	c, _, err := hj.Hijack()
	return c, err
}

// withhold does not answer r, as d's fault says: a reset, a close, or a
// hold until the client gives up.
func (p *Proxy) withhold(w http.ResponseWriter, r *http.Request, d *Decision, rec *Record) {
	switch {
	case d.Fault == Blackhole || d.Fault == DropResponse && d.Drop == topology.DropHold:
		p.hold(w, r, rec)
	default:
		p.drop(w, r, rec, d.Fault != DropResponse)
	}
}

// drop takes over the client's connection and closes it, with a TCP RST
// when rst. An HTTP/2 request's stream is reset instead (the connection
// carries other streams): the handler aborts once the request is recorded.
func (p *Proxy) drop(w http.ResponseWriter, r *http.Request, rec *Record, rst bool) {
	if r.ProtoMajor >= 2 {
		rec.abort = true
		return
	}
	c, err := hijack(w)
	if err != nil {
		rec.Error = err.Error()
		return
	}
	if tc, ok := c.(*net.TCPConn); ok && rst {
		tc.SetLinger(0)
	}
	c.Close()
}

// hold keeps the client's connection (an HTTP/2 request: its stream) open
// and unanswered until the client gives up, the proxy closes or MaxHold
// passes.
func (p *Proxy) hold(w http.ResponseWriter, r *http.Request, rec *Record) {
	if r.ProtoMajor >= 2 {
		t := time.NewTimer(p.maxHold)
		defer t.Stop()
		select {
		case <-r.Context().Done():
		case <-p.done:
		case <-t.C:
		}
		rec.abort = true
		return
	}
	c, err := hijack(w)
	if err != nil {
		rec.Error = err.Error()
		return
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(p.maxHold))
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		io.Copy(io.Discard, c) // until the client closes, or the deadline
	}()
	select {
	case <-gone:
	case <-p.done:
	}
}

// hopByHop are the headers that concern one connection (RFC 9110 7.6.1).
var hopByHop = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// removeHopByHop deletes the hop-by-hop headers from h, and those that
// its Connection header names.
func removeHopByHop(h http.Header) {
	for _, v := range h["Connection"] {
		for _, f := range strings.Split(v, ",") {
			if f = strings.TrimSpace(f); f != "" {
				h.Del(f)
			}
		}
	}
	for _, k := range hopByHop {
		h.Del(k)
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
