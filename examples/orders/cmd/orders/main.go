// Command orders runs one instance of the reference orders service
// (package github.com/stormsim/stormsim/examples/orders), the target that
// `stormsim audit` is proven against. Start two on one database to audit a
// service of two instances:
//
//	orders -listen 127.0.0.1:8081 -db sqlite:///tmp/orders.db &
//	orders -listen 127.0.0.1:8082 -db sqlite:///tmp/orders.db &
//	stormsim audit examples/orders/audit.yaml
//
// and -bug NAME to put one classic idempotency mistake in. It prints the
// address it listens on, and stops cleanly on SIGINT or SIGTERM.
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
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/stormsim/stormsim/examples/orders"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the whole command, returning its exit code: 0, 1 when serving
// failed, 2 for bad usage.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("orders", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		opts       orders.Options
		listen     = fs.String("listen", "127.0.0.1:8081", "`address` to listen on (host:port; port 0 picks a free one)")
		dsn        = fs.String("db", "sqlite://"+filepath.Join(os.TempDir(), "stormsim-orders.db"), "database: sqlite:///path/file.db, a plain path, or postgres://…; instances given the same one share it")
		crashEvery = fs.Int("crash-every", 0, "crash after the effect of every `N`th order (drop the connection, write nothing more); 0: never")
		remote     = fs.Bool("allow-remote", false, "allow a listen address that is not loopback")
	)
	opts.Bug = orders.BugNone
	fs.Var(&opts.Bug, "bug", "the `mistake` to put in: "+bugNames()+" (none is the correct service)")
	fs.DurationVar(&opts.Work, "work", 20*time.Millisecond, "processing time inside the critical section")
	fs.DurationVar(&opts.Lease, "lease", orders.DefaultLease, "how long a request owns its key before another may take it over")
	fs.IntVar(&opts.MismatchStatus, "mismatch-status", orders.DefaultMismatchStatus, "status refusing a key reused with a different body (422 or 409)")
	fs.StringVar(&opts.KeyHeader, "key-header", orders.DefaultKeyHeader, "idempotency key header")
	fs.StringVar(&opts.TenantHeader, "tenant-header", orders.DefaultTenantHeader, "tenant header")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "orders: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if err := opts.Validate(); err != nil {
		fmt.Fprintf(stderr, "orders: %v\n", err)
		return 2
	}
	if *crashEvery < 0 {
		fmt.Fprintf(stderr, "orders: -crash-every: must be >= 0, got %d\n", *crashEvery)
		return 2
	}
	if err := checkLoopback(*listen, *remote); err != nil {
		fmt.Fprintf(stderr, "orders: -listen: %v\n", err)
		return 2
	}
	if *crashEvery > 0 {
		var n atomic.Int64
		every := int64(*crashEvery)
		opts.CrashAfterEffect = func() bool { return n.Add(1)%every == 0 }
	}

	db, err := orders.Open(*dsn)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	defer db.Close()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "orders: %v\n", err)
		return 1
	}
	srv := &http.Server{Handler: orders.New(db, opts), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stdout, "orders: listening on http://%s (bug %s, db %s)\n", ln.Addr(), opts.Bug, *dsn)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		fmt.Fprintf(stderr, "orders: %v\n", err)
		return 1
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		fmt.Fprintf(stderr, "orders: shutdown: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, "orders: stopped")
	return 0
}

func bugNames() string {
	var names []string
	for _, b := range orders.Bugs() {
		names = append(names, b.String())
	}
	return strings.Join(names, ", ")
}

// checkLoopback refuses a listen address off loopback unless allowed: the
// example service is a test target, not something to expose.
func checkLoopback(addr string, allowRemote bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if allowRemote || host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%q is not a loopback address (use -allow-remote to listen on it)", addr)
	}
	return nil
}
