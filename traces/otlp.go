package traces

import (
	"fmt"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// readOTLP decodes one OTLP JSON ExportTraceServiceRequest with pdata,
// appending its spans to out.
func readOTLP(name string, d document, out *[]Span, in *decoding) error {
	var u ptrace.JSONUnmarshaler
	td, err := u.UnmarshalTraces(d.raw)
	if err != nil {
		return fmt.Errorf("%s:%d: OTLP JSON: %w", name, d.line, err)
	}
	rss := td.ResourceSpans()
	for i := range rss.Len() {
		rs := rss.At(i)
		service, instance := "", ""
		if v, ok := rs.Resource().Attributes().Get("service.name"); ok {
			service = in.names.of(v.AsString())
		}
		if v, ok := rs.Resource().Attributes().Get("service.instance.id"); ok {
			instance = in.names.of(v.AsString())
		}
		sss := rs.ScopeSpans()
		for j := range sss.Len() {
			spans := sss.At(j).Spans()
			for k := range spans.Len() {
				sp := fromOTLP(spans.At(k), service, fmt.Sprintf("%s:%d: resourceSpans[%d].scopeSpans[%d].spans[%d]", name, d.line, i, j, k), in)
				sp.Instance = instance
				*out = append(*out, sp)
			}
		}
	}
	return nil
}

func fromOTLP(sp ptrace.Span, service, source string, in *decoding) Span {
	tid, sid := sp.TraceID(), sp.SpanID()
	s := Span{
		TraceID: in.ids.hex(tid[:]), SpanID: in.ids.hex(sid[:]), Service: service, Name: in.names.of(sp.Name()),
		Start: sp.StartTimestamp().AsTime(), End: sp.EndTimestamp().AsTime(), Resend: -1, Source: source,
	}
	if p := sp.ParentSpanID(); !p.IsEmpty() {
		s.ParentID = in.ids.hex(p[:])
	}
	if k := sp.Kind(); k >= ptrace.SpanKindInternal && k <= ptrace.SpanKindConsumer {
		s.Kind = Kind(k)
	}
	attrs := sp.Attributes()
	get := func(keys ...string) (any, bool) {
		for _, k := range keys {
			if v, ok := attrs.Get(k); ok {
				switch v.Type() {
				case pcommon.ValueTypeInt:
					return v.Int(), true
				case pcommon.ValueTypeDouble:
					return v.Double(), true
				default:
					return v.AsString(), true
				}
			}
		}
		return nil, false
	}
	httpStatus, grpcStatus := 0, 0
	if v, ok := get("http.response.status_code", "http.status_code"); ok {
		httpStatus, _ = intOf(v)
	}
	grpcStatus, _ = grpcStatusOf(func(k string) (any, bool) { return get(k) })
	if v, ok := get("http.request.resend_count"); ok {
		if n, ok := intOf(v); ok && n >= 0 {
			s.Resend = n
		}
	}
	if v, ok := get("http.request.method", "http.method"); ok {
		m, _ := v.(string)
		s.Method = in.names.of(m)
	}
	if v, ok := get("peer.service"); ok {
		p, _ := v.(string)
		s.Peer = in.names.of(p)
	}
	st := sp.Status()
	s.classify(st.Code() == ptrace.StatusCodeError, st.Message(), httpStatus, grpcStatus)
	return s
}
