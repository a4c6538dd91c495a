package serve

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/stormsim/stormsim/load/driver"
	"github.com/stormsim/stormsim/load/edge"
	"github.com/stormsim/stormsim/load/internal/loadtest"
	"github.com/stormsim/stormsim/load/internal/testnet"
	"github.com/stormsim/stormsim/load/transport"
	"github.com/stormsim/stormsim/policies"
	"github.com/stormsim/stormsim/topology"
)

// grpcTestServer serves every unary method on loopback: it counts the
// calls that reached it, then answers after delay (or when the caller
// goes away).
func grpcTestServer(t *testing.T, delay time.Duration) (addr string, got *atomic.Int64) {
	t.Helper()
	got = new(atomic.Int64)
	srv := grpc.NewServer(grpc.ForceServerCodec(transport.RawCodec{}), grpc.UnknownServiceHandler(func(_ any, stream grpc.ServerStream) error {
		var in transport.Frame
		if err := stream.RecvMsg(&in); err != nil {
			return err
		}
		got.Add(1)
		select {
		case <-time.After(delay):
		case <-stream.Context().Done():
			return stream.Context().Err()
		}
		return stream.SendMsg(&transport.Frame{})
	}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	return ln.Addr().String(), got
}

func grpcURL(addr string) string { return "grpc://" + addr + "/pkg.S/M" }

// requireFailedIn checks that one attempt failed in phase, sent or not,
// with outcome, and that rec, which recorded it alone, says so.
func requireFailedIn(t *testing.T, an transport.Answer, rec *transport.PhaseRecorder, phase transport.Phase, notSent bool, outcome policies.Outcome) {
	t.Helper()
	require.Equal(t, phase, an.Phase, "phase")
	require.Equal(t, notSent, an.NotSent, "not sent")
	require.Equal(t, outcome, an.Outcome, "outcome")
	rep := rec.Report()
	require.Equal(t, int64(1), rep.FailedIn[phase.String()])
	if notSent {
		require.Equal(t, int64(1), rep.NotSent)
	} else {
		require.Zero(t, rep.NotSent)
	}
}

// TestGRPCSendTracedPhases: the gRPC twin of TestSendTracedPhases. A call
// to a closed port or to a listener that accepts TCP and never completes
// the HTTP/2 handshake fails not sent, in the connect and tls phase; a
// call the server got, whose answer comes too late, fails in first_byte
// and is sent (unknown), whether the attempt's timeout or its
// first_byte_timeout ends it.
func TestGRPCSendTracedPhases(t *testing.T) {
	slow, got := grpcTestServer(t, 2*time.Second)
	closed := testnet.ClosedPort(t)
	for _, tc := range []struct {
		name      string
		addr      string
		timeout   time.Duration
		lim       policies.PhaseTimeouts
		aware     bool
		phase     transport.Phase
		notSent   bool
		outcome   policies.Outcome
		kind      transport.ErrorKind
		reachedBy int64
	}{
		{"closed port", closed, time.Second, policies.PhaseTimeouts{}, true, transport.PhaseConnect, true, policies.NotSent, transport.KindConnect, 0},
		{"closed port, edge without phase semantics", closed, time.Second, policies.PhaseTimeouts{}, false, transport.PhaseConnect, true, policies.Unavailable, transport.KindConnect, 0},
		{"handshake never completes, tls_timeout", silentListener(t), time.Second, policies.PhaseTimeouts{TLS: 100 * time.Millisecond}, true, transport.PhaseTLS, true, policies.NotSent, transport.KindTimeout, 0},
		{"handshake never completes, attempt timeout", silentListener(t), 150 * time.Millisecond, policies.PhaseTimeouts{}, true, transport.PhaseTLS, true, policies.Timeout, transport.KindTimeout, 0},
		{"sent write, attempt timeout", slow, 150 * time.Millisecond, policies.PhaseTimeouts{}, true, transport.PhaseFirstByte, false, policies.Timeout, transport.KindTimeout, 1},
		{"sent write, first_byte_timeout", slow, time.Second, policies.PhaseTimeouts{FirstByte: 100 * time.Millisecond}, true, transport.PhaseFirstByte, false, policies.Timeout, transport.KindTimeout, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := got.Load()
			gc, err := transport.NewGRPCClient(transport.GRPCClientOptions{})
			require.NoError(t, err)
			defer gc.Close()
			var rec transport.PhaseRecorder
			ctx, cancel := context.WithTimeout(context.Background(), tc.timeout)
			defer cancel()
			start := time.Now()
			an := gc.Send(ctx, &transport.Attempt{URL: grpcURL(tc.addr), Write: true, Number: 1}, transport.Sending{Phases: tc.lim, PhaseAware: tc.aware, Record: &rec})
			require.Less(t, time.Since(start), tc.timeout+time.Second, "the attempt is bounded")
			requireFailedIn(t, an, &rec, tc.phase, tc.notSent, tc.outcome)
			require.Equal(t, tc.kind, an.Kind, "kind")
			require.Zero(t, an.Status, "no status: the callee did not answer")
			require.Eventually(t, func() bool { return got.Load()-before == tc.reachedBy }, time.Second, 10*time.Millisecond)
			if !tc.notSent {
				require.Equal(t, int64(1), rec.Report().NewConnections, "the attempt opened the connection")
			}
		})
	}
}

// TestGRPCSendTracedAnswered: answered calls record every phase in order;
// the first opens the connection (cold: connect and handshake counted
// once), the next reuse it (warm).
func TestGRPCSendTracedAnswered(t *testing.T) {
	addr, got := grpcTestServer(t, 5*time.Millisecond)
	gc, err := transport.NewGRPCClient(transport.GRPCClientOptions{})
	require.NoError(t, err)
	defer gc.Close()
	var rec transport.PhaseRecorder
	const n = 5
	for i := range n {
		an := gc.Send(context.Background(), &transport.Attempt{URL: grpcURL(addr), Number: 1}, transport.Sending{Phases: policies.PhaseTimeouts{FirstByte: time.Second}, PhaseAware: true, Record: &rec})
		require.Equal(t, policies.OK, an.Outcome, "call %d", i)
		require.Equal(t, transport.PhaseNone, an.Phase)
	}
	require.Equal(t, int64(n), got.Load())
	rep := rec.Report()
	require.Equal(t, int64(1), rep.NewConnections)
	require.Equal(t, int64(1), rep.Handshakes)
	require.Equal(t, int64(n-1), rep.Reused)
	require.Zero(t, rep.NotSent)
	require.Empty(t, rep.FailedIn)
	for p, want := range map[string]int64{"pool_wait": n, "write": n, "first_byte": n, "read": n,
		"connect": 1, "tls": 1, "attempt_cold": 1, "attempt_warm": n - 1} {
		require.Equal(t, want, rep.Phases[p].Count, p)
	}
	// The server holds each call 5 ms before its headers: the first byte
	// waits at least that, the rest of each phase is loopback-quick.
	require.GreaterOrEqual(t, rep.Phases["first_byte"].MeanMs, 5.0)
	// The cold attempt's time includes the connection's opening.
	require.Greater(t, rep.Phases["attempt_cold"].MeanMs, rep.Phases["connect"].MeanMs+rep.Phases["tls"].MeanMs)
}

// TestGRPCStatusIsNoPhaseFailure: a status the callee sends
// (UNAVAILABLE, with its pushback) is an answer: no phase, sent.
func TestGRPCStatusIsNoPhaseFailure(t *testing.T) {
	p := &pushbackServer{pushback: "5"}
	srv := grpc.NewServer(grpc.ForceServerCodec(transport.RawCodec{}), grpc.UnknownServiceHandler(p.handle))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go srv.Serve(ln)
	defer srv.Stop()
	gc, err := transport.NewGRPCClient(transport.GRPCClientOptions{})
	require.NoError(t, err)
	defer gc.Close()
	var rec transport.PhaseRecorder
	an := gc.Send(context.Background(), &transport.Attempt{URL: grpcURL(ln.Addr().String())}, transport.Sending{Phases: policies.PhaseTimeouts{}, PhaseAware: true, Record: &rec})
	require.Equal(t, policies.Unavailable, an.Outcome)
	require.Equal(t, 5*time.Millisecond, an.RetryAfter)
	require.Equal(t, transport.PhaseNone, an.Phase)
	require.False(t, an.NotSent)
	require.Empty(t, rec.Report().FailedIn)
}

// TestGRPCTransparentRetry: stormsim's transparent retry over gRPC sends
// a not-sent write once more and fails definitely (nothing reached the
// callee: no duplicate possible), and never retries a write that was
// sent: the slow callee got it once, the call is unknown.
func TestGRPCTransparentRetry(t *testing.T) {
	slow, got := grpcTestServer(t, 2*time.Second)
	for _, tc := range []struct {
		name      string
		addr      string
		cfg       policies.EdgeConfig
		result    policies.CallResult
		outcome   policies.Outcome
		attempts  int
		reachedBy int64
	}{
		{"not sent: one transparent retry", testnet.ClosedPort(t),
			policies.EdgeConfig{Timeout: time.Second, Retry: policies.RetryConfig{Transparent: true}},
			policies.Failed, policies.NotSent, 2, 0},
		{"sent, first_byte_timeout: never retried", slow,
			policies.EdgeConfig{Timeout: time.Second, Phases: policies.PhaseTimeouts{FirstByte: 100 * time.Millisecond}, Retry: policies.RetryConfig{Transparent: true}},
			policies.Unknown, policies.Timeout, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := got.Load()
			gc, err := transport.NewGRPCClient(transport.GRPCClientOptions{})
			require.NoError(t, err)
			defer gc.Close()
			pe, err := policies.NewEdge(tc.cfg, rand.New(rand.NewPCG(1, 2)))
			require.NoError(t, err)
			ec := edge.NewEdgeClient(edge.EdgeConfig{Edge: pe, Transport: gc})
			res := ec.Do(context.Background(), policies.CallOptions{Write: true, Counted: true}, &transport.Attempt{URL: grpcURL(tc.addr), Write: true}, nil)
			require.Equal(t, tc.result, res.Result)
			require.Equal(t, tc.outcome, res.Outcome)
			require.Equal(t, tc.attempts, res.Attempts)
			time.Sleep(50 * time.Millisecond) // a retry, had there been one, would have arrived
			require.Equal(t, tc.reachedBy, got.Load()-before, "executions at the callee")
			rep := ec.Phases.Report()
			if tc.outcome == policies.NotSent {
				require.Equal(t, int64(tc.attempts), rep.NotSent)
				require.Equal(t, int64(tc.attempts), rep.FailedIn["connect"])
				require.Equal(t, int64(1), ec.Stats().TransparentRetries)
			} else {
				require.Zero(t, rep.NotSent)
				require.Equal(t, int64(1), rep.FailedIn["first_byte"])
				require.Zero(t, ec.Stats().TransparentRetries)
			}
		})
	}
}

