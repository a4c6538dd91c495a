package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/stormsim/stormsim/inputfile"
	"github.com/stormsim/stormsim/policies"
	"github.com/stormsim/stormsim/topology"
)

// Protocols the emulated services speak and the driver sends.
const (
	ProtocolHTTP = "http"
	ProtocolGRPC = "grpc"
)

// GRPCMethod is the unary method every emulated gRPC service advertises
// through server reflection: it takes a google.protobuf.Struct and returns
// google.protobuf.Empty. The services answer every other method name the
// same way, so a load run may name the method of the system it stands in for.
const GRPCMethod = "stormsim.v1.Emulated/Call"

// MetadataPushback is gRFC A6's server pushback trailer: the milliseconds
// the client should wait before retrying, or a negative value asking it
// not to retry.
const MetadataPushback = "grpc-retry-pushback-ms"

// The stormsim headers as gRPC metadata keys (lower case, as HTTP/2 sends
// them). The remaining deadline travels as the standard grpc-timeout.
var (
	mdRequestID  = strings.ToLower(HeaderRequestID)
	mdAttempt    = strings.ToLower(HeaderAttempt)
	mdWrite      = strings.ToLower(HeaderWrite)
	mdWarmup     = strings.ToLower(HeaderWarmup)
	mdKey        = strings.ToLower(HeaderIdempotencyKey)
	mdOutcome    = strings.ToLower(HeaderOutcome)
	mdRetryAfter = strings.ToLower(HeaderRetryAfterMs)
	mdDontRetry  = strings.ToLower(HeaderDontRetry)
)

// frame is a message kept as its encoded bytes: the emulated services
// digest the request's bytes and need no schema, and the driver sends
// bytes encoded once (from --data through a descriptor).
type frame struct{ b []byte }

// rawCodec passes frames through as they are and encodes every other
// message (server reflection's) as protobuf. Its name is "proto", so peers
// see the standard application/grpc+proto content type.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) {
	switch m := v.(type) {
	case *frame:
		return m.b, nil
	case proto.Message:
		return proto.Marshal(m)
	}
	return nil, fmt.Errorf("load: grpc codec: cannot marshal %T", v)
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	switch m := v.(type) {
	case *frame:
		m.b = append(m.b[:0], data...)
		return nil
	case proto.Message:
		return proto.Unmarshal(data, m)
	}
	return fmt.Errorf("load: grpc codec: cannot unmarshal into %T", v)
}

func (rawCodec) Name() string { return "proto" }

// ParseGRPCTarget splits a grpc://HOST:PORT/pkg.Service/Method URL into
// the address to dial and the full method name ("/pkg.Service/Method").
func ParseGRPCTarget(target string) (addr, method string, err error) {
	u, err := url.Parse(target)
	if err != nil || u.Scheme != "grpc" || u.Host == "" {
		return "", "", fmt.Errorf("target %q: want grpc://HOST:PORT/pkg.Service/Method", target)
	}
	svc, m, ok := strings.Cut(strings.TrimPrefix(u.Path, "/"), "/")
	if !ok || svc == "" || m == "" || strings.Contains(m, "/") || u.RawQuery != "" || u.Fragment != "" {
		return "", "", fmt.Errorf("target %q: want grpc://HOST:PORT/pkg.Service/Method", target)
	}
	return u.Host, "/" + svc + "/" + m, nil
}

// GRPCClientOptions configures a GRPCClient.
type GRPCClientOptions struct {
	// ServiceConfig, if set, is the gRPC service config (JSON) every
	// connection starts with, and grpc-go's own retry and hedging run from
	// it. Empty: grpc-go's retry is disabled, so that stormsim's call
	// policy alone decides and the two do not stack.
	ServiceConfig string
	// Connections is how many HTTP/2 connections to open to each target
	// address, each multiplexing many calls; attempts take them in turn.
	// Default 1.
	Connections int
	// StatsHandler, if set, also sees every call (before stormsim's own
	// phase tracing): Tracing.GRPCClientHandler's client spans.
	StatsHandler stats.Handler
}

