package edge_test

import (
	"fmt"
	"math/rand/v2"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/stormsim/stormsim/load/edge"
	"github.com/stormsim/stormsim/load/transport"
	"github.com/stormsim/stormsim/policies"
	"github.com/stormsim/stormsim/topology"
)

func ExampleParseGRPCTarget() {
	addr, method, err := transport.ParseGRPCTarget("grpc://127.0.0.1:9000/pkg.Orders/Create")
	fmt.Println(addr, method, err)
	// Output: 127.0.0.1:9000 /pkg.Orders/Create <nil>
}

func ExampleClassifyGRPC() {
	// A callee pushing back for 250 ms (gRFC A6), then one asking not to retry.
	a := transport.ClassifyGRPC(status.Error(codes.ResourceExhausted, "busy"), metadata.Pairs(transport.MetadataPushback, "250"))
	fmt.Println(a.Outcome, a.RetryAfter, a.DontRetry)
	a = transport.ClassifyGRPC(status.Error(codes.ResourceExhausted, "busy"), metadata.Pairs(transport.MetadataPushback, "-1"))
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
	pe, err := policies.NewEdge(policy.EdgeConfig(), rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		fmt.Println(err)
		return
	}
	ec := edge.NewEdgeClient(edge.EdgeConfig{Edge: pe})
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
