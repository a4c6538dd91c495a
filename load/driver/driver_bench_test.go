package driver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/stormsim/stormsim/internal/cputime"
	"github.com/stormsim/stormsim/load/internal/httpecho"
	"github.com/stormsim/stormsim/load/internal/loadtest"
	"github.com/stormsim/stormsim/policies"
	"github.com/stormsim/stormsim/topology"
)

// rawEcho serves load/internal/echo's answer (httpecho's lean server: 200
// with the two-byte body "ok") on a loopback listener until the test ends.
// It allocates nothing per request, so that a benchmark in this process
// counts the driver's allocations alone.
func rawEcho(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	var srv httpecho.Server
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	tb.Cleanup(func() {
		srv.Close()
		if err := <-done; !errors.Is(err, httpecho.ErrClosed) {
			tb.Errorf("echo server: %v", err)
		}
	})
	return "http://" + ln.Addr().String() + "/"
}

// BenchmarkDriverRequest drives the raw echo target open-loop at 10k and 40k req/s
// with make bench-load's retry policy (1s timeout, 3 attempts) and reports
// the driver's allocations and bytes per logical request (allocs/op, B/op:
// one op is one request; the target allocates nothing per request) and the
// process's CPU time per request (cpu-µs/req), the driver's budget when it
// shares the machine's cores with its target.
// Issue 24 asks for the allocations per request to be halved.
func BenchmarkDriverRequest(b *testing.B) {
	url := rawEcho(b)
	pol := topology.Call{Timeout: time.Second, Retry: policies.RetryConfig{MaxAttempts: 3,
		On:      []policies.RetryClass{"unavailable", "timeout", "error"},
		Backoff: policies.BackoffConfig{Initial: 10 * time.Millisecond, Jitter: "full"}}}
	for _, rate := range []float64{10000, 40000} {
		b.Run(fmt.Sprintf("rate=%g", rate), func(b *testing.B) {
			// Warm the process up (goroutines, buffers) outside the measurement.
			opt := Options{Target: url, Arrivals: loadtest.Constant(rate, time.Hour), Duration: time.Hour,
				Workers: 256, Policy: pol, MaxRequests: 2000}
			if _, err := Run(context.Background(), opt); err != nil {
				b.Fatal(err)
			}
			opt.MaxRequests = uint64(b.N)
			opt.Arrivals = loadtest.Constant(rate, time.Hour) // a run draws its own
			b.ReportAllocs()
			cpu0, cpuOK := cputime.Process()
			b.ResetTimer()
			res, err := Run(context.Background(), opt)
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if cpu1, ok := cputime.Process(); ok && cpuOK {
				// The whole process: the driver and the raw echo, whose
				// share (a read and a write per request) does not change
				// with the driver. The wall time per op is the pacing.
				b.ReportMetric(float64(cpu1-cpu0)/float64(time.Microsecond)/float64(b.N), "cpu-µs/req")
			}
			if ok := res.Summary.Requests.Succeeded; ok != int64(b.N) {
				b.Fatalf("%d of %d requests succeeded", ok, b.N)
			}
		})
	}
}
