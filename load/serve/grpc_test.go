package serve

import (
	"bufio"
	"context"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	grpcpeer "google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/stormsim/stormsim/internal/memnet"
	"github.com/stormsim/stormsim/load/edge"
	"github.com/stormsim/stormsim/load/transport"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/policies"
	"github.com/stormsim/stormsim/sim"
	"github.com/stormsim/stormsim/topology"
)

// startGRPCScenario parses yaml and serves its services over gRPC on
// loopback until the test ends.
func startGRPCScenario(t *testing.T, name, yaml string) *Cluster {
	t.Helper()
	return startScenarioWith(t, name, yaml, ClusterOptions{Protocol: ProtocolGRPC})
}

// rawInvoke makes one unary call to a service's gRPC URL with md, and
// returns its trailer and error.
func rawInvoke(t *testing.T, ctx context.Context, target string, body []byte, md metadata.MD) (metadata.MD, error) {
	t.Helper()
	addr, method, err := transport.ParseGRPCTarget(target)
	if err != nil {
		t.Fatal(err)
	}
	cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithDisableRetry())
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	var trailer metadata.MD
	err = cc.Invoke(metadata.NewOutgoingContext(ctx, md), method, &transport.Frame{Bytes: body}, new(transport.Frame), grpc.Trailer(&trailer), grpc.ForceCodec(transport.RawCodec{}))
	return trailer, err
}

func TestParseGRPCTarget(t *testing.T) {
	for _, tc := range []struct {
		in, addr, method string
		ok               bool
	}{
		{"grpc://127.0.0.1:9000/pkg.Service/Method", "127.0.0.1:9000", "/pkg.Service/Method", true},
		{"grpc://localhost:1/stormsim.v1.Emulated/Call", "localhost:1", "/stormsim.v1.Emulated/Call", true},
		{"grpc://127.0.0.1:9000/pkg.Service", "", "", false},
		{"grpc://127.0.0.1:9000/pkg.Service/Method/x", "", "", false},
		{"grpc://127.0.0.1:9000//Method", "", "", false},
		{"http://127.0.0.1:9000/pkg.Service/Method", "", "", false},
		{"grpc:///pkg.Service/Method", "", "", false},
		{"grpc://127.0.0.1:9000/pkg.Service/Method?x=1", "", "", false},
	} {
		addr, method, err := transport.ParseGRPCTarget(tc.in)
		if (err == nil) != tc.ok || addr != tc.addr || method != tc.method {
			t.Errorf("ParseGRPCTarget(%q) = %q, %q, %v; want %q, %q, ok %v", tc.in, addr, method, err, tc.addr, tc.method, tc.ok)
		}
	}
}

