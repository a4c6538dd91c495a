package faultproxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stormsim/stormsim/topology"
)

// startProxy starts a proxy to upstream on loopback and stops it with the test.
func startProxy(t testing.TB, cfg Config) *Server {
	t.Helper()
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Listen(p, "127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			t.Errorf("closing the proxy: %v", err)
		}
	})
	return s
}

// fidelityUpstream answers what the fidelity test asks for: its
// headers fixed (Date included) so two answers can be compared.
func fidelityUpstream(t *testing.T) *httptest.Server {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("upstream reading the body: %v", err)
		}
		h := w.Header()
		h.Set("Date", "Tue, 01 Dec 2026 12:00:00 GMT")
		h.Set("X-Seen-Body", strconv.Itoa(len(body)))
		h.Set("X-Seen-Secret", r.Header.Get("X-Secret"))
		h.Set("X-Seen-Te", r.Header.Get("Te"))
		h["X-Multi"] = []string{"a", "b"}
		h.Set("Set-Cookie", "s=1; Path=/")
		switch r.URL.Path {
		case "/chunked":
			h.Set("Trailer", "X-Checksum")
			w.WriteHeader(http.StatusOK)
			for i := range 5 {
				fmt.Fprintf(w, "chunk %d of %s\n", i, r.URL.RawQuery)
				w.(http.Flusher).Flush()
			}
			h.Set("X-Checksum", "abc")
		case "/stream":
			for i := range 3 {
				fmt.Fprintf(w, "part %d\n", i)
				w.(http.Flusher).Flush()
			}
		case "/created":
			h.Set("Content-Type", "application/json")
			h.Set("Location", "/orders/7")
			w.WriteHeader(http.StatusCreated)
			fmt.Fprintf(w, `{"id":7,"echo":%q}`, body)
		case "/empty":
			w.WriteHeader(http.StatusNoContent)
		case "/hop":
			h.Set("Connection", "X-Up")
			h.Set("X-Up", "1")
			h.Set("Keep-Alive", "timeout=5")
			io.WriteString(w, "hop")
		default:
			w.WriteHeader(http.StatusTeapot)
			w.Write(bytes.Repeat([]byte("x"), 100000))
		}
	}))
	t.Cleanup(up.Close)
	return up
}

// answer is what a client saw of one response.
type answer struct {
	status      int
	header      http.Header
	body        string
	trailer     http.Header
	chunked     bool
	reused      bool
	continue100 bool
}

func fetch(t *testing.T, c *http.Client, method, url string, body io.Reader, h http.Header) answer {
	t.Helper()
	var a answer
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		GotConn:        func(i httptrace.GotConnInfo) { a.reused = i.Reused },
		Got100Continue: func() { a.continue100 = true },
	})
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range h {
		req.Header[k] = vs
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("%s %s: reading: %v", method, url, err)
	}
	a.status, a.header, a.body, a.trailer = resp.StatusCode, resp.Header, string(b), resp.Trailer
	a.chunked = slices.Contains(resp.TransferEncoding, "chunked")
	return a
}

