// Command grpcecho is the trivial loopback gRPC target of the load
// benchmarks (make bench-load): it serves the standard health service,
// answering every grpc.health.v1.Health/Check with SERVING, and server
// reflection so that ghz needs no proto files, so that what is measured is
// the load generator, not the target.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	"github.com/stormsim/stormsim/load"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:18081", "loopback host:port to listen on")
	flag.Parse()
	if err := load.CheckLoopback(*listen); err != nil {
		fmt.Fprintln(os.Stderr, "grpcecho:", err)
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "grpcecho:", err)
		os.Exit(1)
	}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, health.NewServer()) // "" is SERVING
	reflection.Register(srv)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		srv.GracefulStop()
	}()
	fmt.Printf("grpcecho: listening on grpc://%s/grpc.health.v1.Health/Check\n", ln.Addr())
	if err := srv.Serve(ln); err != nil {
		fmt.Fprintln(os.Stderr, "grpcecho:", err)
		os.Exit(1)
	}
}