// TestGRPCServeStatusCodes: each answer the callee machine decides reaches
// a gRPC caller as its status code, with A6's pushback trailer: OK,
// INTERNAL, UNAVAILABLE, DEADLINE_EXCEEDED (a downstream timeout), ABORTED
// (an idempotency conflict), INVALID_ARGUMENT and RESOURCE_EXHAUSTED with a
// pushback or a don't-retry.
func TestGRPCServeStatusCodes(t *testing.T) {
	cl := startGRPCScenario(t, "codes.yaml", `
name: codes
seed: 1
duration: 10s
workload: {entry: internal, rate: 1}
services:
  - name: internal
    workers: 4
    error_rate: 1
    service_time: {dist: constant, value: 1ms}
  - name: unavailable
    workers: 4
    error_rate: 1
    error_class: unavailable
    service_time: {dist: constant, value: 1ms}
  - name: full
    workers: 1
    queue: 0
    service_time: {dist: constant, value: 300ms}
    overload: {pushback: {retry_after: 250ms}}
  - name: fulldont
    workers: 1
    queue: 0
    service_time: {dist: constant, value: 300ms}
    overload: {pushback: {dont_retry: true}}
  - name: ok
    workers: 4
    service_time: {dist: constant, value: 1ms}
  - name: caller
    workers: 4
    service_time: {dist: constant, value: 1ms}
    calls: [{to: slow, timeout: 50ms}]
  - name: slow
    workers: 4
    service_time: {dist: constant, value: 300ms}
  - name: store
    workers: 4
    commits: true
    idempotency: {retention: 1m}
    service_time: {dist: constant, value: 1ms}
`)
	ctx := context.Background()
	call := func(svc string, md metadata.MD) (codes.Code, metadata.MD) {
		tr, err := rawInvoke(t, ctx, cl.URLs[svc], []byte("x"), md)
		return status.Code(err), tr
	}
	if c, _ := call("ok", nil); c != codes.OK {
		t.Errorf("ok: %v, want OK", c)
	}
	if c, tr := call("internal", nil); c != codes.Internal || transport.MetadataValue(tr, transport.MetadataOutcome) != "error" {
		t.Errorf("error_rate 1: %v %v, want INTERNAL with outcome error", c, tr)
	}
	if c, _ := call("unavailable", nil); c != codes.Unavailable {
		t.Errorf("error_class unavailable: %v, want UNAVAILABLE", c)
	}
	if c, tr := call("caller", nil); c != codes.DeadlineExceeded || transport.MetadataValue(tr, transport.MetadataOutcome) != "timeout" {
		t.Errorf("downstream timeout: %v %v, want DEADLINE_EXCEEDED with outcome timeout", c, tr)
	}
	write := metadata.Pairs(transport.MetadataIdempotencyKey, "k1", transport.MetadataWrite, "1", transport.MetadataRequestID, "r1")
	if c, _ := call("store", write); c != codes.OK {
		t.Errorf("first write: %v, want OK", c)
	}
	// The same key with another body is a conflict.
	if tr, err := rawInvoke(t, ctx, cl.URLs["store"], []byte("other"), write); status.Code(err) != codes.Aborted || transport.MetadataValue(tr, transport.MetadataOutcome) != "conflict" {
		t.Errorf("key reused with another body: %v %v, want ABORTED with outcome conflict", err, tr)
	}
	long := metadata.Pairs(transport.MetadataIdempotencyKey, strings.Repeat("k", maxKeyLen+1), transport.MetadataWrite, "1")
	if c, tr := call("ok", long); c != codes.InvalidArgument || transport.MetadataValue(tr, transport.MetadataPushback) != "-1" {
		t.Errorf("oversized key: %v %v, want INVALID_ARGUMENT with pushback -1", c, tr)
	}
	for _, tc := range []struct{ svc, pushback string }{{"full", "250"}, {"fulldont", "-1"}} {
		// One attempt holds the only worker; the next finds no room.
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			call(tc.svc, nil)
		}()
		deadline := time.Now().Add(5 * time.Second)
		for cl.Service(tc.svc).Stats().Busy == 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		c, tr := call(tc.svc, nil)
		if c != codes.ResourceExhausted || transport.MetadataValue(tr, transport.MetadataPushback) != tc.pushback {
			t.Errorf("%s full: %v, pushback %q; want RESOURCE_EXHAUSTED, %s", tc.svc, c, transport.MetadataValue(tr, transport.MetadataPushback), tc.pushback)
		}
		wg.Wait()
	}
}

// pushbackServer answers the first attempt of every call with
// RESOURCE_EXHAUSTED and grpc-retry-pushback-ms: pushback, the next ones
// OK, and records when attempts arrive.
type pushbackServer struct {
	pushback string
	mu       sync.Mutex
	times    []time.Time
}

func (p *pushbackServer) handle(_ any, stream grpc.ServerStream) error {
	var in transport.Frame
	if err := stream.RecvMsg(&in); err != nil {
		return err
	}
	p.mu.Lock()
	p.times = append(p.times, time.Now())
	n := len(p.times)
	p.mu.Unlock()
	if n == 1 {
		stream.SetTrailer(metadata.Pairs(transport.MetadataPushback, p.pushback))
		return status.Error(codes.ResourceExhausted, "busy")
	}
	return stream.SendMsg(&transport.Frame{})
}