// TestGRPCPoolTimeout: a server allowing one concurrent stream makes a
// second call wait for a stream slot, grpc-go's pool wait; pool_timeout
// fails it not sent.
func TestGRPCPoolTimeout(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	srv := grpc.NewServer(grpc.ForceServerCodec(transport.RawCodec{}), grpc.MaxConcurrentStreams(1), grpc.UnknownServiceHandler(func(_ any, stream grpc.ServerStream) error {
		var in transport.Frame
		if err := stream.RecvMsg(&in); err != nil {
			return err
		}
		entered <- struct{}{}
		select {
		case <-release:
		case <-stream.Context().Done():
		}
		return stream.SendMsg(&transport.Frame{})
	}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go srv.Serve(ln)
	defer srv.Stop()
	defer close(release)
	gc, err := transport.NewGRPCClient(transport.GRPCClientOptions{})
	require.NoError(t, err)
	defer gc.Close()
	var rec transport.PhaseRecorder
	go gc.Send(context.Background(), &transport.Attempt{URL: grpcURL(ln.Addr().String())}, transport.Sending{Phases: policies.PhaseTimeouts{}, PhaseAware: true, Record: &rec})
	select {
	case <-entered:
	case <-time.After(2 * time.Second):
		t.Fatal("the first call never reached the server")
	}
	an := gc.Send(context.Background(), &transport.Attempt{URL: grpcURL(ln.Addr().String())}, transport.Sending{Phases: policies.PhaseTimeouts{Pool: 50 * time.Millisecond}, PhaseAware: true, Record: &rec})
	require.Equal(t, transport.PhasePool, an.Phase)
	require.True(t, an.NotSent)
	require.Equal(t, policies.NotSent, an.Outcome)
}

// refusingServer speaks just enough HTTP/2 to serve unary gRPC calls with
// an empty reply, but refuses the first stream of each connection with
// RST_STREAM(REFUSED_STREAM): the server did not process it, which lets
// grpc-go retry it transparently. It counts the streams refused and the
// calls served (executions).
func refusingServer(t *testing.T) (addr string, refused, served *atomic.Int64) {
	t.Helper()
	refused, served = new(atomic.Int64), new(atomic.Int64)
	addr = listenLoopback(t, func(c net.Conn) { go serveRefusing(c, refused, served) })
	return addr, refused, served
}

func serveRefusing(c net.Conn, refused, served *atomic.Int64) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(c, make([]byte, len(http2.ClientPreface))); err != nil {
		return
	}
	fr := http2.NewFramer(c, c)
	if fr.WriteSettings() != nil {
		return
	}
	headers := func(id uint32, end bool, fields ...string) error {
		var b bytes.Buffer
		enc := hpack.NewEncoder(&b)
		for i := 0; i < len(fields); i += 2 {
			enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
		}
		return fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: b.Bytes(), EndHeaders: true, EndStream: end})
	}
	first := true
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				fr.WriteSettingsAck()
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				fr.WritePing(true, f.Data)
			}
		case *http2.HeadersFrame:
			if first {
				first = false
				refused.Add(1)
				fr.WriteRSTStream(f.StreamID, http2.ErrCodeRefusedStream)
			}
		case *http2.DataFrame:
			if !f.StreamEnded() || refused.Load() == 0 || f.StreamID == 1 {
				continue // the refused stream's message, or more to come
			}
			served.Add(1)
			if headers(f.StreamID, false, ":status", "200", "content-type", "application/grpc") != nil ||
				fr.WriteData(f.StreamID, false, make([]byte, 5)) != nil || // an empty message
				headers(f.StreamID, true, "grpc-status", "0") != nil {
				return
			}
		}
	}
}

