package serve

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stormsim/stormsim/load/edge"
	"github.com/stormsim/stormsim/load/transport"
	"github.com/stormsim/stormsim/traces"
)

// TestTracingSpans runs a two-service scenario with tracing and reads the
// file back: one root span per logical request at the driver, one client
// span per attempt at each caller (carrying its resend count) whose
// server-span child is in the callee, and the callee's spans in the
// caller's trace even though its work runs detached from the request.
func TestTracingSpans(t *testing.T) {
	for _, protocol := range []string{ProtocolHTTP, ProtocolGRPC} {
		t.Run(protocol, func(t *testing.T) { testTracingSpans(t, protocol) })
	}
}

// testTracingSpans is TestTracingSpans over protocol: over gRPC the spans
// come from grpc-go stats handlers (otelgrpc), the attempt's number set by
// stormsim's.
func testTracingSpans(t *testing.T, protocol string) {
	sc := parseScenario(t, `name: traced
seed: 3
duration: 500ms
workload: {entry: gw, arrival: constant, rate: 20, deadline: 1s}
services:
  - name: gw
    workers: 4
    service_time: {dist: constant, value: 1ms}
    calls: [{to: db, retry: {max_attempts: 3, on: [error]}}]
  - name: db
    workers: 4
    service_time: {dist: constant, value: 1ms}
    error_rate: 0.5
`)
	path := filepath.Join(t.TempDir(), "spans.json")
	tr, err := edge.NewTracing(path)
	if err != nil {
		t.Fatal(err)
	}
	res, err := RunScenario(context.Background(), sc, ScenarioOptions{Tracing: tr, Protocol: protocol, Ready: func(c *Cluster) {
		// A scrape of /stats or /metrics is no attempt: it makes no span.
		root := strings.TrimSuffix(c.URLs["db"], "/db")
		if addr, _, err := transport.ParseGRPCTarget(c.URLs["db"]); err == nil {
			root = "http://" + addr
		}
		for _, p := range []string{"/stats", "/metrics"} {
			if r, err := http.Get(root + p); err == nil {
				r.Body.Close()
			}
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans, _, err := traces.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]*traces.Span{}
	for i := range spans {
		byID[spans[i].TraceID+spans[i].SpanID] = &spans[i]
	}
	roots, dbServer, resent := 0, 0, 0
	for i := range spans {
		s := &spans[i]
		switch {
		case s.ParentID == "":
			roots++
			if s.Service != edge.ClientService {
				t.Errorf("root span of %q, want %s", s.Service, edge.ClientService)
			}
		case s.Kind == traces.Server && s.Service == "db":
			dbServer++
			p := byID[s.TraceID+s.ParentID]
			if p == nil || p.Kind != traces.Client || p.Service != "gw" {
				t.Errorf("db server span %s: want a gw client span as parent, got %+v", s.SpanID, p)
			} else if p.Resend < 0 {
				t.Errorf("gw client span %s: no http.request.resend_count", p.SpanID)
			} else if p.Resend > 0 {
				resent++
			}
		}
	}
	if int64(roots) != res.Summary.Requests.Offered {
		t.Errorf("%d root spans, want one per logical request: %d", roots, res.Summary.Requests.Offered)
	}
	var dbAttempts int64
	for _, s := range res.Summary.Services {
		if s.Name == "db" {
			dbAttempts = s.Attempts
		}
	}
	if int64(dbServer) != dbAttempts || resent == 0 {
		t.Errorf("db: %d server spans (%d retries), want one per attempt: %d, with retries at error rate 0.5", dbServer, resent, dbAttempts)
	}
}