// TestGRPCPushback: a callee's grpc-retry-pushback-ms is honoured by
// stormsim's call policy driving gRPC attempts (its own retry, grpc-go's
// disabled), by the same policy as a grpc-go client interceptor, and by
// grpc-go's own retry from a service config alike: the retry waits at
// least the pushback although the backoff would retry at once, and a
// negative pushback stops the retries (gRFC A6).
func TestGRPCPushback(t *testing.T) {
	const serviceConfig = `{"methodConfig": [{"name": [{"service": "pkg.S"}],
  "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.001s", "maxBackoff": "0.001s",
    "backoffMultiplier": 1, "retryableStatusCodes": ["RESOURCE_EXHAUSTED"]}}]}`
	for _, tc := range []struct {
		name, pushback, via string
		attempts            int
		ok                  bool
	}{
		{"stormsim-300ms", "300", "stormsim", 2, true},
		{"stormsim-negative", "-1", "stormsim", 1, false},
		{"interceptor-300ms", "300", "interceptor", 2, true},
		{"interceptor-negative", "-1", "interceptor", 1, false},
		{"grpc-go-300ms", "300", "grpc-go", 2, true},
		{"grpc-go-negative", "-1", "grpc-go", 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &pushbackServer{pushback: tc.pushback}
			srv := grpc.NewServer(grpc.ForceServerCodec(transport.RawCodec{}), grpc.UnknownServiceHandler(p.handle))
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			go srv.Serve(ln)
			defer srv.Stop()
			var gopt transport.GRPCClientOptions
			policy := topology.Call{HonorPushback: true, Retry: policies.RetryConfig{MaxAttempts: 3, On: []policies.RetryClass{"unavailable"}}}
			if tc.via == "grpc-go" {
				gopt.ServiceConfig = serviceConfig
				policy = NativeGRPCPolicy(policy)
			}
			pe, err := policies.NewEdge(policy.EdgeConfig(), rand.New(rand.NewPCG(1, 2)))
			if err != nil {
				t.Fatal(err)
			}
			ec := edge.NewEdgeClient(edge.EdgeConfig{Edge: pe})
			var ok bool
			if tc.via == "interceptor" {
				cc, err := grpc.NewClient("passthrough:///"+ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
					grpc.WithDisableRetry(), grpc.WithUnaryInterceptor(ec.UnaryClientInterceptor(false)))
				if err != nil {
					t.Fatal(err)
				}
				defer cc.Close()
				err = cc.Invoke(context.Background(), "/pkg.S/M", &emptypb.Empty{}, &emptypb.Empty{})
				code := status.Code(err)
				ok = err == nil
				if !ok && code != codes.ResourceExhausted {
					t.Errorf("the call failed with %v, want the last attempt's RESOURCE_EXHAUSTED", err)
				}
			} else {
				gc, err := transport.NewGRPCClient(gopt)
				if err != nil {
					t.Fatal(err)
				}
				defer gc.Close()
				ec = edge.NewEdgeClient(edge.EdgeConfig{Edge: pe, Transport: gc})
				res := ec.Do(context.Background(), policies.CallOptions{}, &transport.Attempt{URL: "grpc://" + ln.Addr().String() + "/pkg.S/M"}, nil)
				ok = res.Outcome == policies.OK
			}
			p.mu.Lock()
			defer p.mu.Unlock()
			if len(p.times) != tc.attempts || ok != tc.ok {
				t.Fatalf("%d attempts, ok %v; want %d, ok %v", len(p.times), ok, tc.attempts, tc.ok)
			}
			if tc.attempts == 2 {
				if gap := p.times[1].Sub(p.times[0]); gap < 300*time.Millisecond {
					t.Errorf("retry %v after the pushback of 300ms: not honoured", gap)
				}
			}
		})
	}
}

// TestGRPCDeadlinePropagation: the remaining deadline a caller sends
// arrives as the callee's grpc-timeout, and reject_expired refuses work
// whose deadline passed while it queued. The one worker is busy for
// 200 ms; an attempt queued behind it with 700 ms left is served (it ends
// at 400 ms), one with 100 ms left times out at its caller at 100 ms and
// is rejected as expired when the worker frees at 200 ms, its work never
// done. On the bubble's clock (the services, the client and the HTTP/2
// between them on an in-memory network) each of these instants is exact.
func TestGRPCDeadlinePropagation(t *testing.T) {
	synctest.Test(t, testGRPCDeadlinePropagation)
}

