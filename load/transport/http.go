package transport

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/stormsim/stormsim/policies"
)

// Headers carried by every attempt, from the driver to the entry service
// and from each emulated service to its callees.
const (
	// HeaderRequestID identifies the logical request (one user intent).
	HeaderRequestID = "X-Stormsim-Request-Id"
	// HeaderAttempt is the attempt number on the edge, 1 for the first.
	HeaderAttempt = "X-Stormsim-Attempt"
	// HeaderDeadline is the remaining end-to-end budget in milliseconds
	// when the attempt was sent (fractional values allowed).
	HeaderDeadline = "X-Stormsim-Deadline-Ms"
	// HeaderWrite marks a logical request that is a non-idempotent write.
	HeaderWrite = "X-Stormsim-Write"
	// HeaderWarmup marks a logical request sent during the warm-up, which
	// services count apart so that amplification covers the measured part only.
	HeaderWarmup = "X-Stormsim-Warmup"
	// HeaderIdempotencyKey is the write's idempotency key (the IETF draft's name).
	HeaderIdempotencyKey = "Idempotency-Key"
	// HeaderRetryAfterMs is the pushback delay in milliseconds, sent beside
	// Retry-After because Retry-After has whole-second granularity.
	HeaderRetryAfterMs = "Retry-After-Ms"
	// HeaderDontRetry asks the caller not to retry (SRE "overloaded; don't retry").
	HeaderDontRetry = "X-Stormsim-Dont-Retry"
	// HeaderOutcome names the outcome class of an emulated service's answer.
	HeaderOutcome = "X-Stormsim-Outcome"
)

// Bounds on what a peer can make this process hold (issue 17, item 12).
const (
	// MaxResponseHeaderBytes bounds the header block of an answer the load
	// driver (or a service calling another) reads: net/http's default is
	// 10 MB, so a target answering with huge headers at 200 req/s held
	// gigabytes. An answer over it is a transport error.
	MaxResponseHeaderBytes = 64 << 10
	// MaxBodyBytes bounds a request or answer body an emulated service or
	// the gRPC client reads; an emulated service refuses a larger request
	// with 413.
	MaxBodyBytes = 1 << 20
)

// Status codes of the emulated services, and how the driver reads them.
const (
	// StatusConflict: the idempotency key was used with another payload.
	StatusConflict = http.StatusConflict
	// StatusInProgress (425 Too Early): the key is being processed by
	// another attempt; retry after the Retry-After-Ms delay.
	StatusInProgress = http.StatusTooEarly
	// StatusExpired (504): the propagated deadline had passed before the
	// work started (reject_expired), or a downstream call timed out.
	StatusExpired = http.StatusGatewayTimeout
)

// ErrorKind classifies how an attempt failed at the transport level, so
// that refused connections, resets and slow responses are counted apart.
type ErrorKind uint8

const (
	// KindNone: an HTTP answer arrived.
	KindNone ErrorKind = iota
	// KindConnect: the connection could not be made (refused, unreachable);
	// the target did no work, so the attempt is Unavailable.
	KindConnect
	// KindTimeout: the attempt's timeout or the deadline passed first; the
	// target may have done the work.
	KindTimeout
	// KindReset: the connection broke after the request was written
	// (reset, EOF); the target may have done the work.
	KindReset
	// KindCanceled: the run stopped or the call was abandoned (a hedge
	// lost); not the target's fault.
	KindCanceled
	// KindOther: any other transport error.
	KindOther
	NumKinds
)

var kindNames = [...]string{"none", "connect", "timeout", "reset", "canceled", "other"}

