package transport_test

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/stormsim/stormsim/load/transport"
	"github.com/stormsim/stormsim/policies"
)

func ExampleGRPCClient_Send() {
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
	gc, err := transport.NewGRPCClient(transport.GRPCClientOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer gc.Close()
	var rec transport.PhaseRecorder
	an := gc.Send(context.Background(), &transport.Attempt{URL: "grpc://" + ln.Addr().String() + "/pkg.Orders/Create", Write: true, Number: 1},
		transport.Sending{Phases: policies.PhaseTimeouts{TLS: 100 * time.Millisecond, FirstByte: time.Second}, PhaseAware: true, Record: &rec})
	fmt.Println(an.Outcome, an.Phase, an.NotSent)
	rep := rec.Report()
	fmt.Println(rep.NotSent, rep.FailedIn)
	// Output:
	// not_sent tls true
	// 1 map[tls:1]
}