func TestFidelity(t *testing.T) {
	up := fidelityUpstream(t)
	px := startProxy(t, Config{Upstream: up.URL})
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1, ExpectContinueTimeout: 5 * time.Second}}
	defer client.CloseIdleConnections()
	big := strings.Repeat("b", 200000)
	for i, tc := range []struct {
		name, method, path string
		body               func() io.Reader
		header             http.Header
		chunked            bool
	}{
		{name: "created", method: "POST", path: "/created", body: func() io.Reader { return strings.NewReader(`{"sku":"a"}`) }},
		{name: "chunked answer with trailer", method: "GET", path: "/chunked?q=1", chunked: true},
		{name: "chunked answer", method: "GET", path: "/stream", chunked: true},
		{name: "chunked request body", method: "POST", path: "/created", body: func() io.Reader { return io.MultiReader(strings.NewReader("part1,"), strings.NewReader("part2")) }},
		{name: "no content", method: "DELETE", path: "/empty"},
		{name: "large answer", method: "GET", path: "/big"},
		{name: "head", method: "HEAD", path: "/big"},
		{name: "expect 100-continue", method: "PUT", path: "/created", body: func() io.Reader { return strings.NewReader(big) }, header: http.Header{"Expect": {"100-continue"}}},
		{name: "hop-by-hop both ways", method: "GET", path: "/hop", header: http.Header{"Connection": {"X-Secret"}, "X-Secret": {"s"}, "Te": {"deflate"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var direct, proxied answer
			for j, base := range []string{up.URL, px.URL} {
				var body io.Reader
				if tc.body != nil {
					body = tc.body()
				}
				a := fetch(t, client, tc.method, base+tc.path, body, tc.header)
				if j == 0 {
					direct = a
				} else {
					proxied = a
				}
			}
			if proxied.status != direct.status || proxied.body != direct.body {
				t.Errorf("through the proxy: %d %q, direct: %d %q", proxied.status, trim(proxied.body), direct.status, trim(direct.body))
			}
			dh, ph := direct.header.Clone(), proxied.header.Clone()
			if tc.path == "/hop" {
				for _, k := range []string{"X-Up", "Keep-Alive", "Connection"} {
					if v := ph.Get(k); v != "" {
						t.Errorf("the upstream's hop-by-hop %s reached the client: %q", k, v)
					}
				}
				dh.Del("X-Up")
				if got := ph.Get("X-Seen-Secret"); got != "" {
					t.Errorf("the client's Connection-named X-Secret reached the upstream: %q", got)
				}
				if got := ph.Get("X-Seen-Te"); got != "" {
					t.Errorf("the client's TE reached the upstream: %q", got)
				}
				dh.Del("X-Seen-Secret")
				dh.Del("X-Seen-Te")
				ph.Del("X-Seen-Secret")
				ph.Del("X-Seen-Te")
			}
			removeHopByHop(dh)
			removeHopByHop(ph)
			if !headersEqual(dh, ph) {
				t.Errorf("headers differ (modulo hop-by-hop):\nproxied %v\ndirect  %v", ph, dh)
			}
			if proxied.chunked != direct.chunked || tc.chunked && !proxied.chunked {
				t.Errorf("chunked: proxied %v, direct %v, want %v", proxied.chunked, direct.chunked, tc.chunked)
			}
			if !headersEqual(proxied.trailer, direct.trailer) {
				t.Errorf("trailers: proxied %v, direct %v", proxied.trailer, direct.trailer)
			}
			if tc.header.Get("Expect") != "" && !proxied.continue100 {
				t.Errorf("the proxy sent no 100 Continue to a client that expected it")
			}
			if i > 0 && !proxied.reused {
				t.Errorf("request %d did not reuse the kept-alive connection to the proxy", i+1)
			}
		})
	}
}

func trim(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

func headersEqual(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

// rawRoundTrip sends raw on one new connection and returns what came back
// before the proxy closed it or 2 s passed.
func rawRoundTrip(t *testing.T, addr, raw string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(c)
	return string(b)
}

func TestBounds(t *testing.T) {
	var seen atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen.Add(1) }))
	defer up.Close()
	px := startProxy(t, Config{Upstream: up.URL, MaxBodyBytes: 1000, MaxHeaderBytes: 4096})
	addr := strings.TrimPrefix(px.URL, "http://")
	for _, tc := range []struct{ name, raw, want string }{
		{"header block", "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("h", 20000) + "\r\n\r\n", "HTTP/1.1 431"},
		{"declared body", "POST / HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 5000\r\n\r\n" + strings.Repeat("b", 5000), "HTTP/1.1 413"},
		{"chunked body", "POST / HTTP/1.1\r\nHost: x\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n7d0\r\n" + strings.Repeat("b", 2000) + "\r\n0\r\n\r\n", "HTTP/1.1 413"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := rawRoundTrip(t, addr, tc.raw); !strings.HasPrefix(got, tc.want) {
				t.Errorf("answer %q, want %s", trim(got), tc.want)
			}
		})
	}
	if n := seen.Load(); n != 0 {
		t.Errorf("the upstream saw %d oversized requests, want 0", n)
	}
}

// countingUpstream counts requests by request id and answers 200 with the id.
type countingUpstream struct {
	mu   sync.Mutex
	seen map[string]int
}

func (u *countingUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	u.mu.Lock()
	u.seen[r.Header.Get("X-Stormsim-Request-Id")]++
	u.mu.Unlock()
	io.WriteString(w, "ok "+r.Header.Get("X-Stormsim-Request-Id"))
}

func (u *countingUpstream) count() (ids, total int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, n := range u.seen {
		total += n
	}
	return len(u.seen), total
}

