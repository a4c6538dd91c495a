package traces

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// FileExporter is an OpenTelemetry span exporter that writes OTLP JSON,
// one ExportTraceServiceRequest per line as the collector's file exporter
// does, so that ReadFile and other OTLP tools read it. It writes to a
// temporary file beside the path and renames it into place at Shutdown,
// so a reader never sees half a file. Safe for concurrent use.
type FileExporter struct {
	path string
	mu   sync.Mutex
	f    *os.File
	w    *bufio.Writer
	err  error
	done bool
}

// NewFileExporter creates the temporary file that Shutdown renames to path.
func NewFileExporter(path string) (*FileExporter, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return nil, fmt.Errorf("traces: %w", err)
	}
	return &FileExporter{path: path, f: f, w: bufio.NewWriterSize(f, 1<<20)}, nil
}

// ExportSpans writes one batch as one line.
func (e *FileExporter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return nil
	}
	td := ToOTLP(spans)
	var m ptrace.JSONMarshaler
	b, err := m.MarshalTraces(td)
	if err != nil {
		return fmt.Errorf("traces: %w", err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.done {
		return fmt.Errorf("traces: %s: exporter shut down", e.path)
	}
	if e.err == nil {
		if _, e.err = e.w.Write(b); e.err == nil {
			e.err = e.w.WriteByte('\n')
		}
	}
	return e.err
}

// Shutdown flushes and renames the file into place; after it, exports fail.
func (e *FileExporter) Shutdown(context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.done {
		return e.err
	}
	e.done = true
	tmp := e.f.Name()
	if e.err == nil {
		e.err = e.w.Flush()
	}
	if e.err == nil {
		e.err = e.f.Sync()
	}
	if err := e.f.Close(); e.err == nil {
		e.err = err
	}
	if e.err == nil {
		// CreateTemp makes the file private; a trace is an ordinary output.
		e.err = os.Chmod(tmp, 0o644)
	}
	if e.err == nil {
		e.err = os.Rename(tmp, e.path)
	}
	if e.err != nil {
		os.Remove(tmp)
		e.err = fmt.Errorf("traces: %s: %w", e.path, e.err)
	}
	return e.err
}

// ToOTLP converts SDK spans to pdata, one ResourceSpans per resource.
func ToOTLP(spans []sdktrace.ReadOnlySpan) ptrace.Traces {
	td := ptrace.NewTraces()
	byRes := map[string]ptrace.SpanSlice{}
	for _, s := range spans {
		key := s.Resource().Encoded(attribute.DefaultEncoder())
		out, ok := byRes[key]
		if !ok {
			rs := td.ResourceSpans().AppendEmpty()
			for _, kv := range s.Resource().Attributes() {
				putAttr(rs.Resource().Attributes(), kv)
			}
			ss := rs.ScopeSpans().AppendEmpty()
			ss.Scope().SetName(s.InstrumentationScope().Name)
			ss.Scope().SetVersion(s.InstrumentationScope().Version)
			out = ss.Spans()
			byRes[key] = out
		}
		sp := out.AppendEmpty()
		sc := s.SpanContext()
		sp.SetTraceID(pcommon.TraceID(sc.TraceID()))
		sp.SetSpanID(pcommon.SpanID(sc.SpanID()))
		if p := s.Parent(); p.IsValid() {
			sp.SetParentSpanID(pcommon.SpanID(p.SpanID()))
		}
		sp.SetName(s.Name())
		sp.SetKind(ptrace.SpanKind(s.SpanKind()))
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(s.StartTime()))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(s.EndTime()))
		switch st := s.Status(); st.Code {
		case codes.Error:
			sp.Status().SetCode(ptrace.StatusCodeError)
			sp.Status().SetMessage(st.Description)
		case codes.Ok:
			sp.Status().SetCode(ptrace.StatusCodeOk)
		}
		for _, kv := range s.Attributes() {
			putAttr(sp.Attributes(), kv)
		}
	}
	return td
}

func putAttr(m pcommon.Map, kv attribute.KeyValue) {
	k := string(kv.Key)
	switch kv.Value.Type() {
	case attribute.BOOL:
		m.PutBool(k, kv.Value.AsBool())
	case attribute.INT64:
		m.PutInt(k, kv.Value.AsInt64())
	case attribute.FLOAT64:
		m.PutDouble(k, kv.Value.AsFloat64())
	default:
		m.PutStr(k, kv.Value.String())
	}
}
