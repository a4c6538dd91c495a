package transport

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stormsim/stormsim/load/internal/testnet"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/policies"
)

// scriptedTarget answers every request on a loopback listener with the
// raw bytes of answer (then closes the connection if closeAfter), so that
// both clients can be fed the same, possibly unusual, answers.
func scriptedTarget(t *testing.T, answer string, closeAfter bool) *url.URL {
	t.Helper()
	addr := testnet.ServeConns(t, func(c net.Conn) {
		r := bufio.NewReader(c)
		for {
			if _, err := http.ReadRequest(r); err != nil {
				return
			}
			if _, err := c.Write([]byte(answer)); err != nil || closeAfter {
				return
			}
		}
	})
	u, err := url.Parse("http://" + addr + "/x?y=1")
	require.NoError(t, err)
	return u
}

// bothClients sends a with net/http's client (traced, as the driver sends
// on edges without phase semantics) and with a Lean, bounded by
// timeout, and returns both answers: their outcome and the phase a failure
// is placed in must agree.
func bothClients(t *testing.T, u *url.URL, a Attempt, timeout time.Duration) (netHTTP, lean Answer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tr := NewHTTPTransport(4)
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	a.URL = u.String()
	actx, acancel := context.WithTimeout(ctx, timeout)
	netHTTP = SendTraced(actx, client, &a, policies.PhaseTimeouts{}, false, nil)
	acancel()
	lc := NewLean(LeanConfig{Target: u, Connections: 4, Abort: ctx})
	defer lc.CloseIdle()
	a.Parsed = u
	lean = lc.do(ctx, &a, timeout, nil)
	return netHTTP, lean
}

