package faultproxy

import (
	"context"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/stormsim/stormsim/topology"
)

// TestGRPCThroughH2C: a gRPC call goes through a proxy with H2C and is
// answered as the upstream answered; an injected 503 reaches the client as
// UNAVAILABLE without reaching the upstream; a dropped reply reaches the
// upstream and the client gets no answer.
func TestGRPCThroughH2C(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int64
	gs := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		calls.Add(1)
		return h(ctx, req)
	}))
	healthpb.RegisterHealthServer(gs, health.NewServer())
	go gs.Serve(l)
	defer gs.Stop()
	for _, tc := range []struct {
		name  string
		fault topology.ProxyFault
		code  codes.Code
		calls int64
	}{
		{"no fault", topology.ProxyFault{}, codes.OK, 1},
		{"error", topology.ProxyFault{ErrorRate: 1}, codes.Unavailable, 0},
		{"drop", topology.ProxyFault{DropResponse: 1}, codes.Unknown, 1}, // any failure code
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls.Store(0)
			var rec atomic.Pointer[Record]
			px := startProxy(t, Config{Upstream: "http://" + l.Addr().String(), H2C: true,
				Faults: []topology.ProxyFault{tc.fault}, OnRecord: func(r Record) { rec.Store(&r) }})
			conn, err := grpc.NewClient(strings.TrimPrefix(px.URL, "http://"), grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
			code := status.Code(err)
			switch {
			case tc.code == codes.OK && (err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING):
				t.Errorf("through the proxy: %v, %v", resp, err)
			case tc.code == codes.Unknown && err == nil:
				t.Errorf("a dropped reply was answered: %v", resp)
			case tc.code != codes.OK && tc.code != codes.Unknown && code != tc.code:
				t.Errorf("code %v (%v), want %v", code, err, tc.code)
			}
			if n := calls.Load(); n != tc.calls {
				t.Errorf("upstream got %d calls, want %d", n, tc.calls)
			}
			deadline := time.Now().Add(time.Second)
			for rec.Load() == nil && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			if r := rec.Load(); r == nil || r.Path != "/grpc.health.v1.Health/Check" || (tc.calls == 1) != (r.UpstreamStatus == 200) {
				t.Errorf("record %+v", r)
			}
		})
	}
}
