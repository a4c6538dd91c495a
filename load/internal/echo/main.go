// Command echo is the trivial loopback HTTP target of the load benchmarks
// (make bench-load): it answers every request with 200 and a two-byte body,
// so that what is measured is the load generator, not the target.
//
// By default it answers with httpecho's lean HTTP/1.1 server, which costs
// the machine a fraction of what net/http's server does per request (the
// generator and its target share the cores); -server net answers with
// net/http's server instead, to compare.
//
// It listens on a port the kernel picks and, with -addr-file, writes the
// address it got there; `echo -wait FILE` waits for that file, checks that
// the address answers as echo does (200 and its body) and prints it, so a
// benchmark times its own target and nothing else.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/stormsim/stormsim/load/driver"
	"github.com/stormsim/stormsim/load/internal/benchaddr"
	"github.com/stormsim/stormsim/load/internal/httpecho"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "loopback host:port to listen on (port 0: one the kernel picks)")
	server := flag.String("server", "lean", "the HTTP server that answers: lean (httpecho's) or net (net/http's)")
	addrFile := flag.String("addr-file", "", "write the address listened on to this file once listening")
	wait := flag.String("wait", "", "instead of serving: wait for an echo's -addr-file, check it answers, print its address")
	flag.Parse()
	if *wait != "" {
		addr, err := benchaddr.Wait(*wait, 10*time.Second, answers)
		if err != nil {
			fmt.Fprintln(os.Stderr, "echo:", err)
			os.Exit(1)
		}
		fmt.Println(addr)
		return
	}
	if err := driver.CheckLoopback(*listen); err != nil {
		fmt.Fprintln(os.Stderr, "echo:", err)
		os.Exit(2)
	}
	if *server != "lean" && *server != "net" {
		fmt.Fprintf(os.Stderr, "echo: -server %q: want lean or net\n", *server)
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "echo:", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Printf("echo: listening on http://%s/ (%s server)\n", ln.Addr(), *server)
	if *addrFile != "" {
		if err := benchaddr.Write(*addrFile, ln.Addr().String()); err != nil {
			fmt.Fprintln(os.Stderr, "echo:", err)
			os.Exit(1)
		}
	}
	if *server == "lean" {
		var srv httpecho.Server
		go func() { <-ctx.Done(); srv.Close() }()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, httpecho.ErrClosed) {
			fmt.Fprintln(os.Stderr, "echo:", err)
			os.Exit(1)
		}
		return
	}
	srv := &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(httpecho.Body)) }),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
		fmt.Fprintln(os.Stderr, "echo:", err)
		os.Exit(1)
	}
}

// answers checks that addr answers GET / as echo does: 200 and its body.
func answers(addr string) error {
	if err := driver.CheckLoopback(addr); err != nil {
		return err
	}
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + addr + "/")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || string(b) != httpecho.Body {
		return fmt.Errorf("%s %q, want 200 %q", resp.Status, b, httpecho.Body)
	}
	return nil
}