// TestGRPCTransparentRetryByGRPCGo: a stream the server refused unprocessed
// is sent again by grpc-go itself (its transparent retry, even with
// retries disabled); the call's one attempt succeeds, the server served it
// once, and the retry beneath is counted apart, not as an attempt.
func TestGRPCTransparentRetryByGRPCGo(t *testing.T) {
	addr, refused, served := refusingServer(t)
	gc, err := transport.NewGRPCClient(transport.GRPCClientOptions{})
	require.NoError(t, err)
	defer gc.Close()
	pe, err := policies.NewEdge(policies.EdgeConfig{Timeout: 2 * time.Second, Retry: policies.RetryConfig{Transparent: true}}, rand.New(rand.NewPCG(1, 2)))
	require.NoError(t, err)
	ec := edge.NewEdgeClient(edge.EdgeConfig{Edge: pe, Transport: gc})
	res := ec.Do(context.Background(), policies.CallOptions{Write: true, Counted: true}, &transport.Attempt{URL: grpcURL(addr), Write: true}, nil)
	require.Equal(t, policies.OK, res.Outcome)
	require.Equal(t, 1, res.Attempts, "grpc-go's retry is no attempt of the policy")
	require.Equal(t, int64(1), refused.Load())
	require.Equal(t, int64(1), served.Load(), "executed once: no duplicate")
	rep := ec.Phases.Report()
	require.Equal(t, int64(1), rep.GRPCTransparentRetries)
	require.Zero(t, rep.NotSent)
	require.Zero(t, ec.Stats().TransparentRetries, "stormsim's own transparent retry did not run")
	require.Equal(t, int64(1), rep.NewConnections)
	require.Zero(t, rep.Reused, "the retry beneath went out on the connection the attempt opened: cold")
	for _, p := range []string{"pool_wait", "write", "first_byte", "read"} {
		require.Equal(t, int64(1), rep.Phases[p].Count, "%s: the call's phases, once", p)
	}
}

