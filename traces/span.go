package traces

import (
	"strings"
	"time"
)

// Kind is a span's kind, as OpenTelemetry numbers them.
type Kind uint8

// Span kinds; Unspecified spans are given a kind from service boundaries.
const (
	Unspecified Kind = iota
	Internal
	Server
	Client
	Producer
	Consumer
)

var kindNames = [...]string{"unspecified", "internal", "server", "client", "producer", "consumer"}

// String returns the kind's name.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind?"
}

// Class is how an attempt ended, in the scenario's outcome vocabulary.
type Class uint8

// Classes. Cancelled is an attempt its caller abandoned (a hedge that lost,
// a call given up): neither a success nor a failure of the callee.
const (
	OK Class = iota
	Error
	Unavailable
	Timeout
	Cancelled
)

var classNames = [...]string{"ok", "error", "unavailable", "timeout", "cancelled"}

// String returns the class name as the scenario spells it.
func (c Class) String() string {
	if int(c) < len(classNames) {
		return classNames[c]
	}
	return "class?"
}

// Span is one span in the neutral form both readers produce.
type Span struct {
	TraceID, SpanID, ParentID string
	// Service is the resource's service.name ("" when missing); Instance
	// its service.instance.id (a replica), "" when missing.
	Service, Instance string
	Name              string
	Start             time.Time
	End               time.Time
	// Kind sits with the other one-byte fields, which pack together.
	Kind Kind
	// Failed is true when the span's status is error (or its HTTP or gRPC
	// status says so); Class says which failure.
	Failed bool
	Class  Class
	// GaveUp marks a client span that ended without an answer because its
	// own deadline passed (deadline exceeded, no status code).
	GaveUp bool
	// pos is the span's position in the index Infer builds (it fills the
	// padding after the one-byte fields, so it costs no memory).
	pos int32
	// Resend is http.request.resend_count, -1 when absent.
	Resend int
	// Method is the HTTP method (http.request.method or http.method), "" if none.
	Method string
	// Peer is peer.service, when set: the callee of a client span whose
	// server side is not in the traces.
	Peer string
	// Source says where the span was read: file and record.
	Source string

	callee string // a client span's callee, found by Infer
}

// Duration is End − Start.
func (s *Span) Duration() time.Duration { return s.End.Sub(s.Start) }

// classify sets Failed and Class from what a span's status and attributes
// say: an HTTP status (≥ 500 on any span, 4xx only on client spans: 429
// and 503 unavailable, 408 and 504 timeout, the rest error), a gRPC status
// (4 timeout, 8 and 14 unavailable, 1 cancelled), or an error status whose
// message names a deadline (a client that gave up: timeout) or a
// cancellation.
func (s *Span) classify(statusErr bool, msg string, httpStatus, grpcStatus int) {
	s.Class = OK
	switch {
	case httpStatus >= 500 || httpStatus >= 400 && s.Kind == Client || httpStatus == 408 || httpStatus == 429:
		switch httpStatus {
		case 429, 503:
			s.Class = Unavailable
		case 408, 504:
			s.Class = Timeout
		default:
			s.Class = Error
		}
	case grpcStatus > 0:
		switch grpcStatus {
		case 1:
			s.Class = Cancelled
		case 4:
			s.Class = Timeout
		case 8, 14:
			s.Class = Unavailable
		default:
			s.Class = Error
		}
	case statusErr:
		s.Class = Error
		switch m := strings.ToLower(msg); {
		case strings.Contains(m, "deadline exceeded") || strings.Contains(m, "timeout") || strings.Contains(m, "timed out"):
			s.Class = Timeout
			s.GaveUp = s.Kind == Client && httpStatus == 0
		case strings.Contains(m, "canceled") || strings.Contains(m, "cancelled"):
			s.Class = Cancelled
		}
	}
	s.Failed = s.Class != OK
}
