package traces

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/stormsim/stormsim/inputfile"
)

// Format is a trace file's format.
type Format uint8

// Formats ReadFile recognises.
const (
	OTLP Format = iota
	Jaeger
)

// String names the format.
func (f Format) String() string {
	if f == Jaeger {
		return "jaeger"
	}
	return "otlp"
}

// Bounds on an import, which holds every span to infer its model: memory
// is about the file once, plus what one document decodes to, plus the
// spans (about 310 bytes each for JSON lines, with service and operation
// names and ids shared; TestAttackImportMemoryPerSpanIsBounded holds it),
// plus the index (about 30 bytes a span) and the collector's headroom: at
// ImportGCPercent the heap peaks near 460 bytes a span besides the file
// (TestAttackImportPeakIsBounded, BenchmarkImport1MSpans), so the two
// limits bound an import near 256 MiB + 2M × 460 B, about 1.2 GB. A file
// or a set of files past them is refused, naming the limit, rather than
// exhausting memory.
const (
	// MaxFile bounds one trace file. A file of one document (an OTLP or
	// Jaeger export) decodes whole, at several times its size; JSON lines
	// decode a line at a time.
	MaxFile = 256 << 20
	// MaxSpans bounds the spans of one import, all files together.
	MaxSpans = 2_000_000
)

// ErrTooManySpans is wrapped by the error of an import of more than
// MaxSpans spans.
var ErrTooManySpans = errors.New("too many spans")

// ReadFile reads the spans of an OTLP JSON or Jaeger JSON file, telling
// the two apart by their top-level keys ("resourceSpans" or "data"). Only
// a regular file of at most MaxFile bytes is read (inputfile.Read): a
// device, a named pipe or a huge file fails at once.
func ReadFile(path string) ([]Span, Format, error) {
	return ReadFileContext(context.Background(), path)
}

// ReadFileContext is ReadFile stopping with ctx's error when ctx ends
// (between documents).
func ReadFileContext(ctx context.Context, path string) ([]Span, Format, error) {
	data, err := inputfile.Read(path, MaxFile)
	if err != nil {
		return nil, 0, err
	}
	return read(ctx, path, data, MaxSpans)
}

// Read decodes data, named name in errors and in each span's Source.
func Read(name string, data []byte) ([]Span, Format, error) {
	return read(context.Background(), name, data, MaxSpans)
}

// decoding is what the documents of one read share: the names their
// spans repeat (services, operations, methods, peers), kept once for the
// whole read, and the ids of the document being decoded, kept once while
// it is (a trace's spans share its id, a span's id is its children's
// parent id) and then forgotten.
type decoding struct {
	names, ids interner
}

// read decodes data's documents one at a time into one slice of spans, so
// that only the spans are kept (each document's decoded form is dropped
// after it), stopping when ctx ends or past limit spans.
func read(ctx context.Context, name string, data []byte, limit int) ([]Span, Format, error) {
	var spans []Span
	in := decoding{names: interner{limit: maxNames}, ids: interner{limit: maxIDs}}
	format, decode := OTLP, readOTLP
	n := 0
	err := eachDocument(name, data, func(d document) error {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%s:%d: %w", name, d.line, err)
		}
		if n++; n == 1 {
			var keys map[string]json.RawMessage
			if err := json.Unmarshal(d.raw, &keys); err != nil {
				return fmt.Errorf("%s:%d: want a JSON object: %w", name, d.line, err)
			}
			if _, ok := keys["data"]; ok {
				format, decode = Jaeger, readJaeger
			} else if _, ok := keys["resourceSpans"]; !ok && len(keys) > 0 {
				return fmt.Errorf("%s:%d: neither OTLP JSON (resourceSpans) nor a Jaeger export (data)", name, d.line)
			}
		}
		in.ids.reset()
		if err := decode(name, d, &spans, &in); err != nil {
			return err
		}
		if n == 1 {
			spans = slices.Grow(spans, estimateRest(len(spans), d, data, limit))
		}
		if len(spans) > limit {
			return fmt.Errorf("%s:%d: %w: more than %d, the limit of an import (import a sample of the traces)", name, d.line, ErrTooManySpans, limit)
		}
		return nil
	})
	if err != nil {
		return nil, format, err
	}
	if n == 0 {
		return nil, 0, fmt.Errorf("%s: no trace data", name)
	}
	if cap(spans)-len(spans) > len(spans)/16 {
		// append left up to a quarter of room, which inference would
		// hold for as long as the spans: keep them in a slice of their size.
		spans = slices.Clone(spans)
	}
	return spans, format, nil
}

