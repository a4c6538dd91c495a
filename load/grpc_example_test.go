package load_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/stormsim/stormsim/load"
	"github.com/stormsim/stormsim/policies"
	"github.com/stormsim/stormsim/topology"
)

func ExampleParseGRPCTarget() {
	addr, method, err := load.ParseGRPCTarget("grpc://127.0.0.1:9000/pkg.Orders/Create")
	fmt.Println(addr, method, err)
	// Output: 127.0.0.1:9000 /pkg.Orders/Create <nil>
}

func ExampleClassifyGRPC() {
	// A callee pushing back for 250 ms (gRFC A6), then one asking not to retry.
	a := load.ClassifyGRPC(status.Error(codes.ResourceExhausted, "busy"), metadata.Pairs(load.MetadataPushback, "250"))
	fmt.Println(a.Outcome, a.RetryAfter, a.DontRetry)
	a = load.ClassifyGRPC(status.Error(codes.ResourceExhausted, "busy"), metadata.Pairs(load.MetadataPushback, "-1"))
	fmt.Println(a.Outcome, a.RetryAfter, a.DontRetry)
	// Output:
	// unavailable 250ms false
	// unavailable 0s true
}

func ExampleEdgeClient_UnaryClientInterceptor() {
	// The policy a --policy file or a scenario's workload.client holds.
	policy, err := topology.ParseCall("client.yaml", []byte("timeout: 200ms\nretry: {max_attempts: 3, on: [unavailable]}\nhonor_pushback: true\n"))
	if err != nil {
		fmt.Println(err)
		return
	}
	edge, err := policies.NewEdge(policy.EdgeConfig(), rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		fmt.Println(err)
		return
	}
	ec := load.NewEdgeClient(time.Now(), nil, edge, nil)
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDisableRetry(), // stormsim's policy retries, not grpc-go
		grpc.WithUnaryInterceptor(ec.UnaryClientInterceptor(true)),
	}
	// Optional: trace each attempt's phases into ec.Phases and enforce
	// the policy's phase timeouts.
	opts = append(opts, ec.GRPCDialOptions()...)
	cc, err := grpc.NewClient("passthrough:///127.0.0.1:9000", opts...)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cc.Close()
	fmt.Println("every unary call on cc now runs through the policy")
	// Output: every unary call on cc now runs through the policy
}

func ExampleGRPCClient_SendTraced() {
	// A listener whose kernel accepts the TCP connection but which never
	// speaks HTTP/2: the call never leaves, so it is not sent (the callee
	// cannot have seen it), and it failed in the handshake (tls), once
	// its phase timeout ran out. The listener stays open throughout, so
	// no other program can take its port meanwhile.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ln.Close()
	gc, err := load.NewGRPCClient(load.GRPCClientOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer gc.Close()
	var rec load.PhaseRecorder
	an := gc.SendTraced(context.Background(), &load.Attempt{URL: "grpc://" + ln.Addr().String() + "/pkg.Orders/Create", Write: true, Number: 1},
		policies.PhaseTimeouts{TLS: 100 * time.Millisecond, FirstByte: time.Second}, true, &rec)
	fmt.Println(an.Outcome, an.Phase, an.NotSent)
	rep := rec.Report()
	fmt.Println(rep.NotSent, rep.FailedIn)
	// Output:
	// not_sent tls true
	// 1 map[tls:1]
}