// TestGRPCPhasesInStatsAndMetrics: over gRPC, the driver's results, a
// service's /stats and its /metrics carry each edge's phases as over
// HTTP: every attempt through pool_wait and, answered, through
// first_byte; one connection opened per edge (HTTP/2 multiplexes).
func TestGRPCPhasesInStatsAndMetrics(t *testing.T) {
	cl := startGRPCScenario(t, "phases.yaml", `
name: phases
seed: 1
duration: 10s
workload: {entry: front, rate: 1}
services:
  - name: front
    workers: 8
    service_time: {dist: constant, value: 1ms}
    calls: [{to: back, timeout: 1s, first_byte_timeout: 500ms}]
  - name: back
    workers: 8
    service_time: {dist: constant, value: 2ms}
`)
	res, err := driver.Run(context.Background(), driver.Options{Target: cl.URLs["front"], Arrivals: loadtest.Constant(100, 300*time.Millisecond),
		Duration: 300 * time.Millisecond, Policy: topology.Call{Timeout: time.Second}})
	require.NoError(t, err)
	e := res.Summary.Edges[0]
	require.Positive(t, e.Attempts)
	require.NotNil(t, e.Phases, "the driver's gRPC attempts are traced")
	require.Equal(t, e.Attempts, e.Phases.Phases["pool_wait"].Count)
	require.Equal(t, e.Attempts, e.Phases.Phases["first_byte"].Count)
	require.Equal(t, int64(1), e.Phases.NewConnections)
	require.Equal(t, e.Attempts-1, e.Phases.Reused)

	addr, _, err := transport.ParseGRPCTarget(cl.URLs["front"])
	require.NoError(t, err)
	root := "http://" + addr
	fs := getStats(t, root)
	require.Len(t, fs.Edges, 1)
	fe := fs.Edges[0]
	require.Equal(t, e.Attempts, fe.Calls, "front called back once per request")
	require.NotNil(t, fe.Phases)
	require.Equal(t, fe.Attempts, fe.Phases.Phases["pool_wait"].Count)
	require.Equal(t, int64(1), fe.Phases.NewConnections)
	// back holds each call 2 ms before answering.
	require.GreaterOrEqual(t, fe.Phases.Phases["first_byte"].MeanMs, 2.0)
	fm := scrape(t, root)
	for key, want := range map[string]float64{
		`stormsim_edge_phase_seconds_count{edge="back",phase="pool_wait",service="front"}`:  float64(fe.Attempts),
		`stormsim_edge_phase_seconds_count{edge="back",phase="first_byte",service="front"}`: float64(fe.Phases.Phases["first_byte"].Count),
		`stormsim_edge_phase_seconds_count{edge="back",phase="connect",service="front"}`:    1,
		`stormsim_edge_not_sent_total{edge="back",service="front"}`:                         0,
		`stormsim_edge_grpc_transparent_retries_total{edge="back",service="front"}`:         0,
	} {
		got, ok := fm[key]
		require.True(t, ok, "/metrics %s missing", key)
		require.Equal(t, want, got, key)
	}
}