// String returns the kind's name as used in the load report.
func (k ErrorKind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Answer is what one attempt came back with, as the call policy sees it.
type Answer struct {
	Outcome policies.Outcome
	// RetryAfter and DontRetry are the callee's pushback, if any.
	RetryAfter time.Duration
	DontRetry  bool
	// Status is the HTTP status (0 when no answer arrived).
	Status int
	// Kind says how the transport failed (KindNone when Status > 0).
	Kind ErrorKind
	// Phase is the phase a failed attempt failed in, when traced
	// (SendTraced); NotSent says it failed before any byte was written.
	Phase   Phase
	NotSent bool
}

// ClassifyStatus maps an HTTP status and its headers to an outcome:
// 2xx OK; 503 and 429 Unavailable (with pushback); 504 and 408 Timeout;
// 409 Conflict; 425 InProgress; any other status Error.
func ClassifyStatus(status int, h http.Header) Answer { return classifyStatus(status, h.Get) }

// classifyStatus is ClassifyStatus reading headers through get (a value
// by canonical name, "" when absent).
func classifyStatus(status int, get func(string) string) Answer {
	a := Answer{Status: status}
	switch {
	case status >= 200 && status < 300:
		a.Outcome = policies.OK
	case status == http.StatusServiceUnavailable || status == http.StatusTooManyRequests:
		a.Outcome = policies.Unavailable
	case status == http.StatusGatewayTimeout || status == http.StatusRequestTimeout:
		a.Outcome = policies.Timeout
	case status == StatusConflict:
		a.Outcome = policies.Conflict
	case status == StatusInProgress:
		a.Outcome = policies.InProgress
	default:
		a.Outcome = policies.Error
	}
	if o := get(HeaderOutcome); o != "" {
		if oc, err := policies.ParseOutcome(o); err == nil && a.Outcome != policies.OK {
			a.Outcome = oc
		}
	}
	a.RetryAfter, a.DontRetry = parseRetryAfter(get)
	return a
}

// ParseRetryAfter reads pushback: Retry-After-Ms (milliseconds, fractions
// allowed) if present, else Retry-After in whole seconds (HTTP dates are
// not supported and ignored), and the don't-retry header.
func ParseRetryAfter(h http.Header) (time.Duration, bool) { return parseRetryAfter(h.Get) }

// parseRetryAfter is ParseRetryAfter reading headers through get.
func parseRetryAfter(get func(string) string) (time.Duration, bool) {
	dont := get(HeaderDontRetry) != ""
	if v := get(HeaderRetryAfterMs); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && ms < 1e12 {
			return time.Duration(math.Round(ms * float64(time.Millisecond))), dont
		}
	}
	if v := get("Retry-After"); v != "" {
		if s, err := strconv.Atoi(v); err == nil && s >= 0 && s < 1e9 {
			return time.Duration(s) * time.Second, dont
		}
	}
	return 0, dont
}

// SetRetryAfter writes pushback d on h: Retry-After rounded up to whole
// seconds, and Retry-After-Ms exactly.
func SetRetryAfter(h http.Header, d time.Duration, dontRetry bool) {
	if dontRetry {
		h.Set(HeaderDontRetry, "1")
	}
	if d <= 0 {
		return
	}
	h.Set("Retry-After", strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10))
	h.Set(HeaderRetryAfterMs, strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', -1, 64))
}

// ClassifyError maps a transport error to an outcome and a kind. ctxErr is
// the cause of the attempt's context ending (context.Cause): a cause other
// than its deadline means the attempt was abandoned by us (the run stopped,
// a hedge lost), not failed by the target.
func ClassifyError(err error, ctxErr error) Answer {
	var ne net.Error
	var op *net.OpError
	switch {
	case ctxErr != nil && !errors.Is(ctxErr, context.DeadlineExceeded):
		return Answer{Outcome: policies.Timeout, Kind: KindCanceled}
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return Answer{Outcome: policies.Timeout, Kind: KindTimeout}
	case errors.As(err, &ne) && ne.Timeout():
		return Answer{Outcome: policies.Timeout, Kind: KindTimeout}
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.EHOSTUNREACH),
		errors.Is(err, syscall.ENETUNREACH), errors.As(err, &op) && op.Op == "dial":
		return Answer{Outcome: policies.Unavailable, Kind: KindConnect}
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return Answer{Outcome: policies.Timeout, Kind: KindReset}
	case errors.Is(err, context.Canceled):
		return Answer{Outcome: policies.Timeout, Kind: KindCanceled}
	}
	return Answer{Outcome: policies.Error, Kind: KindOther}
}