// TestDropResponseBinomial: at drop_response 0.3 the upstream sees every
// request, the client gets about 0.7 N replies (within 4 binomial standard
// errors), and the log names exactly the requests whose reply was lost.
func TestDropResponseBinomial(t *testing.T) {
	const n, p = 400, 0.3
	cu := &countingUpstream{seen: map[string]int{}}
	up := httptest.NewServer(cu)
	defer up.Close()
	var log syncBuffer
	px := startProxy(t, Config{Upstream: up.URL, Seed: 7, Log: &log,
		Faults: []topology.ProxyFault{{DropResponse: p, Drop: topology.DropClose}}})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	defer client.CloseIdleConnections()

	var mu sync.Mutex
	replied := map[string]bool{}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			id := fmt.Sprintf("r%d", i)
			req, _ := http.NewRequest("POST", px.URL+"/orders", strings.NewReader("{}"))
			req.Header.Set("X-Stormsim-Request-Id", id)
			req.Header.Set("X-Stormsim-Attempt", "1")
			resp, err := client.Do(req)
			if err != nil {
				return // the dropped reply: EOF
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err == nil && string(b) == "ok "+id {
				mu.Lock()
				replied[id] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if ids, total := cu.count(); ids != n || total != n {
		t.Fatalf("upstream saw %d requests (%d distinct), want every one of %d once", total, ids, n)
	}
	se := math.Sqrt(n * p * (1 - p))
	if got, want := float64(len(replied)), n*(1-p); math.Abs(got-want) > 4*se {
		t.Errorf("client got %v replies, want %v ± %.1f (4 binomial standard errors)", got, want, 4*se)
	}
	// A dropped reply's client sees EOF before the proxy records it; the
	// proxy's Close waits for every record. (The client's idle
	// connections go first: a server waits 5 s for a connection that never
	// sent a request.)
	client.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := px.Close(ctx); err != nil {
		t.Fatal(err)
	}
	recs := parseLog(t, log.String())
	if len(recs) != n {
		t.Fatalf("log has %d lines, want %d", len(recs), n)
	}
	for _, r := range recs {
		dropped := r.Fault == "drop_response"
		if dropped == replied[r.RequestID] {
			t.Errorf("request %s: logged fault %q, client got a reply: %v", r.RequestID, r.Fault, replied[r.RequestID])
		}
		if dropped && (r.UpstreamStatus != 200 || r.Delivered || r.Drop != "close" || r.Source != "faults[0]") {
			t.Errorf("dropped request's record: %+v", r)
		}
		if !r.Forwarded() || r.AnsweredMS < r.ForwardedMS || r.DoneMS < r.AnsweredMS {
			t.Errorf("record timings out of order: %+v", r)
		}
	}
}

func parseLog(t *testing.T, s string) []Record {
	t.Helper()
	var recs []Record
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		recs = append(recs, r)
	}
	return recs
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestFaults checks what each outcome does, at probability 1, with the
// upstream's count and the client's view.
func TestFaults(t *testing.T) {
	for _, tc := range []struct {
		name     string
		fault    topology.ProxyFault
		upstream int  // requests the upstream saw
		status   int  // what the client got; 0: an error
		timeout  bool // the client's error is its own timeout
		minTime  time.Duration
		record   string
	}{
		{name: "none", fault: topology.ProxyFault{}, upstream: 1, status: 200, record: "none"},
		{name: "reset before", fault: topology.ProxyFault{ResetBefore: 1}, upstream: 0, record: "reset_before"},
		{name: "reset after", fault: topology.ProxyFault{ResetAfter: 1}, upstream: 1, record: "reset_after"},
		{name: "error", fault: topology.ProxyFault{ErrorRate: 1, RetryAfter: 1500 * time.Millisecond}, upstream: 0, status: 503, record: "error"},
		{name: "blackhole", fault: topology.ProxyFault{Blackhole: 1}, upstream: 0, timeout: true, record: "blackhole"},
		{name: "drop close", fault: topology.ProxyFault{DropResponse: 1, Drop: topology.DropClose}, upstream: 1, record: "drop_response"},
		{name: "drop hold", fault: topology.ProxyFault{DropResponse: 1, Drop: topology.DropHold}, upstream: 1, timeout: true, record: "drop_response"},
		{name: "latency before", fault: topology.ProxyFault{LatencyAdd: 80 * time.Millisecond}, upstream: 1, status: 200, minTime: 80 * time.Millisecond, record: "none"},
		{name: "latency before reply", fault: topology.ProxyFault{LatencyReply: 80 * time.Millisecond}, upstream: 1, status: 200, minTime: 80 * time.Millisecond, record: "none"},
		{name: "outside the window", fault: topology.ProxyFault{At: time.Hour, ErrorRate: 1}, upstream: 1, status: 200, record: "none"},
		{name: "other method", fault: topology.ProxyFault{Method: "GET", ErrorRate: 1}, upstream: 1, status: 200, record: "none"},
		{name: "other path", fault: topology.ProxyFault{Path: "/health", ErrorRate: 1}, upstream: 1, status: 200, record: "none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cu := &countingUpstream{seen: map[string]int{}}
			up := httptest.NewServer(cu)
			defer up.Close()
			var recs []Record
			var mu sync.Mutex
			px := startProxy(t, Config{Upstream: up.URL, Faults: []topology.ProxyFault{tc.fault},
				OnRecord: func(r Record) { mu.Lock(); recs = append(recs, r); mu.Unlock() }})
			// The client gives up after 300ms where that is the point (a
			// hold); elsewhere a loaded machine must not fail the test.
			timeout := 5 * time.Second
			if tc.timeout {
				timeout = 300 * time.Millisecond
			}
			client := &http.Client{Timeout: timeout, Transport: &http.Transport{}}
			defer client.CloseIdleConnections()
			req, _ := http.NewRequest("POST", px.URL+"/orders", strings.NewReader("{}"))
			req.Header.Set("X-Stormsim-Request-Id", "a")
			start := time.Now()
			resp, err := client.Do(req)
			took := time.Since(start)
			switch {
			case tc.status == 0 && err == nil:
				t.Errorf("client got %d, want an error", resp.StatusCode)
			case tc.status == 0 && tc.timeout != isTimeout(err):
				t.Errorf("client error %v: timeout %v, want %v", err, isTimeout(err), tc.timeout)
			case tc.status != 0 && err != nil:
				t.Errorf("client error %v, want %d", err, tc.status)
			case tc.status != 0 && resp.StatusCode != tc.status:
				t.Errorf("client got %d, want %d", resp.StatusCode, tc.status)
			}
			if err == nil {
				if tc.fault.RetryAfter > 0 && resp.Header.Get("Retry-After") != "2" {
					t.Errorf("Retry-After %q, want 2 (1.5s rounded up)", resp.Header.Get("Retry-After"))
				}
				resp.Body.Close()
			}
			if took < tc.minTime {
				t.Errorf("answered in %v, want at least %v", took, tc.minTime)
			}
			// The record is written when the proxy is done with the request.
			deadline := time.Now().Add(2 * time.Second)
			for {
				mu.Lock()
				n := len(recs)
				mu.Unlock()
				if n > 0 || time.Now().After(deadline) {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			if _, total := cu.count(); total != tc.upstream {
				t.Errorf("upstream saw %d requests, want %d", total, tc.upstream)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(recs) != 1 || recs[0].Fault != tc.record || recs[0].RequestID != "a" {
				t.Errorf("records %+v, want one with fault %s", recs, tc.record)
			}
		})
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TestRuleHold: a rule holds a request until released, and learns when
// it was forwarded.
func TestRuleHold(t *testing.T) {
	cu := &countingUpstream{seen: map[string]int{}}
	up := httptest.NewServer(cu)
	defer up.Close()
	release := make(chan struct{})
	forwarded := make(chan time.Duration, 1)
	px := startProxy(t, Config{Upstream: up.URL, Rule: func(r *Request) (Decision, bool) {
		if r.Key != "k1" {
			return Decision{}, false
		}
		return Decision{Hold: release, Forwarded: func(at time.Duration) { forwarded <- at }, Source: "test"}, true
	}})
	done := make(chan error, 1)
	go func() {
		req, _ := http.NewRequest("POST", px.URL+"/orders", nil)
		req.Header.Set("Idempotency-Key", "k1")
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	select {
	case <-done:
		t.Fatal("the held request was answered before its release")
	case <-time.After(100 * time.Millisecond):
	}
	if _, total := cu.count(); total != 0 {
		t.Fatalf("the upstream saw the held request")
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	select {
	case at := <-forwarded:
		if at < 100*time.Millisecond {
			t.Errorf("forwarded at %v, before the release", at)
		}
	default:
		t.Error("the rule's Forwarded was not called")
	}
}

// TestDrawsIndependentOfOrder: a request's fault depends on its id and
// attempt, not on when it arrived.
func TestDrawsIndependentOfOrder(t *testing.T) {
	lines := newLines([]topology.ProxyFault{{DropResponse: 0.5}})
	a := decide(lines, 3, &Request{Seq: 1, ID: "x", Attempt: 2})
	b := decide(lines, 3, &Request{Seq: 99, ID: "x", Attempt: 2})
	if a.Fault != b.Fault {
		t.Errorf("same id and attempt, different arrival: %v vs %v", a.Fault, b.Fault)
	}
	hits := 0
	for i := range 10000 {
		if decide(lines, 3, &Request{ID: strconv.Itoa(i), Attempt: 1}).Fault == DropResponse {
			hits++
		}
	}
	if se := math.Sqrt(10000 * 0.25); math.Abs(float64(hits)-5000) > 4*se {
		t.Errorf("%d of 10000 drawn at p = 0.5", hits)
	}
}
