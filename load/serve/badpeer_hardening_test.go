package serve

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stormsim/stormsim/load/driver"
	"github.com/stormsim/stormsim/load/internal/loadtest"
	"github.com/stormsim/stormsim/load/transport"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/policies"
	"github.com/stormsim/stormsim/topology"
)

// peer is a raw TCP server on loopback that misbehaves in one way.
type peer struct {
	ln    net.Listener
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns map[net.Conn]bool
	quit  chan struct{}
	// written counts the bytes the peer sent, across connections.
	written atomic.Int64
}

// startPeer serves every connection with handle until the test ends.
func startPeer(t *testing.T, handle func(p *peer, c net.Conn)) *peer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &peer{ln: ln, conns: map[net.Conn]bool{}, quit: make(chan struct{})}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			p.conns[c] = true
			p.mu.Unlock()
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				defer c.Close()
				handle(p, c)
			}()
		}
	}()
	t.Cleanup(func() {
		close(p.quit)
		ln.Close()
		p.mu.Lock()
		for c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *peer) url() string { return "http://" + p.ln.Addr().String() + "/" }

// readRequest consumes one request's header block.
func readRequest(c net.Conn) bool {
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return false
		}
		if line == "\r\n" {
			return true
		}
	}
}

// write sends b, counting it; false once the client is gone.
func (p *peer) write(c net.Conn, b []byte) bool {
	n, err := c.Write(b)
	p.written.Add(int64(n))
	return err == nil
}

// hold waits until the peer shuts down or the client hangs up.
func (p *peer) hold(c net.Conn) {
	go func() {
		buf := make([]byte, 512)
		for {
			if _, err := c.Read(buf); err != nil {
				c.Close()
				return
			}
		}
	}()
	<-p.quit
}

// Misbehaviours.
var (
	silent = func(p *peer, c net.Conn) {
		readRequest(c)
		p.hold(c)
	}
	dripping = func(p *peer, c net.Conn) {
		if !readRequest(c) {
			return
		}
		for _, b := range []byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok") {
			select {
			case <-p.quit:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if !p.write(c, []byte{b}) {
				return
			}
		}
	}
	resetting = func(p *peer, c net.Conn) {
		if readRequest(c) {
			c.(*net.TCPConn).SetLinger(0) // close with RST
		}
	}
	garbage = func(p *peer, c net.Conn) {
		if readRequest(c) {
			p.write(c, []byte("SSH-2.0-OpenSSH_9.6\r\n\x00\x01\x02 not http at all\r\n\r\n"))
		}
	}
	enormous = func(p *peer, c net.Conn) {
		if !readRequest(c) || !p.write(c, []byte("HTTP/1.1 200 OK\r\nContent-Length: 1099511627776\r\n\r\n")) {
			return
		}
		chunk := make([]byte, 64<<10)
		for {
			select {
			case <-p.quit:
				return
			default:
			}
			if !p.write(c, chunk) {
				return
			}
		}
	}
)

// heapPeak samples the live heap until stop is called and returns the
// largest reading above the starting one.
func heapPeak() (stop func() uint64) {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	done := make(chan struct{})
	peak := make(chan uint64, 1)
	go func() {
		var top uint64
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > base && m.HeapAlloc-base > top {
				top = m.HeapAlloc - base
			}
			select {
			case <-done:
				peak <- top
				return
			case <-tick.C:
			}
		}
	}()
	return func() uint64 { close(done); return <-peak }
}

// TestBadPeers drives targets that misbehave: each attempt must be
// classified and counted, memory must stay bounded, and the run must end
// on time (its duration plus one attempt timeout, with slack for a loaded
// machine).
func TestBadPeers(t *testing.T) {
	const (
		rate     = 20
		duration = time.Second
		timeout  = 300 * time.Millisecond
	)
	cases := []struct {
		name   string
		handle func(*peer, net.Conn)
		// kind returns the count every attempt must land in.
		kind func(*metrics.LoadReport) int64
		// outcome is what the caller sees for each logical request.
		unknown bool
	}{
		{"accepts-never-answers", silent, func(l *metrics.LoadReport) int64 { return l.Timeouts }, true},
		{"answers-byte-by-byte", dripping, func(l *metrics.LoadReport) int64 { return l.Timeouts }, true},
		{"resets-connections", resetting, func(l *metrics.LoadReport) int64 { return l.Resets }, true},
		{"not-http", garbage, func(l *metrics.LoadReport) int64 { return l.OtherErrors }, false},
		{"enormous-body", enormous, func(l *metrics.LoadReport) int64 { return l.Timeouts }, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := startPeer(t, c.handle)
			peak := heapPeak()
			start := time.Now()
			res, err := driver.Run(context.Background(), driver.Options{
				Target: p.url(), Arrivals: loadtest.Constant(rate, duration), Duration: duration,
				Policy:  topology.Call{Timeout: timeout, Retry: policies.RetryConfig{MaxAttempts: 1}},
				Workers: 32, Seed: 1,
			})
			elapsed := time.Since(start)
			grew := peak()
			require.NoError(t, err)
			require.Less(t, elapsed, duration+timeout+3*time.Second, "run did not end on time")
			l := res.Summary.Load
			require.NotNil(t, l)
			require.EqualValues(t, rate*duration/time.Second, l.Attempts, "one attempt per request")
			require.Equal(t, l.Attempts, c.kind(l), "every attempt classified alike: %+v", l)
			r := res.Summary.Requests
			require.Zero(t, r.Succeeded)
			if c.unknown {
				require.Equal(t, r.Offered, r.Unknown, "the target may have done the work: %+v", r)
			} else {
				require.Equal(t, r.Offered, r.Failed, "%+v", r)
			}
			// Twenty requests in flight at most: a few MiB of buffers, not
			// the bodies the peer sent.
			require.Less(t, grew, uint64(64<<20), "heap grew by %d bytes", grew)
			if c.name == "enormous-body" {
				require.Greater(t, p.written.Load(), int64(1<<20), "the peer did send a big body")
			}
		})
	}
}

