package load_test

import (
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/stormsim/stormsim/load"
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
