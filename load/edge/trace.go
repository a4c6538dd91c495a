package edge

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/stats"

	"github.com/stormsim/stormsim/load/transport"
	"github.com/stormsim/stormsim/policies"
	"github.com/stormsim/stormsim/traces"
)

// ClientService is the service.name of the load driver's spans: the
// external client, whose root span per logical request holds one client
// span per attempt to the entry.
const ClientService = "stormsim-client"

// Tracing emits OpenTelemetry spans from serve and load: a server span
// per attempt a service receives, a client span per attempt it (or the
// driver) sends, and a root span per logical request, with W3C trace
// context carried between the emulated services. Spans go to one OTLP
// JSON file, written when Close is called. A nil *Tracing traces nothing:
// every method passes its input through. Safe for concurrent use.
type Tracing struct {
	exp  *traces.FileExporter
	prop propagation.TextMapPropagator
	mu   sync.Mutex
	tps  map[string]*sdktrace.TracerProvider
}

// NewTracing starts tracing into the OTLP JSON file at path.
func NewTracing(path string) (*Tracing, error) {
	exp, err := traces.NewFileExporter(path)
	if err != nil {
		return nil, err
	}
	return &Tracing{exp: exp, prop: propagation.TraceContext{}, tps: map[string]*sdktrace.TracerProvider{}}, nil
}

// provider is the tracer provider of one service (its resource names it);
// all of them share the exporter.
func (t *Tracing) provider(service string) *sdktrace.TracerProvider {
	t.mu.Lock()
	defer t.mu.Unlock()
	tp := t.tps[service]
	if tp == nil {
		// Blocking: a full queue waits rather than drops spans, because a
		// trace with holes would import as a different graph.
		tp = sdktrace.NewTracerProvider(
			sdktrace.WithSampler(sdktrace.AlwaysSample()),
			sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", service))),
			sdktrace.WithBatcher(t.exp, sdktrace.WithBlocking(), sdktrace.WithMaxQueueSize(16384), sdktrace.WithMaxExportBatchSize(2048)),
		)
		t.tps[service] = tp
	}
	return tp
}

// Handler wraps a service's handler with a server span per attempt,
// continuing the caller's trace from its traceparent header. Reads of
// /stats and /metrics are not attempts and get no span (a scraper's
// requests would otherwise look like requests entering at every service).
func (t *Tracing) Handler(service string, h http.Handler) http.Handler {
	if t == nil {
		return h
	}
	return otelhttp.NewHandler(h, service, otelhttp.WithTracerProvider(t.provider(service)), otelhttp.WithPropagators(t.prop),
		otelhttp.WithFilter(func(r *http.Request) bool { return r.URL.Path != "/stats" && r.URL.Path != "/metrics" }))
}

// Transport wraps a caller's transport with a client span per attempt
// that injects the trace context and records the attempt's number as
// http.request.resend_count (0 for the first), which tells retries,
// hedges and fan-out apart on import. A non-empty peer is set as every
// span's peer.service: the callee's name, for a callee whose own spans
// are not in the traces (a --target), so that its attempts as the caller
// timed them can still be read by name (traces.ServerLatency).
func (t *Tracing) Transport(service, peer string, rt http.RoundTripper) http.RoundTripper {
	if t == nil {
		return rt
	}
	return otelhttp.NewTransport(resendCount{rt, peer}, otelhttp.WithTracerProvider(t.provider(service)), otelhttp.WithPropagators(t.prop))
}

// GRPCClientHandler is the stats handler of a caller's gRPC channels: a
// client span per attempt, in the caller's trace, with the trace context
// sent in the call's metadata (otelgrpc). The attempt's number is set on
// it as over HTTP (grpcStats). A non-empty peer is set as every span's
// peer.service, as Transport does. Nil when t is nil.
func (t *Tracing) GRPCClientHandler(service, peer string) stats.Handler {
	if t == nil {
		return nil
	}
	opts := []otelgrpc.Option{otelgrpc.WithTracerProvider(t.provider(service)), otelgrpc.WithPropagators(t.prop)}
	if peer != "" {
		opts = append(opts, otelgrpc.WithSpanAttributes(attribute.String("peer.service", peer)))
	}
	return otelgrpc.NewClientHandler(opts...)
}

// GRPCServerHandler is the stats handler of a service's gRPC server: a
// server span per call, continuing the caller's trace from the call's
// metadata; server reflection's calls are not attempts and get none. Nil
// when t is nil.
func (t *Tracing) GRPCServerHandler(service string) stats.Handler {
	if t == nil {
		return nil
	}
	return otelgrpc.NewServerHandler(otelgrpc.WithTracerProvider(t.provider(service)), otelgrpc.WithPropagators(t.prop),
		otelgrpc.WithFilter(func(info *stats.RPCTagInfo) bool { return !strings.HasPrefix(info.FullMethodName, "/grpc.reflection.") }))
}

// resendCount marks the client span otelhttp opened with the attempt
// number the driver put in the request's header, and with the callee's
// peer.service when it has one.
type resendCount struct {
	next http.RoundTripper
	peer string
}

func (r resendCount) RoundTrip(req *http.Request) (*http.Response, error) {
	sp := trace.SpanFromContext(req.Context())
	if n, err := strconv.Atoi(req.Header.Get(transport.HeaderAttempt)); err == nil && n >= 1 {
		sp.SetAttributes(attribute.Int("http.request.resend_count", n-1))
	}
	if r.peer != "" {
		sp.SetAttributes(attribute.String("peer.service", r.peer))
	}
	return r.next.RoundTrip(req)
}

// StartRequest opens the root span of one logical request at the driver.
func (t *Tracing) StartRequest(ctx context.Context, id string) (context.Context, trace.Span) {
	if t == nil {
		return ctx, nil
	}
	return t.provider(ClientService).Tracer("stormsim/load").Start(ctx, "request",
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attribute.String("stormsim.request_id", id)))
}

// EndRequest closes a root span with the request's result.
func EndRequest(sp trace.Span, r policies.CallResult) {
	if sp == nil {
		return
	}
	if r != policies.Succeeded {
		sp.SetStatus(codes.Error, r.String())
	}
	sp.End()
}

// Close flushes every provider and writes the file.
func (t *Tracing) Close(ctx context.Context) error {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	tps := t.tps
	t.tps = map[string]*sdktrace.TracerProvider{}
	t.mu.Unlock()
	var errs []error
	for _, tp := range tps {
		errs = append(errs, tp.ForceFlush(ctx))
	}
	errs = append(errs, t.exp.Shutdown(ctx))
	for _, tp := range tps {
		// The exporter is already shut down; its error says so again.
		_ = tp.Shutdown(ctx)
	}
	return errors.Join(errs...)
}

// WithSpanOf carries the span of from into ctx, so that work detached
// from its request's context (kept going for nobody, or attempts run in
// their own goroutines) still calls downstream in the request's trace.
func WithSpanOf(ctx, from context.Context) context.Context {
	if sc := trace.SpanContextFromContext(from); sc.IsValid() {
		return trace.ContextWithSpanContext(ctx, sc)
	}
	return ctx
}
