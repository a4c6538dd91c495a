package policies_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/stormsim/stormsim/paste"
	"github.com/stormsim/stormsim/policies"
)

// scriptedHealth answers attempt k of RPC id with script[id][k−1] (the last
// entry repeating), counting attempts per RPC.
type scriptedHealth struct {
	healthpb.UnimplementedHealthServer
	mu       sync.Mutex
	script   [][]codes.Code
	attempts []int
}

func (s *scriptedHealth) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	id, err := strconv.Atoi(strings.Join(md.Get("rpc"), ""))
	if err != nil || id < 0 || id >= len(s.script) {
		return nil, status.Error(codes.InvalidArgument, "no rpc id")
	}
	s.mu.Lock()
	s.attempts[id]++
	k := s.attempts[id]
	s.mu.Unlock()
	c := s.script[id][min(k, len(s.script[id]))-1]
	if c == codes.OK {
		return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
	}
	return nil, status.Error(c, c.String())
}

// runGRPC sends the scripted RPCs one after another through a real grpc-go
// v1.85.0 client and server on 127.0.0.1 configured by serviceConfig, and
// returns the attempts the server saw for each.
func runGRPC(t *testing.T, serviceConfig string, script [][]codes.Code) []int {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	h := &scriptedHealth{script: script, attempts: make([]int, len(script))}
	healthpb.RegisterHealthServer(srv, h)
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultServiceConfig(serviceConfig))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := healthpb.NewHealthClient(conn)
	for id := range script {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		ctx = metadata.AppendToOutgoingContext(ctx, "rpc", strconv.Itoa(id))
		_, _ = client.Check(ctx, &healthpb.HealthCheckRequest{})
		cancel()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]int(nil), h.attempts...)
}

var codeClass = map[codes.Code]policies.Outcome{codes.OK: policies.OK, codes.Unavailable: policies.Unavailable,
	codes.Internal: policies.Error, codes.DeadlineExceeded: policies.Timeout}

// runPasted runs the same RPCs, one after another, through stormsim's Call
// with the policies paste reads from the same service config, and returns
// the attempts of each.
func runPasted(t *testing.T, serviceConfig string, script [][]codes.Code) []int {
	t.Helper()
	p, err := paste.GRPCServiceConfig("service_config.json", []byte(serviceConfig), "grpc.health.v1.Health/Check")
	if err != nil {
		t.Fatal(err)
	}
	e, err := policies.NewEdge(policies.EdgeConfig{Retry: p.Retry, Budget: p.Budget, Timeout: p.Timeout}, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	attempts := make([]int, len(script))
	var c policies.Call
	now := time.Duration(0)
	for id, s := range script {
		now += time.Second
		a := c.Start(now, e, policies.CallOptions{})
		for a.Kind != policies.Finish {
			switch a.Kind {
			case policies.Send:
				attempts[id]++
				now += time.Millisecond
				a = c.Answered(now, a.Attempt, codeClass[s[min(attempts[id], len(s))-1]], 0, false)
			case policies.Wait:
				now = a.WakeAt
				a = c.Wake(now)
			}
		}
	}
	return attempts
}

func serviceConfig(maxAttempts int, codes []string, maxTokens, tokenRatio float64) string {
	return fmt.Sprintf(`{"methodConfig": [{"name": [{"service": "grpc.health.v1.Health"}],
  "retryPolicy": {"maxAttempts": %d, "initialBackoff": "0.001s", "maxBackoff": "0.002s",
    "backoffMultiplier": 2, "retryableStatusCodes": ["%s"]}}],
  "retryThrottling": {"maxTokens": %v, "tokenRatio": %v}}`, maxAttempts, strings.Join(codes, `", "`), maxTokens, tokenRatio)
}

// TestConformsToGRPCGo runs pasted service configs side by side with real
// grpc-go: the done-when check of issue 15 (4 attempts, then 1 each, against
// an always-UNAVAILABLE backend), then random configs (maxAttempts up to 6,
// so A6's cap of 5 applies; random retryable codes and throttling) with
// random status scripts. Attempts per RPC must agree.
func TestConformsToGRPCGo(t *testing.T) {
	t.Run("always unavailable", func(t *testing.T) {
		sc := serviceConfig(4, []string{"UNAVAILABLE"}, 10, 0.1)
		script := make([][]codes.Code, 8)
		for i := range script {
			script[i] = []codes.Code{codes.Unavailable}
		}
		want := []int{4, 1, 1, 1, 1, 1, 1, 1}
		if got := runGRPC(t, sc, script); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("grpc-go made %v attempts, A6 prescribes %v", got, want)
		}
		if got := runPasted(t, sc, script); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("stormsim made %v attempts, A6 prescribes %v", got, want)
		}
	})
	all := []string{"UNAVAILABLE", "INTERNAL", "DEADLINE_EXCEEDED"}
	outcomes := []codes.Code{codes.OK, codes.Unavailable, codes.Internal, codes.DeadlineExceeded}
	for seed := range uint64(6) {
		r := rand.New(rand.NewPCG(seed, 16))
		var retryable []string
		for _, c := range all {
			if r.IntN(2) == 0 || len(retryable) == 0 && c == all[len(all)-1] {
				retryable = append(retryable, c)
			}
		}
		sc := serviceConfig(2+r.IntN(5), retryable, float64(2+r.IntN(15)), float64(1+r.IntN(60))/100)
		pOK := r.Float64()
		script := make([][]codes.Code, 40)
		for i := range script {
			for range 6 {
				c := codes.OK
				if r.Float64() >= pOK {
					c = outcomes[1+r.IntN(3)]
				}
				script[i] = append(script[i], c)
			}
		}
		real, ours := runGRPC(t, sc, script), runPasted(t, sc, script)
		if fmt.Sprint(real) != fmt.Sprint(ours) {
			t.Fatalf("seed %d, config %s:\ngrpc-go  %v\nstormsim %v", seed, sc, real, ours)
		}
	}
}
