package httpecho

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// serve starts a Server on a loopback listener until the test ends and
// returns its address.
func serve(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	var srv Server
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	tb.Cleanup(func() {
		srv.Close()
		if err := <-done; !errors.Is(err, ErrClosed) {
			tb.Errorf("Serve: %v, want ErrClosed", err)
		}
	})
	return ln.Addr().String()
}

// serveNetHTTP starts net/http's server, answering as load/internal/echo's
// -server net does, and returns its address.
func serveNetHTTP(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(Body)) })}
	go srv.Serve(ln)
	tb.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// sentinel ends every exchange: a server that kept the connection open
// answers it and closes.
const sentinel = "GET /end HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"

// exchange sends raw to addr, followed by the sentinel request unless
// cut is set, closes its sending side and reads answers until the server
// closes the connection. It describes each answer as "status body" (a
// refusal by its status alone) and ends with "closed".
func exchange(t *testing.T, addr, raw string, isHead, cut bool) []string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !cut {
		raw += sentinel
	}
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	c.(*net.TCPConn).CloseWrite()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	var got []string
	for {
		req := &http.Request{Method: "GET"}
		if isHead && len(got) == 0 {
			req.Method = "HEAD"
		}
		resp, err := http.ReadResponse(r, req)
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return append(got, "closed")
			}
			return append(got, "read error: "+err.Error())
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return append(got, "body error: "+err.Error())
		}
		if resp.StatusCode == http.StatusOK {
			got = append(got, fmt.Sprintf("%d %q", resp.StatusCode, body))
		} else { // refusals: the status is the contract, not the text
			got = append(got, fmt.Sprint(resp.StatusCode))
		}
		if resp.Close {
			// The server said it closes: check that it does.
			if n, err := r.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
				return append(got, fmt.Sprintf("not closed: %d, %v", n, err))
			}
			return append(got, "closed")
		}
	}
}