// TestInterceptorPhases: the interceptor's attempts on a channel dialed
// with GRPCDialOptions are traced and bounded as the driver's are: a
// closed port fails not sent in connect (and the transparent retry sends
// it once more), a slow callee past first_byte_timeout is a sent timeout
// never retried transparently. On a channel dialed without them nothing
// is traced, so nothing is claimed not sent.
func TestInterceptorPhases(t *testing.T) {
	slow, got := grpcTestServer(t, 2*time.Second)
	for _, tc := range []struct {
		name             string
		addr             string
		traced           bool
		code             codes.Code
		attempts         int64
		notSent, reached int64
		failedIn         string
	}{
		{"closed port", testnet.ClosedPort(t), true, codes.Unavailable, 2, 2, 0, "connect"},
		{"slow callee, first_byte_timeout", slow, true, codes.DeadlineExceeded, 1, 0, 1, "first_byte"},
		{"slow callee, channel not traced: the attempt timeout", slow, false, codes.DeadlineExceeded, 1, 0, 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := got.Load()
			pe, err := policies.NewEdge(policies.EdgeConfig{Timeout: 300 * time.Millisecond,
				Phases: policies.PhaseTimeouts{FirstByte: 100 * time.Millisecond}, Retry: policies.RetryConfig{Transparent: true}}, rand.New(rand.NewPCG(1, 2)))
			require.NoError(t, err)
			ec := edge.NewEdgeClient(edge.EdgeConfig{Edge: pe})
			opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithDisableRetry(),
				grpc.WithUnaryInterceptor(ec.UnaryClientInterceptor(false)), grpc.WithDefaultCallOptions(grpc.ForceCodec(transport.RawCodec{}))}
			if tc.traced {
				opts = append(opts, ec.GRPCDialOptions()...)
			}
			cc, err := grpc.NewClient("passthrough:///"+tc.addr, opts...)
			require.NoError(t, err)
			defer cc.Close()
			md := metadata.Pairs(transport.MetadataWrite, "1")
			err = cc.Invoke(metadata.NewOutgoingContext(context.Background(), md), "/pkg.S/M", &transport.Frame{}, new(transport.Frame))
			require.Equal(t, tc.code, status.Code(err), "%v", err)
			require.Equal(t, tc.attempts, ec.Stats().Attempts)
			time.Sleep(50 * time.Millisecond) // a retry, had there been one, would have arrived
			require.Equal(t, tc.reached, got.Load()-before, "executions at the callee")
			rep := ec.Phases.Report()
			if !tc.traced {
				require.Nil(t, rep, "an untraced channel reports no phases")
				return
			}
			require.NotNil(t, rep)
			require.Equal(t, tc.notSent, rep.NotSent)
			require.Equal(t, tc.attempts, rep.FailedIn[tc.failedIn])
		})
	}
}
