// Command grpcecho is the trivial loopback gRPC target of the load
// benchmarks (make bench-load): it answers every
// grpc.health.v1.Health/Check with SERVING, so that what is measured is the
// load generator, not the target.
//
// By default it answers with healthecho's lean HTTP/2 server, which costs
// the machine a fraction of what grpc-go's server does per call (the
// generator and its target share the cores); -server grpc answers with
// grpc-go's server and its health service and server reflection instead,
// to compare. The lean server has no reflection: -protoset writes the
// health service's descriptors for ghz's --protoset.
//
// It listens on a port the kernel picks and, with -addr-file, writes the
// address it got there; `grpcecho -wait FILE` waits for that file, checks
// that the address answers a health check with SERVING and prints it, so
// a benchmark times its own target and nothing else.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	"github.com/stormsim/stormsim/load/driver"
	"github.com/stormsim/stormsim/load/internal/benchaddr"
	"github.com/stormsim/stormsim/load/internal/healthecho"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "loopback host:port to listen on (port 0: one the kernel picks)")
	addrFile := flag.String("addr-file", "", "write the address listened on to this file once listening")
	wait := flag.String("wait", "", "instead of serving: wait for a grpcecho's -addr-file, check it answers, print its address")
	server := flag.String("server", "lean", "the gRPC server that answers: lean (healthecho's) or grpc (grpc-go's, with reflection)")
	protoset := flag.String("protoset", "", "instead of serving: write the health service's descriptor set (for ghz --protoset) to this file")
	flag.Parse()
	if *protoset != "" {
		b, err := healthecho.DescriptorSet()
		if err == nil {
			err = os.WriteFile(*protoset, b, 0o644)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "grpcecho:", err)
			os.Exit(1)
		}
		return
	}
	if *server != "lean" && *server != "grpc" {
		fmt.Fprintf(os.Stderr, "grpcecho: -server %q: want lean or grpc\n", *server)
		os.Exit(2)
	}
	if *wait != "" {
		addr, err := benchaddr.Wait(*wait, 10*time.Second, serving)
		if err != nil {
			fmt.Fprintln(os.Stderr, "grpcecho:", err)
			os.Exit(1)
		}
		fmt.Println(addr)
		return
	}
	if err := driver.CheckLoopback(*listen); err != nil {
		fmt.Fprintln(os.Stderr, "grpcecho:", err)
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "grpcecho:", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var serve func(net.Listener) error
	if *server == "grpc" {
		srv := grpc.NewServer()
		healthpb.RegisterHealthServer(srv, health.NewServer()) // "" is SERVING
		reflection.Register(srv)
		go func() {
			<-ctx.Done()
			srv.GracefulStop()
		}()
		serve = srv.Serve
	} else {
		var srv healthecho.Server
		go func() {
			<-ctx.Done()
			srv.Close()
		}()
		serve = func(ln net.Listener) error {
			if err := srv.Serve(ln); !errors.Is(err, healthecho.ErrClosed) {
				return err
			}
			return nil
		}
	}
	fmt.Printf("grpcecho: %s server listening on grpc://%s/grpc.health.v1.Health/Check\n", *server, ln.Addr())
	if *addrFile != "" {
		if err := benchaddr.Write(*addrFile, ln.Addr().String()); err != nil {
			fmt.Fprintln(os.Stderr, "grpcecho:", err)
			os.Exit(1)
		}
	}
	if err := serve(ln); err != nil {
		fmt.Fprintln(os.Stderr, "grpcecho:", err)
		os.Exit(1)
	}
}

// serving checks that addr answers a health check as grpcecho does.
func serving(addr string) error {
	if err := driver.CheckLoopback(addr); err != nil {
		return err
	}
	cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		return err
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return fmt.Errorf("health %v, want SERVING", resp.GetStatus())
	}
	return nil
}
