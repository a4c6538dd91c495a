package serve

import (
	"bufio"
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/stretchr/testify/require"

	"github.com/stormsim/stormsim/load/driver"
	"github.com/stormsim/stormsim/load/internal/loadtest"
	"github.com/stormsim/stormsim/load/transport"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/policies"
	"github.com/stormsim/stormsim/topology"
)

// switching answers every request with 101 Switching Protocols and then
// streams bytes until the peer shuts down or the client hangs up: a body
// that, read as one, never ends.
var switching = func(p *peer, c net.Conn) {
	if !readRequest(c) || !p.write(c, []byte("HTTP/1.1 101 Switching Protocols\r\nUpgrade: storm\r\nConnection: Upgrade\r\n\r\n")) {
		return
	}
	chunk := make([]byte, 4<<10)
	for {
		select {
		case <-p.quit:
			return
		case <-time.After(time.Millisecond):
		}
		if !p.write(c, chunk) {
			return
		}
	}
}

// TestAttack101SwitchingProtocolsDoesNotHang drives a target that
// switches protocols and streams forever, with each client: every attempt
// must end within its own timeout as an error, and a run stopped by its
// context (a signal) must end at once with partial results. The stop comes
// when the first request has ended (at about its 0 ms due time), not from
// a wall-clock timer: on a machine busy with other work a timer set for
// 250 ms fired after the last request was due (400 ms), and the run was
// whole. Stopped so, at most the requests due before the stop reached
// the scheduler, 400 ms of margin before the fifth.
func TestAttack101SwitchingProtocolsDoesNotHang(t *testing.T) {
	const (
		rate     = 10
		duration = 500 * time.Millisecond
		timeout  = 300 * time.Millisecond
	)
	for _, tc := range []struct {
		name    string
		netHTTP bool
		stop    bool // cancel the run's context midway, as a signal does
	}{
		{"lean", false, false},
		{"net/http", true, false},
		{"net/http, signal", true, true},
		{"lean, signal", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startPeer(t, switching)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			var attempts, errs, offered int64
			var interrupted bool
			go func() {
				res, err := driver.Run(ctx, driver.Options{
					Target: p.url(), Arrivals: loadtest.Constant(rate, duration), Duration: duration,
					Policy:  topology.Call{Timeout: timeout, Retry: policies.RetryConfig{MaxAttempts: 1}},
					Workers: 8, Seed: 1, NetHTTP: tc.netHTTP, Grace: time.Second,
					OnDone: func(uint64, bool, bool, policies.CallResult) {
						if tc.stop {
							cancel()
						}
					},
				})
				if err == nil {
					l := res.Summary.Load
					attempts, errs, offered = l.Attempts, l.Statuses["101"], res.Summary.Requests.Offered
					interrupted = res.Summary.Status == metrics.StatusInterrupted
				}
				done <- err
			}()
			limit := duration + timeout + time.Second + 5*time.Second
			select {
			case err := <-done:
				require.NoError(t, err)
			case <-time.After(limit):
				t.Fatalf("a run against a target answering 101 did not end within %v", limit)
			}
			require.Positive(t, attempts)
			require.Equal(t, attempts, errs, "every attempt is answered 101 (an error of the target), not hung, timed out or misread")
			if tc.stop {
				require.True(t, interrupted, "a stopped run says its results are partial")
				require.Less(t, offered, int64(rate*duration/time.Second))
			} else {
				require.EqualValues(t, rate*duration/time.Second, offered)
			}
		})
	}
}