func testGRPCDeadlinePropagation(t *testing.T) {
	nw := new(memnet.Network)
	cl := startScenarioWith(t, "deadline.yaml", `
name: deadline
seed: 1
duration: 10s
workload: {entry: db, rate: 1}
services:
  - name: db
    workers: 1
    queue: 10
    reject_expired: true
    service_time: {dist: constant, value: 200ms}
`, ClusterOptions{Protocol: ProtocolGRPC, network: nw})
	gc, err := transport.NewGRPCClient(transport.GRPCClientOptions{Dial: nw.DialContext})
	if err != nil {
		t.Fatal(err)
	}
	defer gc.Close()
	db := cl.Service("db")
	for _, tc := range []struct {
		remaining time.Duration
		expired   int64
		want      policies.Outcome
		took      time.Duration // from the late attempt's send to its answer
	}{
		{700 * time.Millisecond, 0, policies.OK, 400 * time.Millisecond},
		{100 * time.Millisecond, 1, policies.Timeout, 100 * time.Millisecond},
	} {
		before := db.Stats().All
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			gc.Send(context.Background(), &transport.Attempt{URL: cl.URLs["db"], RequestID: "busy"}, transport.Sending{})
		}()
		synctest.Wait() // the busy attempt holds the worker
		if db.Stats().Busy != 1 {
			t.Fatalf("%v left: the first attempt did not take the worker", tc.remaining)
		}
		start := time.Now()
		an := gc.Send(context.Background(), &transport.Attempt{URL: cl.URLs["db"], RequestID: "late", Remaining: tc.remaining}, transport.Sending{})
		took := time.Since(start)
		wg.Wait()
		synctest.Wait() // the expired attempt is refused when the worker frees, after its caller gave up
		after := db.Stats().All
		if an.Outcome != tc.want || after.Expired-before.Expired != tc.expired || took != tc.took {
			t.Errorf("%v left: outcome %v after %v, %d expired at the callee; want %v after %v, %d",
				tc.remaining, an.Outcome, took, after.Expired-before.Expired, tc.want, tc.took, tc.expired)
		}
		if tc.expired == 1 && after.Succeeded-before.Succeeded != 1 {
			t.Errorf("%v left: %d succeeded, want only the busy one: expired work was done", tc.remaining, after.Succeeded-before.Succeeded)
		}
	}
}