// TestSilentPeerWithoutTimeout checks that a run whose policy sets no
// timeout and no deadline still ends when a target never answers: the
// requests in flight at the end of the schedule get the grace period.
func TestSilentPeerWithoutTimeout(t *testing.T) {
	p := startPeer(t, silent)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan *metrics.Result, 1)
	go func() {
		res, err := driver.Run(ctx, driver.Options{Target: p.url(), Arrivals: loadtest.Constant(10, 500*time.Millisecond),
			Duration: 500 * time.Millisecond, Workers: 8, Seed: 1, Grace: 500 * time.Millisecond})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	limit := 500*time.Millisecond + 500*time.Millisecond + 5*time.Second
	select {
	case res := <-done:
		require.Equal(t, res.Summary.Requests.Offered, res.Summary.Requests.Unknown+res.Summary.Requests.Failed)
	case <-time.After(limit):
		cancel() // let the run and its goroutines end before failing
		<-done
		t.Fatalf("run against a silent target with no timeout did not end within %v of its start", limit)
	}
}

// TestServeRejectsOversizedInput checks the emulated services' bounds on
// what a client sends: a header block over 64 KiB is refused with 431, a
// body over 1 MiB with 413 (an Error the caller should not retry), and a
// normal request still works after both.
func TestServeRejectsOversizedInput(t *testing.T) {
	sc, err := topology.Parse("bounds.yaml", []byte(`name: bounds
duration: 10s
workload: {entry: api, rate: 1}
services:
  - name: api
    workers: 2
    service_time: {dist: constant, value: 1ms}
`), nil)
	require.NoError(t, err)
	cl, err := StartCluster(sc, ClusterOptions{Listen: "127.0.0.1:0"})
	require.NoError(t, err)
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		cl.Close(ctx)
	}()
	url := cl.URLs["api"]
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()

	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Header.Set("X-Padding", strings.Repeat("a", 100<<10))
	resp, err := client.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusRequestHeaderFieldsTooLarge, resp.StatusCode)

	resp, err = client.Post(url, "application/octet-stream", bytes.NewReader(make([]byte, 2<<20)))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	a := transport.ClassifyStatus(resp.StatusCode, resp.Header)
	require.Equal(t, policies.Error, a.Outcome)
	require.True(t, a.DontRetry, "the same body cannot succeed on a retry")
	require.EqualValues(t, 1, cl.Service("api").Stats().All.Rejected)

	resp, err = client.Post(url, "application/octet-stream", bytes.NewReader(make([]byte, 1<<20)))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "a body of exactly the bound is accepted")

	resp, err = client.Get(url)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "a normal request still works")
}

// TestServeServersHaveTimeouts checks that no emulated service's server
// waits forever on a slow or idle client.
func TestServeServersHaveTimeouts(t *testing.T) {
	sc, err := topology.Parse("timeouts.yaml", []byte(`name: timeouts
duration: 10s
workload: {entry: api, rate: 1}
services:
  - name: api
    workers: 1
    service_time: {dist: constant, value: 1ms}
    calls: [{to: db}]
  - name: db
    workers: 1
    service_time: {dist: constant, value: 1ms}
`), nil)
	require.NoError(t, err)
	cl, err := StartCluster(sc, ClusterOptions{Listen: "127.0.0.1:0"})
	require.NoError(t, err)
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		cl.Close(ctx)
	}()
	require.Len(t, cl.servers, 2)
	for _, srv := range cl.servers {
		require.Positive(t, srv.ReadHeaderTimeout)
		require.Positive(t, srv.ReadTimeout)
		require.Positive(t, srv.WriteTimeout)
		require.Positive(t, srv.IdleTimeout)
		require.Positive(t, srv.MaxHeaderBytes)
		require.LessOrEqual(t, srv.MaxHeaderBytes, 64<<10)
	}
}