// TestServeAnswersAsNetHTTP feeds the same raw requests to this server and
// to net/http's and checks that both give the same answers (status and
// body, in order) and close the connection at the same point. The lean
// server's refusals carry no text.
func TestServeAnswersAsNetHTTP(t *testing.T) {
	lean, nethttp := serve(t), serveNetHTTP(t)
	const get = "GET / HTTP/1.1\r\nHost: x\r\n\r\n"
	for _, tc := range []struct {
		name, raw string
		head      bool
		cut       bool // the request stops short: no sentinel follows
	}{
		{name: "get", raw: get},
		{name: "pipelined", raw: get + get + "GET /a?b=c HTTP/1.1\r\nHost: x\r\nUser-Agent: t\r\n\r\n"},
		{name: "bare LF", raw: "GET / HTTP/1.1\nHost: x\n\n" + get},
		{name: "leading empty line", raw: "\r\n" + get},
		{name: "post with length", raw: "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello" + get},
		{name: "length spaced", raw: "POST / HTTP/1.1\r\nHost: x\r\nContent-Length:  3 \r\n\r\nabc" + get},
		{name: "same length twice", raw: "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc" + get},
		{name: "chunked", raw: "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nA;ext=1\r\n0123456789\r\n0\r\nTrailer: v\r\n\r\n" + get},
		{name: "chunked upper case", raw: "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: Chunked\r\n\r\n0\r\n\r\n" + get},
		{name: "head", raw: "HEAD / HTTP/1.1\r\nHost: x\r\n\r\n", head: true},
		{name: "connection close", raw: "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" + get},
		{name: "connection list", raw: "GET / HTTP/1.1\r\nHost: x\r\nConnection: foo, Close\r\n\r\n" + get},
		{name: "http/1.0", raw: "GET / HTTP/1.0\r\n\r\n" + get},
		{name: "http/1.0 keep-alive", raw: "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n" + get},
		{name: "missing host", raw: "GET / HTTP/1.1\r\n\r\n"},
		{name: "relative target", raw: "GET foo HTTP/1.1\r\nHost: x\r\n\r\n" + get},
		{name: "absolute target", raw: "GET http://x/y HTTP/1.1\r\nHost: x\r\n\r\n" + get},
		{name: "asterisk target", raw: "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n" + get},
		{name: "asterisk target with get", raw: "GET * HTTP/1.1\r\nHost: x\r\n\r\n" + get},
		{name: "escapes", raw: "GET /a%20b?q=%zz HTTP/1.1\r\nHost: x\r\n\r\n" + get},
		{name: "bad escape", raw: "GET /a%zzb HTTP/1.1\r\nHost: x\r\n\r\n" + get},
		{name: "cut escape", raw: "GET /a%2 HTTP/1.1\r\nHost: x\r\n\r\n" + get},
		{name: "control in target", raw: "GET /a\x01 HTTP/1.1\r\nHost: x\r\n\r\n" + get},
		{name: "connect", raw: "CONNECT x:80 HTTP/1.1\r\nHost: x:80\r\n\r\n" + get},
		{name: "lower-case method", raw: "get / HTTP/1.1\r\nHost: x\r\n\r\n" + get},
		{name: "no version", raw: "GET /\r\nHost: x\r\n\r\n"},
		{name: "http/2.0 version", raw: "GET / HTTP/2.0\r\nHost: x\r\n\r\n"},
		{name: "garbage version", raw: "GET / HTTX/1.1\r\nHost: x\r\n\r\n"},
		{name: "field without colon", raw: "GET / HTTP/1.1\r\nHost: x\r\nnocolon\r\n\r\n"},
		{name: "field name with space", raw: "GET / HTTP/1.1\r\nHost: x\r\nBad Name: v\r\n\r\n"},
		{name: "bad length", raw: "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n"},
		{name: "negative length", raw: "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n"},
		{name: "two lengths", raw: "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd"},
		{name: "length and chunked", raw: "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
		{name: "gzip coding", raw: "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n"},
		{name: "bad chunk size", raw: "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"},
		{name: "long target", raw: "GET /" + strings.Repeat("a", 10000) + " HTTP/1.1\r\nHost: x\r\n\r\n" + get},
		{name: "long field", raw: "GET / HTTP/1.1\r\nHost: x\r\nX-Long: " + strings.Repeat("a", 100000) + "\r\n\r\n" + get},
		{name: "field over the limit", raw: "GET / HTTP/1.1\r\nHost: x\r\nX-Long: " + strings.Repeat("a", 2<<20) + "\r\n\r\n"},
		{name: "two hosts", raw: "GET / HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n"},
		{name: "http/1.2", raw: "GET / HTTP/1.2\r\nHost: x\r\n\r\n" + get},
		{name: "control in value", raw: "GET / HTTP/1.1\r\nHost: x\r\nX-A: a\x01b\r\n\r\n"},
		{name: "tab in value", raw: "GET / HTTP/1.1\r\nHost: x\r\nX-A: a\tb\r\n\r\n" + get},
		{name: "expect continue", raw: "POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\nhello"},
		{name: "expect without body", raw: "GET / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n\r\n" + get},
		{name: "body at the skip limit", raw: "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 262144\r\n\r\n" + strings.Repeat("b", 262144) + get},
		{name: "body under the skip limit", raw: "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 262143\r\n\r\n" + strings.Repeat("b", 262143) + get},
		{name: "chunked at the skip limit", raw: "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + strings.Repeat("8000\r\n"+strings.Repeat("c", 0x8000)+"\r\n", 8) + "0\r\n\r\n" + get},
		{name: "body over the skip limit", raw: "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 300000\r\n\r\n" + strings.Repeat("b", 300000) + get},
		{name: "chunked over the skip limit", raw: "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + strings.Repeat("8000\r\n"+strings.Repeat("c", 0x8000)+"\r\n", 9) + "0\r\n\r\n" + get},
		{name: "head cut short", raw: "GET / HTTP/1.1\r\nHost: x\r\n", cut: true},
		{name: "body cut short", raw: "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 9\r\n\r\nabc", cut: true},
		{name: "chunk cut short", raw: "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n9\r\nabc", cut: true},
		{name: "nothing", raw: "", cut: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			want := exchange(t, nethttp, tc.raw, tc.head, tc.cut)
			got := exchange(t, lean, tc.raw, tc.head, tc.cut)
			if strings.Join(got, " | ") != strings.Join(want, " | ") {
				t.Errorf("lean server: %q\nnet/http:    %q", got, want)
			}
		})
	}
}

// FuzzServe sends the same bytes to this server and to net/http's and
// checks that both answer alike, as TestServeAnswersAsNetHTTP does for its
// table.
func FuzzServe(f *testing.F) {
	lean, nethttp := serve(f), serveNetHTTP(f)
	for _, seed := range []string{
		"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
		"POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc",
		"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3;a=b\r\nabc\r\n0\r\nT: v\r\n\r\n",
		"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
		"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /a%20b HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
	} {
		f.Add(seed, false)
	}
	f.Fuzz(func(t *testing.T, raw string, cut bool) {
		if len(raw) > 1<<16 || folded(raw) {
			return
		}
		want := exchange(t, nethttp, raw, false, cut)
		if strings.Contains(strings.Join(want, " "), "connection reset") {
			// net/http's server closed with a long request unread, and
			// the client's kernel dropped its answer: nothing to compare
			// (this server reads up to 1 MB before it closes).
			return
		}
		got := exchange(t, lean, raw, false, cut)
		if strings.Join(got, " | ") != strings.Join(want, " | ") {
			t.Errorf("for %q (cut %v)\nlean server: %q\nnet/http:    %q", raw, cut, got, want)
		}
	})
}

// BenchmarkServe compares the CPU time and allocations per request of this
// server and net/http's, each answering one connection's requests one at
// a time over loopback (the client reads fixed-size answers and allocates
// nothing).
func BenchmarkServe(b *testing.B) {
	for _, s := range []struct {
		name string
		addr func(testing.TB) string
	}{{"lean", serve}, {"net", serveNetHTTP}} {
		b.Run(s.name, func(b *testing.B) {
			c, err := net.Dial("tcp", s.addr(b))
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			req := []byte("GET / HTTP/1.1\r\nHost: x\r\nUser-Agent: bench\r\n\r\n")
			r := bufio.NewReader(c)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Write(req); err != nil {
					b.Fatal(err)
				}
				// The answer's head up to its empty line, then the body.
				for {
					line, err := r.ReadSlice('\n')
					if err != nil {
						b.Fatal(err)
					}
					if len(line) <= 2 {
						break
					}
				}
				if _, err := r.Discard(len(Body)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// folded reports whether raw holds a field line folded onto the previous
// one (obs-fold): net/http's server joins it, this one refuses the request
// with 400, as RFC 9112 (5.2) allows.
func folded(raw string) bool {
	for i := 1; i < len(raw); i++ {
		if raw[i-1] == '\n' && (raw[i] == ' ' || raw[i] == '\t') {
			return true
		}
	}
	return false
}