// TestGRPCScenarioUnloaded: a three-service chain over gRPC on loopback
// holds its rate (constant arrivals: exactly rate × duration offered,
// dispatched on time) and every request succeeds against targets far from
// saturation (ρ ≤ 0.02), each service seeing exactly one attempt per
// request.
func TestGRPCScenarioUnloaded(t *testing.T) {
	sc, err := topology.Parse("unloaded.yaml", []byte(`
name: unloaded
seed: 1
duration: 2s
workload:
  entry: gw
  arrival: constant
  rate: 200
  deadline: 1s
  client: {timeout: 500ms, propagate_deadline: true}
services:
  - name: gw
    workers: 64
    service_time: {dist: constant, value: 1ms}
    calls: [{to: api, timeout: 300ms, propagate_deadline: true}]
  - name: api
    workers: 64
    service_time: {dist: constant, value: 2ms}
    calls: [{to: db, timeout: 200ms, propagate_deadline: true}]
  - name: db
    workers: 64
    reject_expired: true
    service_time: {dist: constant, value: 5ms}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	// 64 senders, as the CLI gives a run (--workers): they do not make 64
	// connections over gRPC.
	s := runInMemory(t, sc, ScenarioOptions{Protocol: ProtocolGRPC, Workers: 64}).Summary
	if !strings.HasPrefix(s.Load.Target, "grpc://") {
		t.Fatalf("target %q: not gRPC", s.Load.Target)
	}
	if s.Requests.Offered != 400 || s.Requests.Succeeded != 400 {
		t.Errorf("offered %d, succeeded %d; want 400 of 400", s.Requests.Offered, s.Requests.Succeeded)
	}
	if s.Load.Unsent != 0 || math.Abs(s.Load.OfferedRPS-200) > 200*0.02 {
		t.Errorf("offered %.1f/s with %d unsent, want 200/s (±2%%)", s.Load.OfferedRPS, s.Load.Unsent)
	}
	for _, svc := range s.Services {
		if svc.Attempts != 400 || svc.Succeeded != 400 {
			t.Errorf("%s: %d attempts, %d succeeded; want 400, 400", svc.Name, svc.Attempts, svc.Succeeded)
		}
	}
	// HTTP/2 multiplexes: the driver and each caller open one connection
	// to their callee, and every other attempt reuses it (warm).
	if s.Load.Connections != 1 {
		t.Errorf("the driver ran with %d connections, want 1", s.Load.Connections)
	}
	for _, e := range s.Edges {
		if e.Phases == nil || e.Phases.NewConnections != 1 || e.Phases.Reused != e.Attempts-1 {
			t.Errorf("%s->%s: phases %+v, want 1 new connection and %d reused", e.From, e.To, e.Phases, e.Attempts-1)
		}
	}
}

// TestFidelityGRPCVersusSimulated: the fidelity scenarios of
// TestFidelityRealVersusSimulated served and driven over gRPC agree with
// the simulator as they do over HTTP: goodput and amplification per
// service within 15 % for the chain, goodput, attempts per service and
// duplicates within 4 standard deviations (the Poisson bound there) for
// the writes with idempotency keys.
func TestFidelityGRPCVersusSimulated(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 2 × 4 s of real traffic: runs without -short (make test)")
	}
	for _, tc := range []struct {
		name    string
		yaml    string
		compare func(t *testing.T, simRes, realRes *metrics.Result)
	}{
		{"chain", fidelityScenario, compare},
		{"writes-keys", fidelityWritesScenario, compareCounts},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := topology.Parse("fidelity.yaml", []byte(tc.yaml), nil)
			if err != nil {
				t.Fatal(err)
			}
			simRes, err := sim.Run(context.Background(), sc, sim.Options{})
			if err != nil {
				t.Fatal(err)
			}
			realRes := runInMemory(t, sc, ScenarioOptions{Protocol: ProtocolGRPC})
			if !strings.HasPrefix(realRes.Summary.Load.Target, "grpc://") {
				t.Fatalf("target %q: not gRPC", realRes.Summary.Load.Target)
			}
			tc.compare(t, simRes, realRes)
		})
	}
}

// nativeScenario's client retries from a pasted gRPC service config:
// three attempts on UNAVAILABLE, and retry throttling (10 tokens, a
// failure costs one, a success earns half of one) that the 30 % injected
// UNAVAILABLE answers keep near its threshold (+0.05 an attempt on
// average), so both the retry policy and the throttle shape the attempts.
const nativeScenario = `
name: native
seed: 5
duration: 4s
warmup: 1s
workload:
  entry: api
  arrival: constant
  rate: 100
  deadline: 2s
  client:
    grpc_service_config: grpc-native.json
    propagate_deadline: true
services:
  - name: api
    workers: 64
    error_rate: 0.3
    error_class: unavailable
    service_time: {dist: constant, value: 2ms}
`

// TestGRPCNativeRetryVersusSimulated runs grpc-go's own retry and
// throttling from the service config against serve, and compares attempts
// and goodput with the simulator's reading of the same config. Each run
// is an independent draw: a call of n counted ones makes X − 1 retries,
// X − 1 = 0, 1, 2 with probability 1 − p, p(1 − p), p² (p = 0.3), so
// attempts have variance n·(p + 3p² − (p + p²)²) ≈ 0.418 n, and the calls
// failing every attempt are binomial (n, p³); the throttle only lowers
// both. The two runs must agree within 4 standard deviations of their
// difference (√2 × one run's): ±63 attempts and ±16 successes at n = 300,
// where grpc-go not retrying would differ by ≈ 100 and ≈ 80.
func TestGRPCNativeRetryVersusSimulated(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 4 s of real traffic: runs without -short (make test)")
	}
	sc, err := topology.Parse("testdata/native.yaml", []byte(nativeScenario), nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ClientServiceConfig(sc)
	if err != nil {
		t.Fatal(err)
	}
	simRes, err := sim.Run(context.Background(), sc, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if a := simRes.Summary.Services[0].Amplification; a < 1.2 {
		t.Fatalf("simulated amplification %.2f: the scenario retries too little to test anything", a)
	}
	realRes := runInMemory(t, sc, ScenarioOptions{Protocol: ProtocolGRPC, GRPCServiceConfig: cfg})
	if e := realRes.Summary.Edges[0]; e.Retries != 0 {
		t.Errorf("stormsim's client policy retried %d times beside grpc-go's", e.Retries)
	}
	const p = 0.3
	n := float64(simRes.Summary.Requests.Offered)
	agree := func(what string, s, r, variance float64) {
		t.Helper()
		tol := 4 * math.Sqrt(2*variance)
		if d := math.Abs(r - s); d > tol {
			t.Errorf("%s: simulated %.0f, grpc-go %.0f: %.0f apart, want ≤ %.0f (4σ)", what, s, r, d, tol)
		} else {
			t.Logf("%s: simulated %.0f, grpc-go %.0f (4σ = %.0f)", what, s, r, tol)
		}
	}
	agree("attempts", float64(simRes.Summary.Services[0].Attempts), float64(realRes.Summary.Services[0].Attempts), n*(p+3*p*p-(p+p*p)*(p+p*p)))
	agree("succeeded", float64(simRes.Summary.Requests.Succeeded), float64(realRes.Summary.Requests.Succeeded), n*p*p*p*(1-p*p*p))
}

// TestClassifyGRPC: status codes and trailers read as outcomes, pushback
// and transport failures.
func TestClassifyGRPC(t *testing.T) {
	st := func(c codes.Code, msg string) error { return status.Error(c, msg) }
	for _, tc := range []struct {
		name string
		err  error
		md   metadata.MD
		want transport.Answer
	}{
		{"ok", nil, nil, transport.Answer{Outcome: policies.OK, Status: 200}},
		{"unavailable", st(codes.Unavailable, "busy"), metadata.Pairs(transport.MetadataOutcome, "unavailable"), transport.Answer{Outcome: policies.Unavailable, Status: 503}},
		{"pushback ms", st(codes.ResourceExhausted, "busy"), metadata.Pairs(transport.MetadataPushback, "250"), transport.Answer{Outcome: policies.Unavailable, Status: 429, RetryAfter: 250 * time.Millisecond}},
		{"exact pushback first", st(codes.ResourceExhausted, ""), metadata.Pairs(transport.MetadataPushback, "251", transport.MetadataRetryAfter, "250.5", transport.MetadataOutcome, "unavailable"), transport.Answer{Outcome: policies.Unavailable, Status: 429, RetryAfter: 250500 * time.Microsecond}},
		{"negative pushback", st(codes.ResourceExhausted, ""), metadata.Pairs(transport.MetadataPushback, "-1"), transport.Answer{Outcome: policies.Unavailable, Status: 429, DontRetry: true}},
		{"unparseable pushback", st(codes.Unavailable, "x"), metadata.Pairs(transport.MetadataPushback, "soon"), transport.Answer{Outcome: policies.Unavailable, Status: 503, DontRetry: true}},
		{"deadline from the callee", st(codes.DeadlineExceeded, "expired"), metadata.Pairs(transport.MetadataOutcome, "timeout"), transport.Answer{Outcome: policies.Timeout, Status: 504}},
		{"deadline at the caller", st(codes.DeadlineExceeded, "context deadline exceeded"), nil, transport.Answer{Outcome: policies.Timeout, Kind: transport.KindTimeout}},
		{"in progress", st(codes.Aborted, ""), metadata.Pairs(transport.MetadataOutcome, "in_progress", transport.MetadataRetryAfter, "100"), transport.Answer{Outcome: policies.InProgress, Status: transport.StatusInProgress, RetryAfter: 100 * time.Millisecond}},
		{"conflict", st(codes.Aborted, ""), nil, transport.Answer{Outcome: policies.Conflict, Status: 409}},
		{"internal", st(codes.Internal, "boom"), nil, transport.Answer{Outcome: policies.Error, Status: 500}},
		{"invalid", st(codes.InvalidArgument, "key"), metadata.Pairs(transport.MetadataOutcome, "error", transport.MetadataPushback, "-1"), transport.Answer{Outcome: policies.Error, Status: 400, DontRetry: true}},
		{"refused", st(codes.Unavailable, `connection error: desc = "transport: Error while dialing: dial tcp 127.0.0.1:1: connect: connection refused"`), nil, transport.Answer{Outcome: policies.Unavailable, Kind: transport.KindConnect}},
		{"reset", st(codes.Unavailable, "error reading from server: EOF"), nil, transport.Answer{Outcome: policies.Timeout, Kind: transport.KindReset}},
	} {
		if got := transport.ClassifyGRPC(tc.err, tc.md); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func FuzzParseGRPCTarget(f *testing.F) {
	for _, s := range []string{"grpc://127.0.0.1:1/a.B/C", "grpc://h/x/y/z", "grpc:///a/b", "http://h/a/b", "grpc://h/a/b?q", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		addr, method, err := transport.ParseGRPCTarget(s)
		if err != nil {
			return
		}
		// A parsed target names a host and a /service/method with two
		// non-empty parts, and parses again to the same.
		if addr == "" || strings.Count(method, "/") != 2 || strings.Contains(method, "//") || strings.HasSuffix(method, "/") {
			t.Fatalf("%q: addr %q, method %q", s, addr, method)
		}
		a2, m2, err := transport.ParseGRPCTarget("grpc://" + addr + method)
		if err != nil || a2 != addr || m2 != method {
			t.Fatalf("%q: reparsed as %q %q %v", s, a2, m2, err)
		}
	})
}

// TestGRPCClientConnections: attempts to one address take Connections
// connections in turn; the server sees that many peers.
func TestGRPCClientConnections(t *testing.T) {
	var mu sync.Mutex
	peers := map[string]int{}
	srv := grpc.NewServer(grpc.ForceServerCodec(transport.RawCodec{}), grpc.UnknownServiceHandler(func(_ any, stream grpc.ServerStream) error {
		var in transport.Frame
		if err := stream.RecvMsg(&in); err != nil {
			return err
		}
		if p, ok := grpcpeer.FromContext(stream.Context()); ok {
			mu.Lock()
			peers[p.Addr.String()]++
			mu.Unlock()
		}
		return stream.SendMsg(&transport.Frame{})
	}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Stop()
	gc, err := transport.NewGRPCClient(transport.GRPCClientOptions{Connections: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer gc.Close()
	for range 6 {
		if a := gc.Send(context.Background(), &transport.Attempt{URL: "grpc://" + ln.Addr().String() + "/a.B/C"}, transport.Sending{}); a.Outcome != policies.OK {
			t.Fatalf("attempt: %+v", a)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(peers) != 3 {
		t.Errorf("calls came over %d connections (%v), want 3, two calls each", len(peers), peers)
	}
	for p, n := range peers {
		if n != 2 {
			t.Errorf("connection %s carried %d calls, want 2", p, n)
		}
	}
}

func TestCheckGRPCServiceConfig(t *testing.T) {
	for _, tc := range []struct{ cfg, err string }{
		{`{"methodConfig": [{"name": [{}], "retryPolicy": {"maxAttempts": 2, "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}`, ""},
		{"{\n  \"methodConfig\": [\n    {\"name\": [{}],,}\n  ]\n}", "sc.json:3: "},
		{`{"methodConfig": [{"name": [{}], "retryPolicy": {"maxAttempts": 2}}]}`, "sc.json: "},
	} {
		err := transport.CheckGRPCServiceConfig("sc.json", tc.cfg)
		if (tc.err == "") != (err == nil) || err != nil && !strings.HasPrefix(err.Error(), tc.err) {
			t.Errorf("%s: %v, want an error starting %q", tc.cfg, err, tc.err)
		}
	}
}

// TestUnaryClientInterceptor: the interceptor numbers attempts in
// x-stormsim-attempt, sends the remaining deadline as grpc-timeout only
// when asked to, and under a hedging policy copies the winning attempt's
// message into the reply: here the first attempt hangs for 300 ms, the
// hedge sent 20 ms later answers at once. On the bubble's clock, over an
// in-memory network, the first attempt reaches the server at 0 and the
// hedge at 20 ms exactly (on real sockets a busy machine delayed the first
// connection past the hedge, which arrived first).
func TestUnaryClientInterceptor(t *testing.T) { synctest.Test(t, testUnaryClientInterceptor) }

func testUnaryClientInterceptor(t *testing.T) {
	type seen struct {
		attempt  string
		deadline time.Duration // 0: none
	}
	var mu sync.Mutex
	var got []seen
	srv := grpc.NewServer(grpc.ForceServerCodec(transport.RawCodec{}), grpc.UnknownServiceHandler(func(_ any, stream grpc.ServerStream) error {
		var in transport.Frame
		if err := stream.RecvMsg(&in); err != nil {
			return err
		}
		md, _ := metadata.FromIncomingContext(stream.Context())
		s := seen{attempt: transport.MetadataValue(md, transport.MetadataAttempt)}
		if dl, ok := stream.Context().Deadline(); ok {
			s.deadline = time.Until(dl)
		}
		mu.Lock()
		got = append(got, s)
		mu.Unlock()
		if s.attempt == "1" {
			select {
			case <-time.After(300 * time.Millisecond):
			case <-stream.Context().Done():
			}
		}
		out, err := proto.Marshal(structpb.NewStringValue("attempt " + s.attempt))
		if err != nil {
			return err
		}
		return stream.SendMsg(&transport.Frame{Bytes: out})
	}))
	var nw memnet.Network
	ln, err := nw.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Stop()
	dial := grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) { return nw.DialContext(ctx, "tcp", addr) })
	for _, propagate := range []bool{false, true} {
		mu.Lock()
		got = nil
		mu.Unlock()
		policy := topology.Call{Hedge: &policies.HedgeConfig{Delay: 20 * time.Millisecond, MaxAttempts: 2}}
		pe, err := policies.NewEdge(policy.EdgeConfig(), rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			t.Fatal(err)
		}
		ec := edge.NewEdgeClient(edge.EdgeConfig{Edge: pe})
		cc, err := grpc.NewClient("passthrough:///"+ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDisableRetry(), grpc.WithUnaryInterceptor(ec.UnaryClientInterceptor(propagate)), dial)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		var reply structpb.Value
		err = cc.Invoke(ctx, "/pkg.S/M", &emptypb.Empty{}, &reply)
		cancel()
		cc.Close()
		if err != nil || reply.GetStringValue() != "attempt 2" {
			t.Fatalf("propagate %v: reply %q, error %v; want the hedge's \"attempt 2\"", propagate, reply.GetStringValue(), err)
		}
		mu.Lock()
		if len(got) != 2 || got[0].attempt != "1" || got[1].attempt != "2" {
			t.Errorf("propagate %v: the server saw %+v, want attempts 1 and 2", propagate, got)
		}
		for _, s := range got {
			// The call's deadline is 2 s; the hedge leaves 20 ms later.
			want := map[string]time.Duration{"1": 2 * time.Second, "2": 1980 * time.Millisecond}[s.attempt]
			if !propagate {
				want = 0
			}
			if s.deadline != want {
				t.Errorf("propagate %v: attempt %s saw a deadline of %v, want %v", propagate, s.attempt, s.deadline, want)
			}
		}
		mu.Unlock()
	}
}

// TestGRPCServiceSharesItsPortWithHTTP: a gRPC service's port also
// answers HTTP/1: /stats counts the gRPC attempts, and HTTP attempts are
// served by the same machine.
func TestGRPCServiceSharesItsPortWithHTTP(t *testing.T) {
	cl := startGRPCScenario(t, "shared.yaml", `
name: shared
seed: 1
duration: 10s
workload: {entry: api, rate: 1}
services:
  - name: api
    workers: 2
    service_time: {dist: constant, value: 1ms}
`)
	u := cl.URLs["api"]
	for range 3 {
		if _, err := rawInvoke(t, context.Background(), u, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	addr, _, err := transport.ParseGRPCTarget(u)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + addr + "/work")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("HTTP attempt: %s", resp.Status)
	}
	st := getStats(t, "http://"+addr)
	if st.Service != "api" || st.All.Attempts != 4 || st.All.Succeeded != 4 {
		t.Errorf("/stats: %s, %d attempts, %d succeeded; want api, 4, 4", st.Service, st.All.Attempts, st.All.Succeeded)
	}
	// A request shorter than the HTTP/2 preface is routed at its first
	// byte, not after waiting for 24 bytes that never come; a connection
	// that sends nothing and leaves is let go.
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("GET /stats HTTP/1.0\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "HTTP/1.0 200") {
		t.Errorf("short HTTP/1.0 request: %q, %v; want a 200 at once", line, err)
	}
}