// Attempt describes one HTTP attempt of a logical request.
type Attempt struct {
	Method string
	URL    string
	Header http.Header // extra headers, copied onto the request
	Body   []byte
	// RequestID, Number (1-based), Write, Warmup and IdempotencyKey fill
	// the stormsim headers.
	RequestID      string
	Number         int
	Write          bool
	Warmup         bool
	IdempotencyKey string
	// Remaining is the end-to-end budget left when sent; ≤ 0 means none.
	Remaining time.Duration
	// KeyHeader, if set, is the canonical name IdempotencyKey is sent
	// under instead of HeaderIdempotencyKey (a request template's).
	KeyHeader string

	// Parsed, if set, is URL parsed, by a sender that sends many attempts
	// to it: they then share it instead of parsing it each time, and the
	// Lean client sends only these.
	Parsed *url.URL
	// Via, if set, sends the attempt instead of its edge's transport (a
	// gRPC call intercepted by load.EdgeClient.UnaryClientInterceptor).
	Via Transport
	// Replica is the callee replica URL is, when the edge balances.
	Replica int
}

// Send performs one attempt with client, bounded by ctx (which carries the
// attempt's timeout), reads and discards the body, and classifies the result.
func Send(ctx context.Context, client *http.Client, a *Attempt) Answer {
	return send(ctx, client, nil, a, nil)
}

// send is Send through rt directly when rt is not nil: the driver's own
// transport, which follows no redirects and keeps no cookies, so that
// http.Client.Do would only add its copies of the request's URL and
// headers to every attempt. Failures are classified through t when it
// follows the attempt's phases (SendTraced).
func send(ctx context.Context, client *http.Client, rt http.RoundTripper, a *Attempt, t *tracedSend) Answer {
	req, err := newRequest(ctx, a)
	if err != nil {
		return Answer{Outcome: policies.Error, Kind: KindOther}
	}
	var resp *http.Response
	if rt != nil {
		resp, err = rt.RoundTrip(req)
	} else {
		resp, err = client.Do(req)
	}
	if err != nil {
		return t.failed(ClassifyError(err, context.Cause(ctx)), ctx)
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		// The body of a 101 is the connection itself, which neither the
		// attempt's context nor its deadline bounds any more: the driver
		// asked for no upgrade, so the answer is the target's error, and
		// the connection is closed unread.
		resp.Body.Close()
		return ClassifyStatus(resp.StatusCode, resp.Header)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil {
		return t.failed(ClassifyError(err, nil), ctx)
	}
	return ClassifyStatus(resp.StatusCode, resp.Header)
}

// newRequest builds a's request bounded by ctx. An attempt whose URL the
// sender parsed once (a.Parsed) and that has no body is built without parsing
// the URL again; its headers share one array of values.
func newRequest(ctx context.Context, a *Attempt) (*http.Request, error) {
	var req *http.Request
	if a.Parsed != nil && len(a.Body) == 0 {
		// Host is left empty: the request is sent with URL.Host, as
		// NewRequest would set it.
		req = (&http.Request{Method: a.Method, URL: a.Parsed, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}).WithContext(ctx)
	} else {
		var body io.Reader
		if len(a.Body) > 0 {
			body = bytes.NewReader(a.Body)
		}
		var err error
		if req, err = http.NewRequestWithContext(ctx, a.Method, a.URL, body); err != nil {
			return nil, err
		}
	}
	req.Header = attemptHeader(a)
	return req, nil
}

// attemptHeader returns the headers of a: its extra ones (sharing their
// values) and stormsim's, all in canonical form.
func attemptHeader(a *Attempt) http.Header {
	h := make(http.Header, len(a.Header)+6)
	for k, vs := range a.Header {
		h[k] = vs
	}
	// One array holds every value set here, instead of one per header.
	vals := make([]string, 0, 6)
	a.eachHeader(func(k, v string) {
		vals = append(vals, v)
		h[k] = vals[len(vals)-1 : len(vals) : len(vals)]
	})
	return h
}

// eachHeader calls set with each of stormsim's headers of a, in canonical
// form (its extra headers, a.Header, not included).
func (a *Attempt) eachHeader(set func(k, v string)) {
	if a.RequestID != "" {
		set(HeaderRequestID, a.RequestID)
	}
	set(HeaderAttempt, strconv.Itoa(a.Number))
	if a.Remaining > 0 {
		set(HeaderDeadline, strconv.FormatFloat(float64(a.Remaining)/float64(time.Millisecond), 'f', 3, 64))
	}
	if a.Write {
		set(HeaderWrite, "1")
	}
	if a.Warmup {
		set(HeaderWarmup, "1")
	}
	if a.IdempotencyKey != "" {
		set(cmp.Or(a.KeyHeader, HeaderIdempotencyKey), a.IdempotencyKey)
	}
}