// GRPCClient sends attempts as unary gRPC calls over Connections
// multiplexed HTTP/2 connections per target address. It is safe for
// concurrent use.
type GRPCClient struct {
	opts  []grpc.DialOption
	n     int
	mu    sync.Mutex
	conns map[grpcConnKey]*grpcConns
	// targets caches parsed attempt URLs.
	targets sync.Map // string -> grpcTarget
	// dial, if set, opens connections instead of a net.Dialer (an
	// in-memory network in tests; network.go).
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

type grpcTarget struct{ addr, method string }

// grpcConns are the connections to one address, taken in turn, each
// with the watch of its dialer and stats handler (grpcphases.go).
type grpcConns struct {
	cc    []*grpc.ClientConn
	watch []*grpcConnWatch
	next  int
}

// NewGRPCClient returns a client; Close releases its connections.
func NewGRPCClient(o GRPCClientOptions) (*GRPCClient, error) {
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(rawCodec{}), grpc.MaxCallRecvMsgSize(maxBody)),
	}
	if o.ServiceConfig != "" {
		opts = append(opts, grpc.WithDefaultServiceConfig(o.ServiceConfig))
	} else {
		opts = append(opts, grpc.WithDisableRetry())
	}
	if o.StatsHandler != nil {
		opts = append(opts, grpc.WithStatsHandler(o.StatsHandler))
	}
	if o.ServiceConfig != "" {
		// Check the config now, not at the first attempt.
		if err := CheckGRPCServiceConfig("grpc service config", o.ServiceConfig); err != nil {
			return nil, err
		}
	}
	return &GRPCClient{opts: opts, n: max(o.Connections, 1), conns: map[grpcConnKey]*grpcConns{}}, nil
}

// Close closes every connection.
func (g *GRPCClient) Close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, cs := range g.conns {
		for _, cc := range cs.cc {
			cc.Close()
		}
	}
	clear(g.conns)
}

// conn takes the next connection to addr among those whose dialer
// enforces lim's connect and tls timeouts, and its watch.
func (g *GRPCClient) conn(addr string, lim policies.PhaseTimeouts) (*grpc.ClientConn, *grpcConnWatch, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	key := grpcConnKey{addr: addr, connect: lim.Connect, tls: lim.TLS}
	cs := g.conns[key]
	if cs == nil {
		cs = &grpcConns{}
		for range g.n {
			w := newGRPCConnWatch(lim)
			w.dialer = g.dial
			opts := append(g.opts[:len(g.opts):len(g.opts)], grpc.WithContextDialer(w.dial), grpc.WithStatsHandler(grpcStats{w}))
			cc, err := grpc.NewClient("passthrough:///"+addr, opts...)
			if err != nil {
				for _, c := range cs.cc {
					c.Close()
				}
				return nil, nil, err
			}
			cs.cc, cs.watch = append(cs.cc, cc), append(cs.watch, w)
		}
		g.conns[key] = cs
	}
	i := cs.next
	cs.next = (cs.next + 1) % len(cs.cc)
	return cs.cc[i], cs.watch[i], nil
}

func (g *GRPCClient) target(u string) (grpcTarget, error) {
	if t, ok := g.targets.Load(u); ok {
		return t.(grpcTarget), nil
	}
	addr, method, err := ParseGRPCTarget(u)
	if err != nil {
		return grpcTarget{}, err
	}
	t := grpcTarget{addr, method}
	g.targets.Store(u, t)
	return t, nil
}

// Send performs one attempt as a unary call to a.URL
// (grpc://HOST:PORT/pkg.Service/Method) with a.Body as the encoded
// request, bounded by ctx, and classifies the result (ClassifyGRPC). The
// attempt's metadata carries the stormsim headers in lower case; the
// remaining deadline (a.Remaining) is the call's deadline, sent as
// grpc-timeout. ctx's own deadline, the attempt's timeout, is not sent:
// the callee learns the user's budget, not the caller's patience, as over
// HTTP; when it passes, the call is cancelled.
func (g *GRPCClient) Send(ctx context.Context, a *Attempt) Answer {
	return g.SendTraced(ctx, a, policies.PhaseTimeouts{}, false, nil)
}

// SendTraced is Send with the attempt's phases traced as SendTraced traces
// net/http's (see grpcphases.go for what each phase is over gRPC): its
// phase timeouts (lim) are enforced, a failure is classified by the phase
// it failed in, and rec, if not nil, records the phases.
func (g *GRPCClient) SendTraced(ctx context.Context, a *Attempt, lim policies.PhaseTimeouts, phaseAware bool, rec *PhaseRecorder) Answer {
	t, err := g.target(a.URL)
	if err != nil {
		return Answer{Outcome: policies.Error, Kind: KindOther}
	}
	cc, w, err := g.conn(t.addr, lim)
	if err != nil {
		return Answer{Outcome: policies.Error, Kind: KindOther}
	}
	md := make(metadata.MD, len(a.Header)+5)
	for k, vs := range a.Header {
		md[strings.ToLower(k)] = vs
	}
	return sendGRPCTraced(ctx, a.Number, w, lim, phaseAware, rec, func(ctx context.Context) (Answer, error) {
		var err error
		an := sendGRPC(ctx, a, md, func(ctx context.Context, trailer *metadata.MD) error {
			err = cc.Invoke(ctx, t.method, &frame{b: a.Body}, new(frame), grpc.Trailer(trailer))
			return err
		})
		return an, err
	})
}