// estimateRest is how many more spans data probably holds, judged by the
// first document (JSON lines are alike), so that the spans are read into
// one slice of about their size: growing it by appending kept up to twice
// the spans alive at once, and the room left over for as long as them. It
// is at most limit, so no more than an import may hold anyway.
func estimateRest(spans int, first document, data []byte, limit int) int {
	end := first.off + len(first.raw)
	if spans == 0 || end <= 0 || end >= len(data) {
		return 0
	}
	rest := float64(spans) * float64(len(data)-end) / float64(end)
	return int(min(rest*1.01, float64(limit-spans+1)))
}

// document is one top-level JSON value of a file and the line it starts on.
type document struct {
	raw  []byte
	line int
	off  int // of raw in the file
}

// lines numbers the lines of data at increasing offsets, counting each
// byte once: numbering every document from the file's start made JSON
// lines quadratic.
type lines struct {
	data    []byte
	off     int // counted up to here
	line    int // the line at off
	scanned int // bytes counted, for tests of the work done
}

// at returns the line of offset off, which must not be before the last
// asked for.
func (l *lines) at(off int) int {
	off = min(max(off, l.off), len(l.data))
	l.line += bytes.Count(l.data[l.off:off], []byte("\n"))
	l.scanned += off - l.off
	l.off = off
	return l.line
}

// eachDocument calls fn with each top-level JSON value of data in turn
// (a single document or JSON lines alike), each a slice of data itself.
func eachDocument(name string, data []byte, fn func(document) error) error {
	_, err := eachDocumentCounted(name, data, fn)
	return err
}

// eachDocumentCounted is eachDocument, also returning its line numbering.
func eachDocumentCounted(name string, data []byte, fn func(document) error) (*lines, error) {
	ln := &lines{data: data, line: 1}
	if trimmed := bytes.TrimSpace(data); len(trimmed) > 0 && json.Valid(trimmed) {
		// One document (an export): taken as it is, where a decoder
		// would copy it twice.
		start := bytes.Index(data, trimmed[:1])
		return ln, fn(document{raw: trimmed, line: ln.at(start), off: start})
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var skip json.RawMessage
	for {
		off := int(dec.InputOffset())
		// The offset before Decode may sit before whitespace; count the
		// line of the value's first byte.
		start := off + len(data[off:]) - len(bytes.TrimLeft(data[off:], " \t\r\n"))
		err := dec.Decode(&skip)
		if errors.Is(err, io.EOF) {
			return ln, nil
		}
		if err != nil {
			line := ln.at(start)
			var se *json.SyntaxError
			if errors.As(err, &se) {
				line = ln.at(int(se.Offset))
			}
			return ln, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		end := int(dec.InputOffset())
		skip = skip[:0] // reused: no document's copy is kept
		if err := fn(document{raw: data[start:end], line: ln.at(start), off: start}); err != nil {
			return ln, err
		}
	}
}

// intOf reads an integer attribute given as a number or a numeric string.
// grpcCodeNames are the gRPC status codes by number, as OpenTelemetry's
// rpc.response.status_code names them (the canonical upper-case names).
var grpcCodeNames = [...]string{"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
	"ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
	"UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"}

// grpcStatusOf reads a span's gRPC status code from its attributes,
// through get: rpc.grpc.status_code (a number, older conventions), else
// rpc.response.status_code (a canonical name or a number, as current
// otelgrpc writes it). ok is false when neither is there or is readable.
func grpcStatusOf(get func(key string) (any, bool)) (code int, ok bool) {
	if v, found := get("rpc.grpc.status_code"); found {
		return intOf(v)
	}
	v, found := get("rpc.response.status_code")
	if !found {
		return 0, false
	}
	if name, isName := v.(string); isName {
		if i := slices.Index(grpcCodeNames[:], strings.ToUpper(strings.TrimSpace(name))); i >= 0 {
			return i, true
		}
	}
	return intOf(v)
}

func intOf(v any) (int, bool) {
	switch x := v.(type) {
	case int64:
		return int(x), true
	case float64:
		return int(x), x == float64(int(x))
	case string:
		n, err := strconv.Atoi(strings.TrimSpace(x))
		return n, err == nil
	}
	return 0, false
}
