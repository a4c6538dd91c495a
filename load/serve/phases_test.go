package serve

import (
	"context"
	"crypto/tls"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stormsim/stormsim/load/driver"
	"github.com/stormsim/stormsim/load/edge"
	"github.com/stormsim/stormsim/load/internal/loadtest"
	"github.com/stormsim/stormsim/load/internal/testnet"
	"github.com/stormsim/stormsim/load/transport"
	"github.com/stormsim/stormsim/policies"
	"github.com/stormsim/stormsim/topology"
)

// listenLoopback accepts connections on a loopback port until the test
// ends, handing each to handle (in the accepting goroutine), and returns
// the address.
func listenLoopback(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			handle(c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
	})
	return ln.Addr().String()
}

// silentListener accepts TCP connections and never answers: a TLS
// handshake against it never completes.
func silentListener(t *testing.T) string {
	t.Helper()
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() { // after the listener's cleanup: no more accepts
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return listenLoopback(t, func(c net.Conn) {
		mu.Lock()
		defer mu.Unlock()
		conns = append(conns, c)
	})
}

func newClient() *http.Client {
	tr := transport.NewHTTPTransport(1)
	tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} // a test listener
	return &http.Client{Transport: tr}
}

func TestSendTracedPhases(t *testing.T) {
	// The slow server reads the whole request, then answers after 2s: a
	// request it got, whose answer comes too late.
	var got atomic.Int64
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Add(1)
		select {
		case <-time.After(2 * time.Second):
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	closed, silent := testnet.ClosedPort(t), silentListener(t)
	for _, tc := range []struct {
		name      string
		url       string
		timeout   time.Duration
		lim       policies.PhaseTimeouts
		aware     bool
		phase     transport.Phase
		notSent   bool
		outcome   policies.Outcome
		reachedBy int64 // requests the slow server saw
	}{
		{"closed port", "http://" + closed + "/", time.Second, policies.PhaseTimeouts{}, true, transport.PhaseConnect, true, policies.NotSent, 0},
		{"closed port, edge without phase semantics", "http://" + closed + "/", time.Second, policies.PhaseTimeouts{}, false, transport.PhaseConnect, true, policies.Unavailable, 0},
		{"tls never completes, tls_timeout", "https://" + silent + "/", time.Second, policies.PhaseTimeouts{TLS: 100 * time.Millisecond}, true, transport.PhaseTLS, true, policies.NotSent, 0},
		{"tls never completes, attempt timeout", "https://" + silent + "/", 150 * time.Millisecond, policies.PhaseTimeouts{}, true, transport.PhaseTLS, true, policies.Timeout, 0},
		{"sent write, attempt timeout", slow.URL, 150 * time.Millisecond, policies.PhaseTimeouts{}, true, transport.PhaseFirstByte, false, policies.Timeout, 1},
		{"sent write, first_byte_timeout", slow.URL, time.Second, policies.PhaseTimeouts{FirstByte: 100 * time.Millisecond}, true, transport.PhaseFirstByte, false, policies.Timeout, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := got.Load()
			var rec transport.PhaseRecorder
			ctx, cancel := context.WithTimeout(context.Background(), tc.timeout)
			defer cancel()
			an := transport.SendTraced(ctx, newClient(), &transport.Attempt{Method: "POST", URL: tc.url, Write: true, Number: 1}, tc.lim, tc.aware, &rec)
			requireFailedIn(t, an, &rec, tc.phase, tc.notSent, tc.outcome)
			require.Eventually(t, func() bool { return got.Load()-before == tc.reachedBy }, time.Second, 10*time.Millisecond)
		})
	}
}

// busyConnection starts a server that holds every request until the test
// ends, and a client of one connection that a first attempt keeps busy:
// the next attempt waits in the pool. reached counts the requests the
// server got.
func busyConnection(t *testing.T) (client *http.Client, url string, reached *atomic.Int64) {
	t.Helper()
	release, entered := make(chan struct{}), make(chan struct{}, 4)
	reached = new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		entered <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // runs first: the held request ends
	client = newClient()
	go transport.SendTraced(context.Background(), client, &transport.Attempt{Method: "GET", URL: srv.URL, Number: 1}, policies.PhaseTimeouts{}, true, nil)
	select {
	case <-entered: // the one connection is busy
	case <-time.After(2 * time.Second):
		t.Fatal("the first attempt never reached the server")
	}
	return client, srv.URL, reached
}

// TestSendTracedPoolWait: with one connection busy, a second attempt waits
// in the pool and its pool_timeout fails it not_sent.
func TestSendTracedPoolWait(t *testing.T) {
	client, url, _ := busyConnection(t)
	var rec transport.PhaseRecorder
	an := transport.SendTraced(context.Background(), client, &transport.Attempt{Method: "GET", URL: url, Number: 1}, policies.PhaseTimeouts{Pool: 50 * time.Millisecond}, true, &rec)
	require.Equal(t, transport.PhasePool, an.Phase)
	require.True(t, an.NotSent)
	require.Equal(t, policies.NotSent, an.Outcome)
}