// sendGRPC makes one attempt with invoke: it adds a's stormsim metadata to
// md, gives the call the remaining deadline instead of ctx's own, and
// classifies what came back.
func sendGRPC(ctx context.Context, a *Attempt, md metadata.MD, invoke func(ctx context.Context, trailer *metadata.MD) error) Answer {
	if a.RequestID != "" {
		md.Set(mdRequestID, a.RequestID)
	}
	md.Set(mdAttempt, strconv.Itoa(a.Number))
	if a.Write {
		md.Set(mdWrite, "1")
	}
	if a.Warmup {
		md.Set(mdWarmup, "1")
	}
	if a.IdempotencyKey != "" {
		md.Set(mdKey, a.IdempotencyKey)
	}
	cctx := ctx
	if _, ok := ctx.Deadline(); ok {
		// Keep ctx's cancellation but not its deadline.
		var cancel context.CancelCauseFunc
		cctx, cancel = context.WithCancelCause(context.WithoutCancel(ctx))
		defer cancel(nil)
		stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
		defer stop()
	}
	if a.Remaining > 0 {
		var c context.CancelFunc
		cctx, c = context.WithTimeout(cctx, a.Remaining)
		defer c()
	}
	// A6 puts the pushback in the trailers, and the emulated services put
	// everything there: the headers are not read.
	var trailer metadata.MD
	err := invoke(metadata.NewOutgoingContext(cctx, md), &trailer)
	if ctx.Err() != nil {
		return ClassifyError(ctx.Err(), context.Cause(ctx))
	}
	return ClassifyGRPC(err, trailer)
}

// ClassifyGRPC maps a call's result and the metadata it came back with to
// an outcome:
//
//	OK                               OK
//	UNAVAILABLE, RESOURCE_EXHAUSTED  Unavailable (grpc-retry-pushback-ms is the pushback; negative: don't retry)
//	DEADLINE_EXCEEDED                Timeout
//	ABORTED, ALREADY_EXISTS          Conflict
//	other codes                      Error
//
// An emulated service's x-stormsim-outcome refines the class (in_progress,
// throttled, ...). A call that never reached a server (refused connection)
// is Unavailable of kind connect; one whose connection broke is Timeout of
// kind reset. Answer.Status holds the HTTP equivalent of the code (503,
// 429, 504, 409, 400, 500, ...) so the report's status counts read alike.
func ClassifyGRPC(err error, md metadata.MD) Answer {
	st := status.Convert(err)
	a := Answer{Status: httpStatusOfCode(st.Code())}
	switch st.Code() {
	case codes.OK:
		a.Outcome = policies.OK
		return a
	case codes.Unavailable, codes.ResourceExhausted:
		a.Outcome = policies.Unavailable
	case codes.DeadlineExceeded:
		a.Outcome = policies.Timeout
	case codes.Aborted, codes.AlreadyExists:
		a.Outcome = policies.Conflict
	default:
		a.Outcome = policies.Error
	}
	if o := first(md, mdOutcome); o != "" {
		if oc, err := policies.ParseOutcome(o); err == nil {
			a.Outcome = oc
			if oc == policies.InProgress {
				a.Status = StatusInProgress
			}
		}
		return withPushback(a, md)
	}
	// No emulated service answered: tell transport failures apart by
	// what grpc-go says of them.
	msg := st.Message()
	switch {
	case st.Code() == codes.Unavailable && (strings.Contains(msg, "connection refused") || strings.Contains(msg, "while dialing")):
		return Answer{Outcome: policies.Unavailable, Kind: KindConnect}
	case st.Code() == codes.Unavailable && (strings.Contains(msg, "transport is closing") || strings.Contains(msg, "connection reset") || strings.Contains(msg, "EOF")):
		return Answer{Outcome: policies.Timeout, Kind: KindReset}
	case st.Code() == codes.DeadlineExceeded && len(md) == 0:
		// The deadline passed at the caller before any answer.
		return Answer{Outcome: policies.Timeout, Kind: KindTimeout}
	}
	return withPushback(a, md)
}