// TestAttackGRPCConcurrentBigCallsAreBounded sends many concurrent calls
// of 1 MiB on one connection to a service that holds what it admits: the
// memory serve holds must stay near its held-bodies budget, as HTTP's
// does, however many calls the client opens, and the calls past the
// budget are refused. A call still unsent when its deadline passes
// reaches the service neither admitted nor refused: the 150 MiB share one
// HTTP/2 connection, and with 3 s a machine busy with CPU burners sent
// too few of them in time (59 refused); 8 s leaves every call sent unless
// the transfer runs below 19 MiB/s, and costs the test only the wait of
// the ≈ 8 calls the budget admits.
func TestAttackGRPCConcurrentBigCallsAreBounded(t *testing.T) {
	defer func(n int64) { maxHeldBodies = n }(maxHeldBodies)
	maxHeldBodies = 8 << 20
	cl := startGRPCScenario(t, "bigcalls.yaml", `name: bigcalls
duration: 10s
workload: {entry: api, rate: 1}
services:
  - name: api
    workers: 1
    queue: 1000
    service_time: {dist: constant, value: 2s}
`)
	addr, method, err := transport.ParseGRPCTarget(cl.URLs["api"])
	require.NoError(t, err)
	cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithDisableRetry(),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(maxBody)))
	require.NoError(t, err)
	defer cc.Close()
	const calls = 150
	body := make([]byte, maxBody-64)
	// Collect often, so that the heap measured is near what is live, not
	// the garbage of refused calls awaiting a collection.
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	peak := heapPeak()
	var wg sync.WaitGroup
	var refused, other atomic.Int64
	for range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			err := cc.Invoke(ctx, method, &transport.Frame{Bytes: body}, new(transport.Frame), grpc.ForceCodec(transport.RawCodec{}))
			switch st := status.Convert(err); {
			case (st.Code() == codes.Unavailable || st.Code() == codes.ResourceExhausted) && strings.HasPrefix(st.Message(), "request body: the service already holds"):
				refused.Add(1)
			case st.Code() == codes.OK, st.Code() == codes.DeadlineExceeded:
			default:
				other.Add(1)
				t.Logf("call: %v", err)
			}
		}()
	}
	wg.Wait()
	grew := peak()
	t.Logf("heap grew by %d MiB; %d of %d calls refused", grew>>20, refused.Load(), calls)
	require.Zero(t, other.Load(), "every call admitted, timed out or refused by the budget")
	// The budget holds 8 bodies, and the one worker frees one every 2 s:
	// most calls are refused.
	require.Greater(t, refused.Load(), int64(calls/2), "the held-bodies budget refuses calls past it")
	// The budget, the calls being received and the client's own buffers:
	// not a copy or two of every call's body.
	require.Less(t, grew, uint64(48<<20), "heap grew by %d bytes", grew)
}

// TestAttackLeanUnsolicitedAnswerIsNotTheNextOnes drives a target that
// follows each answer with an unsolicited 503, at once (in the same
// write) or a little later (while the connection is idle): with either
// client, every request must get its own 200, as with net/http, not
// the 503 meant for no one.
func TestAttackLeanUnsolicitedAnswerIsNotTheNextOnes(t *testing.T) {
	const ok, unsolicited = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n"
	// net/http logs each unsolicited answer it drops: expected here. (A
	// cleanup, not a defer: it must outlast the parallel subtests.)
	w := log.Writer()
	t.Cleanup(func() { log.SetOutput(w) })
	log.SetOutput(io.Discard)
	for _, tc := range []struct {
		name    string
		later   bool
		netHTTP bool
	}{
		{"lean, with the answer", false, false},
		{"lean, while idle", true, false},
		{"net/http, with the answer", false, true},
		{"net/http, while idle", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // up to five seconds of real time each, waiting
			p := startPeer(t, func(p *peer, c net.Conn) {
				r := bufio.NewReader(c)
				for {
					if _, err := http.ReadRequest(r); err != nil {
						return
					}
					if !tc.later {
						p.write(c, []byte(ok+unsolicited))
						continue
					}
					if !p.write(c, []byte(ok)) {
						return
					}
					time.Sleep(time.Millisecond)
					p.write(c, []byte(unsolicited))
				}
			})
			rate, span := 10.0, time.Second
			if tc.later {
				rate, span = 2, 5*time.Second
			}
			res, err := driver.Run(context.Background(), driver.Options{
				// Requests spaced (while idle: 500 ms apart), so that the
				// unsolicited answer (1 ms after each) is there before the
				// next request even on a starved CPU (at 100 and 250 ms,
				// CPU burners delayed it past the next request, with either
				// client): its arrival during a request is a race no client
				// can win, net/http's included.
				Target: p.url(), Arrivals: loadtest.Constant(rate, span), Duration: span,
				Policy:  topology.Call{Timeout: time.Second, Retry: policies.RetryConfig{MaxAttempts: 3}},
				Workers: 4, Connections: 2, Seed: 1, NetHTTP: tc.netHTTP,
			})
			require.NoError(t, err)
			r, l := res.Summary.Requests, res.Summary.Load
			require.Equal(t, r.Offered, r.Succeeded, "every request answered by its own 200: %+v, statuses %v", r, l.Statuses)
			require.Equal(t, r.Offered, l.Attempts, "no phantom retries")
		})
	}
}
