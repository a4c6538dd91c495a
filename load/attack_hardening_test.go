package load

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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
// context (a signal) must end at once with partial results.
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
			if tc.stop {
				time.AfterFunc(duration/2, cancel)
			}
			done := make(chan error, 1)
			var attempts, errs, offered int64
			var interrupted bool
			go func() {
				res, err := Run(ctx, Options{
					Target: p.url(), Pacer: ConstantPacer{Rate: rate, Duration: duration}, Duration: duration,
					Policy:  topology.Call{Timeout: timeout, Retry: policies.RetryConfig{MaxAttempts: 1}},
					Workers: 8, Seed: 1, NetHTTP: tc.netHTTP, Grace: time.Second,
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
