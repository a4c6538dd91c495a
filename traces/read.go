package traces

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
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

// maxFile bounds what one trace file may hold: a trace export is read
// whole, and a runaway file must fail clearly rather than exhaust memory.
const maxFile = 1 << 30

// ReadFile reads the spans of an OTLP JSON or Jaeger JSON file, telling
// the two apart by their top-level keys ("resourceSpans" or "data").
func ReadFile(path string) ([]Span, Format, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", path, err)
	}
	if len(data) > maxFile {
		return nil, 0, fmt.Errorf("%s: larger than %d bytes", path, maxFile)
	}
	return Read(path, data)
}

// Read decodes data, named name in errors and in each span's Source.
func Read(name string, data []byte) ([]Span, Format, error) {
	docs, err := documents(name, data)
	if err != nil {
		return nil, 0, err
	}
	if len(docs) == 0 {
		return nil, 0, fmt.Errorf("%s: no trace data", name)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(docs[0].raw, &keys); err != nil {
		return nil, 0, fmt.Errorf("%s:%d: want a JSON object: %w", name, docs[0].line, err)
	}
	format, decode := OTLP, readOTLP
	if _, ok := keys["data"]; ok {
		format, decode = Jaeger, readJaeger
	} else if _, ok := keys["resourceSpans"]; !ok && len(keys) > 0 {
		return nil, 0, fmt.Errorf("%s:%d: neither OTLP JSON (resourceSpans) nor a Jaeger export (data)", name, docs[0].line)
	}
	var spans []Span
	for _, d := range docs {
		s, err := decode(name, d)
		if err != nil {
			return nil, format, err
		}
		spans = append(spans, s...)
	}
	return spans, format, nil
}

// document is one top-level JSON value of a file and the line it starts on.
type document struct {
	raw  []byte
	line int
}

// documents splits data into its top-level JSON values: a single document
// or JSON lines alike.
func documents(name string, data []byte) ([]document, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var out []document
	for {
		var raw json.RawMessage
		off := dec.InputOffset()
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		line := 1 + bytes.Count(data[:off], []byte("\n"))
		if err != nil {
			var se *json.SyntaxError
			if errors.As(err, &se) {
				line = 1 + bytes.Count(data[:min(int(se.Offset), len(data))], []byte("\n"))
			}
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		// The offset before Decode may sit before whitespace; count the
		// line of the value's first byte.
		start := off + int64(len(data[off:])-len(bytes.TrimLeft(data[off:], " \t\r\n")))
		line = 1 + bytes.Count(data[:start], []byte("\n"))
		out = append(out, document{raw: raw, line: line})
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