// withPushback reads the pushback of an answer: the exact
// retry-after-ms of an emulated service, else A6's grpc-retry-pushback-ms.
func withPushback(a Answer, md metadata.MD) Answer {
	a.DontRetry = first(md, mdDontRetry) != ""
	if v := first(md, mdRetryAfter); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && ms < 1e12 {
			a.RetryAfter = time.Duration(math.Round(ms * float64(time.Millisecond)))
			return a
		}
	}
	if v := first(md, MetadataPushback); v != "" {
		// A6: a negative or unparseable value means do not retry.
		ms, err := strconv.ParseInt(v, 10, 64)
		switch {
		case err != nil || ms < 0:
			a.DontRetry = true
		case ms < 1e12:
			a.RetryAfter = time.Duration(ms) * time.Millisecond
		}
	}
	return a
}

func first(md metadata.MD, k string) string {
	if vs := md.Get(k); len(vs) > 0 {
		return vs[0]
	}
	return ""
}

// httpStatusOfCode is the HTTP status a gRPC code corresponds to (the
// mapping of grpc-gateway and Google's API design guide).
func httpStatusOfCode(c codes.Code) int {
	switch c {
	case codes.OK:
		return http.StatusOK
	case codes.Unavailable:
		return http.StatusServiceUnavailable
	case codes.ResourceExhausted:
		return http.StatusTooManyRequests
	case codes.DeadlineExceeded:
		return http.StatusGatewayTimeout
	case codes.Aborted, codes.AlreadyExists:
		return http.StatusConflict
	case codes.InvalidArgument, codes.OutOfRange, codes.FailedPrecondition:
		return http.StatusBadRequest
	case codes.NotFound, codes.Unimplemented:
		return http.StatusNotFound
	case codes.Canceled:
		return 499
	}
	return http.StatusInternalServerError
}

// NativeGRPCPolicy is the part of call policy c that stormsim still runs
// when grpc-go's own retry runs from a service config: one attempt, no
// attempt timeout (grpc-go bounds the whole call, retries included, by the
// deadline), and none of the retry, hedge or budget policy, which the
// service config's retryPolicy, hedgingPolicy and retryThrottling replace.
// Breaker, throttle, send rate and deadline propagation are kept.
func NativeGRPCPolicy(c topology.Call) topology.Call {
	c.Timeout = 0
	c.Retry = policies.RetryConfig{MaxAttempts: 1}
	c.Hedge = nil
	c.Budget = nil
	c.HonorPushback = false
	return c
}

// scenarioClientPolicy is the client policy a scenario run drives: the
// scenario's, or its native remainder with a service config.
func scenarioClientPolicy(sc *topology.Scenario, opt ScenarioOptions) (topology.Call, error) {
	if opt.GRPCServiceConfig == "" {
		return sc.Workload.Client, nil
	}
	if opt.Protocol != ProtocolGRPC {
		return topology.Call{}, fmt.Errorf("load: %s: a gRPC service config needs the grpc protocol", scenarioName(sc))
	}
	return NativeGRPCPolicy(sc.Workload.Client), nil
}

// ClientServiceConfig reads the gRPC service config the scenario's client
// names (workload.client.grpc_service_config, relative to the scenario
// file): what a run with grpc-go's own retry gives grpc-go, and what the
// simulator read the same policy from.
func ClientServiceConfig(sc *topology.Scenario) (string, error) {
	name := sc.Workload.Client.GRPCServiceConfig
	if name == "" {
		return "", fmt.Errorf("load: %s: workload.client.grpc_service_config: not set; grpc-go's own retry needs the service config to run from", scenarioName(sc))
	}
	file := name
	if !filepath.IsAbs(file) && sc.File != "" {
		file = filepath.Join(filepath.Dir(sc.File), file)
	}
	data, err := inputfile.Read(file, topology.MaxFileSize)
	if err != nil {
		return "", fmt.Errorf("load: %s: workload.client.grpc_service_config: %w", scenarioName(sc), err)
	}
	return string(data), nil
}

// CheckGRPCServiceConfig reports whether grpc-go accepts cfg as a service
// config, naming file and, for malformed JSON, the line at fault.
func CheckGRPCServiceConfig(file, cfg string) error {
	var v any
	if err := json.Unmarshal([]byte(cfg), &v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line := 1 + strings.Count(cfg[:min(int(se.Offset), len(cfg))], "\n")
			return fmt.Errorf("%s:%d: %v", file, line, err)
		}
		return fmt.Errorf("%s: %w", file, err)
	}
	cc, err := grpc.NewClient("passthrough:///127.0.0.1:1", grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithDefaultServiceConfig(cfg))
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	return cc.Close()
}
