package load

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stormsim/stormsim/internal/cputime"
	"github.com/stormsim/stormsim/policies"
	"github.com/stormsim/stormsim/topology"
)

// echoResponse is load/internal/echo's answer to every request: 200 with
// the two-byte body "ok".
const echoResponse = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nok"

// rawEcho serves echoResponse to every request on a loopback listener, one
// goroutine per connection, reading each request's head into a reused
// buffer: it answers as load/internal/echo does but allocates nothing per
// request, so that a benchmark in this process counts the driver's
// allocations alone. Requests must carry no body (the driver's GETs).
func rawEcho(tb testing.TB) string {
	return "http://" + serveConns(tb, serveRawEcho) + "/"
}

// serveConns accepts connections on a loopback listener until the test
// ends, handling each in a goroutine of its own (which returns when its
// connection is closed), and returns the listener's address.
func serveConns(tb testing.TB, handle func(net.Conn)) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	var wg sync.WaitGroup
	tb.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				handle(c)
			}()
		}
	}()
	return ln.Addr().String()
}

func serveRawEcho(c net.Conn) {
	r := bufio.NewReaderSize(c, 4096)
	w := bufio.NewWriterSize(c, 4096)
	for {
		// A request head ends with an empty line.
		for {
			line, err := r.ReadSlice('\n')
			if err != nil {
				return
			}
			if len(bytes.TrimRight(line, "\r\n")) == 0 {
				break
			}
		}
		w.WriteString(echoResponse)
		if r.Buffered() == 0 { // flush once per batch of pipelined requests
			if w.Flush() != nil {
				return
			}
		}
	}
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
			opt := Options{Target: url, Pacer: ConstantPacer{Rate: rate, Duration: time.Hour}, Duration: time.Hour,
				Workers: 256, Policy: pol, MaxRequests: 2000}
			if _, err := Run(context.Background(), opt); err != nil {
				b.Fatal(err)
			}
			opt.MaxRequests = uint64(b.N)
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
