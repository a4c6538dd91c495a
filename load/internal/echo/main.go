// Command echo is the trivial loopback HTTP target of the load benchmarks
// (make bench-load): it answers every request with 200 and a two-byte body,
// so that what is measured is the load generator, not the target.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/stormsim/stormsim/load"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:18080", "loopback host:port to listen on")
	flag.Parse()
	if err := load.CheckLoopback(*listen); err != nil {
		fmt.Fprintln(os.Stderr, "echo:", err)
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "echo:", err)
		os.Exit(1)
	}
	srv := &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) }),
		ReadHeaderTimeout: 10 * time.Second,
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	fmt.Printf("echo: listening on http://%s/\n", ln.Addr())
	if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
		fmt.Fprintln(os.Stderr, "echo:", err)
		os.Exit(1)
	}
}
