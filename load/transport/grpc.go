package transport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
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

	"github.com/stormsim/stormsim/policies"
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
// them), shared by the gRPC client and the emulated gRPC services. The
// remaining deadline travels as the standard grpc-timeout.
var (
	MetadataRequestID      = strings.ToLower(HeaderRequestID)
	MetadataAttempt        = strings.ToLower(HeaderAttempt)
	MetadataWrite          = strings.ToLower(HeaderWrite)
	MetadataWarmup         = strings.ToLower(HeaderWarmup)
	MetadataIdempotencyKey = strings.ToLower(HeaderIdempotencyKey)
	MetadataOutcome        = strings.ToLower(HeaderOutcome)
	MetadataRetryAfter     = strings.ToLower(HeaderRetryAfterMs)
	MetadataDontRetry      = strings.ToLower(HeaderDontRetry)
)

// Frame is a message kept as its encoded bytes: the emulated services
// digest the request's bytes and need no schema, and the driver sends
// bytes encoded once (from --data through a descriptor). Client and
// server exchange Frames through RawCodec.
type Frame struct{ Bytes []byte }

// RawCodec passes Frames through as they are and encodes every other
// message (server reflection's) as protobuf. Its name is "proto", so peers
// see the standard application/grpc+proto content type. The zero value is
// ready to use.
type RawCodec struct{}

// Marshal returns a Frame's bytes, or a proto.Message encoded.
func (RawCodec) Marshal(v any) ([]byte, error) {
	switch m := v.(type) {
	case *Frame:
		return m.Bytes, nil
	case proto.Message:
		return proto.Marshal(m)
	}
	return nil, fmt.Errorf("load: grpc codec: cannot marshal %T", v)
}

// Unmarshal copies data into a Frame, or decodes it into a proto.Message.
func (RawCodec) Unmarshal(data []byte, v any) error {
	switch m := v.(type) {
	case *Frame:
		m.Bytes = append(m.Bytes[:0], data...)
		return nil
	case proto.Message:
		return proto.Unmarshal(data, m)
	}
	return fmt.Errorf("load: grpc codec: cannot unmarshal into %T", v)
}

// Name is "proto", the codec's content subtype.
func (RawCodec) Name() string { return "proto" }

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
	// Dial, if set, opens connections instead of a net.Dialer (an
	// in-memory network in tests).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
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
	// dial, if set, opens connections instead of a net.Dialer
	// (GRPCClientOptions.Dial).
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
		grpc.WithDefaultCallOptions(grpc.ForceCodec(RawCodec{}), grpc.MaxCallRecvMsgSize(MaxBodyBytes)),
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
	return &GRPCClient{opts: opts, n: max(o.Connections, 1), conns: map[grpcConnKey]*grpcConns{}, dial: o.Dial}, nil
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
// request, bounded by ctx and o.Timeout, and classifies the result
// (ClassifyGRPC). The attempt's metadata carries the stormsim headers in
// lower case; the remaining deadline (a.Remaining) is the call's deadline,
// sent as grpc-timeout. The attempt's timeout is not sent: the callee
// learns the user's budget, not the caller's patience, as over HTTP; when
// it passes, the call is cancelled. Its phases are traced as net/http's
// are (see grpcphases.go for what each phase is over gRPC): o.Phases are
// enforced, a failure is classified by the phase it failed in, and
// o.Record, if not nil, records the phases.
func (g *GRPCClient) Send(ctx context.Context, a *Attempt, o Sending) Answer {
	ctx, cancel := o.bound(ctx)
	defer cancel()
	t, err := g.target(a.URL)
	if err != nil {
		return Answer{Outcome: policies.Error, Kind: KindOther}
	}
	cc, w, err := g.conn(t.addr, o.Phases)
	if err != nil {
		return Answer{Outcome: policies.Error, Kind: KindOther}
	}
	md := make(metadata.MD, len(a.Header)+5)
	for k, vs := range a.Header {
		md[strings.ToLower(k)] = vs
	}
	return sendGRPCTraced(ctx, a.Number, w, o.Phases, o.PhaseAware, o.Record, func(ctx context.Context) (Answer, error) {
		var err error
		an := sendGRPC(ctx, a, md, func(ctx context.Context, trailer *metadata.MD) error {
			err = cc.Invoke(ctx, t.method, &Frame{Bytes: a.Body}, new(Frame), grpc.Trailer(trailer))
			return err
		})
		return an, err
	})
}

// SendInvoked sends attempt a with invoke, a call on a channel stormsim
// did not dial (a grpc-go invoker that UnaryClientInterceptor wraps): md,
// the call's outgoing metadata, gets a's stormsim metadata, the call gets
// the remaining deadline, and its answer is classified and traced as
// Send's, bounded by ctx and o.Timeout. The channel's connections are
// traced only if it was dialed with GRPCDialOptions.
func SendInvoked(ctx context.Context, a *Attempt, md metadata.MD, o Sending, invoke func(ctx context.Context, trailer *metadata.MD) error) Answer {
	ctx, cancel := o.bound(ctx)
	defer cancel()
	return sendGRPCTraced(ctx, a.Number, nil, o.Phases, o.PhaseAware, o.Record, func(ctx context.Context) (Answer, error) {
		var err error
		an := sendGRPC(ctx, a, md, func(cctx context.Context, trailer *metadata.MD) error {
			err = invoke(cctx, trailer)
			return err
		})
		return an, err
	})
}

// GRPCDialOptions are the options to dial a channel with for the attempts
// SendInvoked sends on it to be traced by phase, and phase timeouts lim
// enforced: a dialer bounding connect_timeout and tls_timeout (the HTTP/2
// handshake) and a stats handler. Each call returns options for one
// channel.
func GRPCDialOptions(lim policies.PhaseTimeouts) []grpc.DialOption {
	w := newGRPCConnWatch(lim)
	return []grpc.DialOption{grpc.WithContextDialer(w.dial), grpc.WithStatsHandler(grpcStats{w})}
}

// sendGRPC makes one attempt with invoke: it adds a's stormsim metadata to
// md, gives the call the remaining deadline instead of ctx's own, and
// classifies what came back.
func sendGRPC(ctx context.Context, a *Attempt, md metadata.MD, invoke func(ctx context.Context, trailer *metadata.MD) error) Answer {
	if a.RequestID != "" {
		md.Set(MetadataRequestID, a.RequestID)
	}
	md.Set(MetadataAttempt, strconv.Itoa(a.Number))
	if a.Write {
		md.Set(MetadataWrite, "1")
	}
	if a.Warmup {
		md.Set(MetadataWarmup, "1")
	}
	if a.IdempotencyKey != "" {
		md.Set(a.keyMetadata(), a.IdempotencyKey)
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
	if o := MetadataValue(md, MetadataOutcome); o != "" {
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
	a.DontRetry = MetadataValue(md, MetadataDontRetry) != ""
	if v := MetadataValue(md, MetadataRetryAfter); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && ms < 1e12 {
			a.RetryAfter = time.Duration(math.Round(ms * float64(time.Millisecond)))
			return a
		}
	}
	if v := MetadataValue(md, MetadataPushback); v != "" {
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

func MetadataValue(md metadata.MD, k string) string {
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

// keyMetadata is the metadata key a's idempotency key travels in: its
// KeyHeader (--key-header) lowercased, as gRPC metadata keys are, or
// MetadataIdempotencyKey.
func (a *Attempt) keyMetadata() string {
	if a.KeyHeader == "" {
		return MetadataIdempotencyKey
	}
	return strings.ToLower(a.KeyHeader)
}