// TestLeanClientAnswersAsNetHTTP feeds the lean client and net/http's the
// same raw answers: each must be classified the same way (outcome, status,
// pushback, transport kind).
func TestLeanClientAnswersAsNetHTTP(t *testing.T) {
	for _, tc := range []struct {
		name, answer string
		want         policies.Outcome
	}{
		{"ok", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", policies.OK},
		{"no content", "HTTP/1.1 204 No Content\r\n\r\n", policies.OK},
		{"pushback ms", "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nRetry-After-Ms: 250.5\r\nX-Stormsim-Dont-Retry: 1\r\nContent-Length: 0\r\n\r\n", policies.Unavailable},
		{"pushback s", "HTTP/1.1 429 Too Many Requests\r\nretry-after: 2\r\nContent-Length: 0\r\n\r\n", policies.Unavailable},
		{"class header", "HTTP/1.1 500 Internal Server Error\r\nX-Stormsim-Outcome: unavailable\r\nContent-Length: 4\r\n\r\nfail", policies.Unavailable},
		{"in progress", "HTTP/1.1 425 Too Early\r\nRetry-After-Ms: 100\r\nContent-Length: 0\r\n\r\n", policies.InProgress},
		{"conflict", "HTTP/1.1 409 Conflict\r\nContent-Length: 0\r\n\r\n", policies.Conflict},
		{"gateway timeout", "HTTP/1.1 504 Gateway Timeout\r\nContent-Length: 0\r\n\r\n", policies.Timeout},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n3;x=y\r\nabc\r\n0\r\nTrailer: 1\r\n\r\n", policies.OK},
		{"chunk line with a bare LF", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\nok\r\n0\r\n\r\n", policies.Error},
		{"chunk data without its CRLF", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nokX0\r\n\r\n", policies.Error},
		{"chunked body cut short", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nok", policies.Timeout},
		{"interim", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", policies.OK},
		{"http/1.0 to close", "HTTP/1.0 200 OK\r\n\r\nthe body runs to the end", policies.OK},
		{"connection close", "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", policies.Unavailable},
		{"switching protocols", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: Upgrade\r\n\r\nraw bytes of another protocol", policies.Error},
		{"malformed", "SPDY/9 200 OK\r\n\r\n", policies.Error},
		// What net/http refuses, the lean client must refuse (issue 37).
		{"two Content-Lengths that differ", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok!", policies.Error},
		{"two Content-Lengths that agree", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok", policies.OK},
		{"Content-Length with a sign", "HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\nok", policies.Error},
		{"Transfer-Encoding merely containing chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", policies.Error},
		{"Transfer-Encoding xchunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: xchunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", policies.Error},
		{"two Transfer-Encodings", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", policies.Error},
		{"Transfer-Encoding on HTTP/1.0 ignored", "HTTP/1.0 200 OK\r\nTransfer-Encoding: gzip\r\nContent-Length: 2\r\n\r\nok", policies.OK},
		{"chunked with a Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: 99\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", policies.OK},
		{"NUL in a value", "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\x00\r\nContent-Length: 0\r\n\r\n", policies.Error},
		{"CR in a value", "HTTP/1.1 503 Service Unavailable\r\nX-Stormsim-Outcome: timeout\rX-Evil: 1\r\nContent-Length: 0\r\n\r\n", policies.Error},
		{"space in a header name", "HTTP/1.1 200 OK\r\nContent Length: 2\r\n\r\nok", policies.OK},
		{"control byte in a header name", "HTTP/1.1 200 OK\r\nX\x01: 2\r\nContent-Length: 2\r\n\r\nok", policies.Error},
		{"status of four digits", "HTTP/1.1 2000 OK\r\nContent-Length: 0\r\n\r\n", policies.Error},
		{"version not a digit", "HTTP/1.x 200 OK\r\nContent-Length: 0\r\n\r\n", policies.Error},
		{"no answer", "", policies.Timeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := scriptedTarget(t, tc.answer, true)
			a := Attempt{Method: "GET", RequestID: "7", Number: 1}
			n, l := bothClients(t, u, a, 2*time.Second)
			require.Equal(t, tc.want, n.Outcome, "net/http")
			require.Equal(t, n, l)
		})
	}
}

// TestLeanClientTransportFailures: a target that never answers times the
// attempt out, a closed port refuses it, in both clients alike.
func TestLeanClientTransportFailures(t *testing.T) {
	t.Run("timeout", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer ln.Close()
		go func() { // accept and say nothing
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				defer c.Close()
			}
		}()
		u, _ := url.Parse("http://" + ln.Addr().String() + "/")
		n, l := bothClients(t, u, Attempt{Method: "GET", Number: 1}, 50*time.Millisecond)
		require.Equal(t, Answer{Outcome: policies.Timeout, Kind: KindTimeout, Phase: PhaseFirstByte}, n, "sent, then no answer: unknown")
		require.Equal(t, n, l)
	})
	t.Run("refused", func(t *testing.T) {
		u, _ := url.Parse("http://" + testnet.ClosedPort(t) + "/")
		n, l := bothClients(t, u, Attempt{Method: "GET", Number: 1}, time.Second)
		require.Equal(t, Answer{Outcome: policies.Unavailable, Kind: KindConnect, Phase: PhaseConnect, NotSent: true}, n)
		require.Equal(t, n, l)
	})
	t.Run("run ended", func(t *testing.T) {
		u := scriptedTarget(t, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false)
		ctx, cancel := context.WithCancel(context.Background())
		lc := NewLean(LeanConfig{Target: u, Connections: 4, Abort: ctx})
		defer lc.CloseIdle()
		a := Attempt{Method: "GET", Number: 1, Parsed: u}
		require.Equal(t, policies.OK, lc.do(ctx, &a, time.Second, nil).Outcome)
		cancel()
		an := lc.do(ctx, &a, time.Second, nil)
		require.Equal(t, policies.Timeout, an.Outcome)
		require.Equal(t, KindCanceled, an.Kind)
		// Ended before its connection (the run's end seen first) or after
		// its write (an idle connection taken before the end expired it):
		// either way, not sent exactly when no byte left.
		require.NotEqual(t, PhaseNone, an.Phase)
		require.Equal(t, !an.Phase.Sent(), an.NotSent)
	})
	// An attempt whose own context (not the run's) ended before it
	// started: the callback that expires its connection runs in a
	// goroutine of its own, which the attempt, taking an idle
	// connection at once, would outrun and answer OK but for the check
	// after its deadline is set. Each round is one chance for that race;
	// every one must fail unsent.
	t.Run("own context ended before the attempt", func(t *testing.T) {
		u := scriptedTarget(t, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false)
		lc := NewLean(LeanConfig{Target: u, Connections: 1, Abort: context.Background()})
		defer lc.CloseIdle()
		a := Attempt{Method: "GET", Number: 1, Parsed: u}
		ended, cancel := context.WithCancel(context.Background())
		cancel()
		for i := range 20 {
			require.Equal(t, policies.OK, lc.do(context.Background(), &a, time.Second, nil).Outcome, "round %d: warm-up", i)
			an := lc.do(ended, &a, time.Second, nil)
			require.Equal(t, Answer{Outcome: policies.Timeout, Kind: KindCanceled, Phase: PhasePool, NotSent: true}, an, "round %d", i)
		}
	})
}

// TestLeanClientReusesAndReplays: answers on one kept-alive connection,
// and a connection the target closed while idle is replaced without the
// attempt failing (GET is safe to send again), as net/http does.
func TestLeanClientReusesAndReplays(t *testing.T) {
	for _, closeAfter := range []bool{false, true} {
		u := scriptedTarget(t, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", closeAfter)
		lc := NewLean(LeanConfig{Target: u, Connections: 1, Abort: context.Background()})
		var rec PhaseRecorder
		for i := range 5 {
			a := Attempt{Method: "GET", Number: 1, Parsed: u}
			if closeAfter {
				time.Sleep(5 * time.Millisecond) // let the target's close arrive
			}
			require.Equal(t, policies.OK, lc.do(context.Background(), &a, time.Second, &rec).Outcome, "attempt %d", i)
		}
		lc.mu.Lock()
		require.Len(t, lc.open, 1, "one connection at a time")
		lc.mu.Unlock()
		lc.CloseIdle()
		// The phases say the same: one connection reused four times, or,
		// when the target closes each, a new one (cold) for every attempt.
		rep := rec.Report()
		require.NotNil(t, rep)
		dialed, warm := int64(1), int64(4)
		if closeAfter {
			dialed, warm = 5, 0
		}
		require.Equal(t, dialed, rep.NewConnections, "close after each: %v", closeAfter)
		require.Equal(t, warm, rep.Reused)
		require.Equal(t, warm, rep.Phases[metrics.PhaseWarm].Count)
		require.Equal(t, 5-warm, rep.Phases[metrics.PhaseCold].Count)
		require.Equal(t, dialed, rep.Phases[PhaseConnect.String()].Count)
		for _, p := range []Phase{PhasePool, PhaseWrite, PhaseFirstByte, PhaseRead} {
			require.Equal(t, int64(5), rep.Phases[p.String()].Count, "%s", p)
		}
		require.Zero(t, rep.NotSent)
	}
}

// TestLeanClientSendsWhatNetHTTPSends: the method, target, and every
// header the driver sets reach the target the same through both clients.
func TestLeanClientSendsWhatNetHTTPSends(t *testing.T) {
	var mu sync.Mutex
	var got []*http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r)
		mu.Unlock()
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	u, err := url.Parse(srv.URL + "/orders?n=3")
	require.NoError(t, err)
	a := Attempt{Method: "POST", Header: http.Header{"X-Extra": {"a", "b"}}, Body: []byte("payload"),
		RequestID: "42", Number: 2, Write: true, Warmup: true, IdempotencyKey: "req-42", Remaining: 1500 * time.Microsecond}
	n, l := bothClients(t, u, a, time.Second)
	require.Equal(t, policies.OK, n.Outcome)
	require.Equal(t, n, l)
	require.Len(t, got, 2)
	for _, k := range []string{HeaderRequestID, HeaderAttempt, HeaderWrite, HeaderWarmup, HeaderIdempotencyKey, "X-Extra", "Content-Length"} {
		require.Equal(t, got[0].Header.Values(k), got[1].Header.Values(k), k)
	}
	require.NotEmpty(t, got[1].Header.Get(HeaderDeadline))
	require.Equal(t, got[0].Method, got[1].Method)
	require.Equal(t, got[0].URL.String(), got[1].URL.String())
	require.Equal(t, got[0].Host, got[1].Host)
	require.Equal(t, got[0].ContentLength, got[1].ContentLength)
}

// FuzzLeanHead feeds arbitrary answers to the lean client's parser: it
// must never panic, and it must never accept a head net/http refuses;
// when it accepts one, both agree on its status and on how its body is
// delimited.
func FuzzLeanHead(f *testing.F) {
	f.Add("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	f.Add("HTTP/1.1 503 x\r\nRetry-After-Ms: 5\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\n")
	f.Add("HTTP/1.0 100 Continue\r\n\r\n")
	f.Add("HTTP/1.1 2000 OK\r\n\r\n")
	f.Add("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok!")
	f.Add("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n")
	f.Add("HTTP/1.1 200 OK\r\nX: a\x00b\r\nY: c\rd\r\n\r\n")
	f.Add("HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n")
	f.Fuzz(func(t *testing.T, s string) {
		r := bufio.NewReader(strings.NewReader(s))
		h, err := readLeanHead(r)
		if err != nil {
			return
		}
		if h.chunked {
			_ = discardChunked(r)
		}
		resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(s)), nil)
		if err != nil {
			t.Fatalf("the lean client read a head net/http refuses (%v): %+v", err, h)
		}
		resp.Body.Close()
		if resp.StatusCode != h.status {
			t.Fatalf("status %d, net/http read %d", h.status, resp.StatusCode)
		}
		chunked := len(resp.TransferEncoding) > 0
		if h.status >= 200 && h.status != 204 && h.status != 304 && (chunked != h.chunked || (!chunked && resp.ContentLength != h.length)) {
			t.Fatalf("body: chunked %v, length %d; net/http: chunked %v, length %d", h.chunked, h.length, chunked, resp.ContentLength)
		}
	})
}
