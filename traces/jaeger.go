package traces

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"
)

// jaegerExport is the JSON Jaeger's UI and query API export.
type jaegerExport struct {
	Data []jaegerTrace `json:"data"`
}

type jaegerTrace struct {
	TraceID   string                   `json:"traceID"`
	Spans     []jaegerSpan             `json:"spans"`
	Processes map[string]jaegerProcess `json:"processes"`
}

type jaegerSpan struct {
	TraceID       string      `json:"traceID"`
	SpanID        string      `json:"spanID"`
	OperationName string      `json:"operationName"`
	References    []jaegerRef `json:"references"`
	// StartTime is in microseconds since the epoch, Duration in
	// microseconds.
	StartTime int64       `json:"startTime"`
	Duration  int64       `json:"duration"`
	Tags      []jaegerTag `json:"tags"`
	ProcessID string      `json:"processID"`
}

type jaegerRef struct {
	RefType string `json:"refType"`
	TraceID string `json:"traceID"`
	SpanID  string `json:"spanID"`
}

type jaegerProcess struct {
	ServiceName string      `json:"serviceName"`
	Tags        []jaegerTag `json:"tags"`
}

type jaegerTag struct {
	Key   string `json:"key"`
	Type  string `json:"type"`
	Value any    `json:"value"`
}

// readJaeger decodes one Jaeger JSON export.
func readJaeger(name string, d document, out *[]Span, in *decoding) error {
	var ex jaegerExport
	if err := json.Unmarshal(d.raw, &ex); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fmt.Errorf("%s:%d: Jaeger JSON: %s: want %s, got a JSON %s", name, d.line, te.Field, jsonKind(te.Type.Kind()), te.Value)
		}
		return fmt.Errorf("%s:%d: Jaeger JSON: %w", name, d.line, err)
	}
	for i, tr := range ex.Data {
		for j, js := range tr.Spans {
			src := fmt.Sprintf("%s:%d: data[%d].spans[%d]", name, d.line, i, j)
			if js.Duration < 0 {
				return fmt.Errorf("%s: duration: must be ≥ 0, got %d", src, js.Duration)
			}
			s := Span{
				TraceID: in.ids.of(strings.ToLower(cmpOr(js.TraceID, tr.TraceID))), SpanID: in.ids.of(strings.ToLower(js.SpanID)), Name: in.names.of(js.OperationName),
				Start: time.UnixMicro(js.StartTime), Resend: -1, Source: src,
			}
			s.End = s.Start.Add(time.Duration(js.Duration) * time.Microsecond)
			if p, ok := tr.Processes[js.ProcessID]; ok {
				s.Service = in.names.of(p.ServiceName)
				for _, t := range p.Tags {
					if v, ok := t.Value.(string); ok && t.Key == "service.instance.id" {
						s.Instance = in.names.of(v)
					}
				}
			}
			for _, r := range js.References {
				// A FOLLOWS_FROM reference is causal but not a call's
				// child; only CHILD_OF makes a parent.
				if r.RefType == "CHILD_OF" && s.ParentID == "" {
					s.ParentID = in.ids.of(strings.ToLower(r.SpanID))
				}
			}
			tags := map[string]any{}
			for _, t := range js.Tags {
				tags[t.Key] = t.Value
			}
			if k, ok := tags["span.kind"].(string); ok {
				if i := slices.Index(kindNames[:], k); i > 0 {
					s.Kind = Kind(i)
				}
			}
			httpStatus, grpcStatus := 0, 0
			for _, k := range []string{"http.response.status_code", "http.status_code"} {
				if v, ok := tags[k]; ok {
					httpStatus, _ = intOf(v)
					break
				}
			}
			grpcStatus, _ = grpcStatusOf(func(k string) (any, bool) { v, ok := tags[k]; return v, ok })
			if v, ok := tags["http.request.resend_count"]; ok {
				if n, ok := intOf(v); ok && n >= 0 {
					s.Resend = n
				}
			}
			for _, k := range []string{"http.request.method", "http.method"} {
				if v, ok := tags[k].(string); ok && s.Method == "" {
					s.Method = in.names.of(v)
				}
			}
			if v, ok := tags["peer.service"].(string); ok {
				s.Peer = in.names.of(v)
			}
			statusErr := tags["error"] == true || tags["error"] == "true" || tags["otel.status_code"] == "ERROR"
			msg, _ := tags["otel.status_description"].(string)
			if msg == "" {
				msg, _ = tags["error.message"].(string)
			}
			s.classify(statusErr, msg, httpStatus, grpcStatus)
			*out = append(*out, s)
		}
	}
	return nil
}

// jsonKind names a Go kind as JSON spells it.
func jsonKind(k reflect.Kind) string {
	switch k {
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	}
	return "a number"
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