// TestEdgeClientQueueTimeout: load mode's twin of the simulator's proxy
// queue. With the one connection busy, an attempt whose queue_timeout ran
// out in the pool is the proxy's 503: unavailable, never sent, and not
// retried by the edge although it retries unavailable.
func TestEdgeClientQueueTimeout(t *testing.T) {
	client, url, reached := busyConnection(t)
	pe, err := policies.NewEdge(policies.EdgeConfig{Timeout: 2 * time.Second, Phases: policies.PhaseTimeouts{Queue: 50 * time.Millisecond},
		Retry: policies.RetryConfig{MaxAttempts: 3, On: []policies.RetryClass{"unavailable"}}}, rand.New(rand.NewPCG(1, 2)))
	require.NoError(t, err)
	ec := edge.NewEdgeClient(edge.EdgeConfig{Edge: pe, Transport: transport.NewHTTP(client, false)})
	res := ec.Do(context.Background(), policies.CallOptions{Counted: true}, &transport.Attempt{Method: "GET", URL: url}, nil)
	require.Equal(t, policies.Failed, res.Result)
	require.Equal(t, policies.Unavailable, res.Outcome)
	require.Equal(t, 1, res.Attempts, "the queue's 503 is not retried")
	require.Equal(t, int64(1), reached.Load(), "it never reached the server")
}

// TestTransparentRetryLoad: a write over a closed port fails not_sent; the
// transparent retry sends it once more, and the call fails (definitely:
// nothing was sent), never unknown.
func TestTransparentRetryLoad(t *testing.T) {
	pe, err := policies.NewEdge(policies.EdgeConfig{Timeout: time.Second, Retry: policies.RetryConfig{Transparent: true}}, rand.New(rand.NewPCG(1, 2)))
	require.NoError(t, err)
	ec := edge.NewEdgeClient(edge.EdgeConfig{Edge: pe, Transport: transport.NewHTTP(newClient(), false)})
	res := ec.Do(context.Background(), policies.CallOptions{Write: true, Counted: true}, &transport.Attempt{Method: "POST", URL: "http://" + testnet.ClosedPort(t) + "/", Write: true}, nil)
	require.Equal(t, policies.Failed, res.Result)
	require.Equal(t, policies.NotSent, res.Outcome)
	require.Equal(t, 2, res.Attempts)
	st := ec.Stats()
	require.Equal(t, int64(1), st.TransparentRetries)
	require.Equal(t, int64(2), st.NotSent)
	rep := ec.Phases.Report()
	require.Equal(t, int64(2), rep.NotSent)
	require.Equal(t, int64(2), rep.FailedIn["connect"])
}

// TestRunPhaseAwareUsesNetHTTP: the lean client enforces no phase
// timeout and retries nothing transparently, so a run whose client policy
// has phase semantics (here a transparent retry) is driven with
// net/http's: its not-sent attempts are counted by phase. A run without
// them keeps the lean client, which times the phases too: its refused
// attempts are not sent, in connect, while the policy sees them as it
// always did (unavailable).
func TestRunPhaseAwareUsesNetHTTP(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy topology.Call
		phases bool
	}{
		{"transparent retry: net/http, traced", topology.Call{Timeout: time.Second, Retry: policies.RetryConfig{Transparent: true}}, true},
		{"no phase semantics: the lean client, phases timed", topology.Call{Timeout: time.Second}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := driver.Run(context.Background(), driver.Options{Target: "http://" + testnet.ClosedPort(t) + "/", Arrivals: loadtest.Constant(50, 200*time.Millisecond),
				Duration: 200 * time.Millisecond, Policy: tc.policy, Workers: 4})
			require.NoError(t, err)
			e := res.Summary.Edges[0]
			require.Positive(t, e.Calls)
			if !tc.phases {
				require.NotNil(t, e.Phases, "the lean client times phases")
				require.Equal(t, e.Attempts, e.Phases.NotSent, "every attempt refused: none sent")
				require.Equal(t, e.Phases.NotSent, e.Phases.FailedIn["connect"])
				require.Zero(t, e.NotSent, "a refused connection stays unavailable for the policy")
				require.Zero(t, e.TransparentRetries)
				return
			}
			require.Equal(t, 2*e.Calls, e.Phases.NotSent, "each call: the attempt and its transparent retry")
			require.Equal(t, e.Phases.NotSent, e.Phases.FailedIn["connect"])
			require.Equal(t, e.Calls, e.TransparentRetries)
			require.Equal(t, e.Calls, e.Failed, "definite failures, never unknown")
		})
	}
}
