package sim

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stormsim/stormsim/topology"
)

// proxyQueueScenario: a proxy in front of one server 200ms slow, its
// edge a pool of one slot (HAProxy's server maxconn 1) whose wait is
// bounded by queue_timeout 50ms; three requests arrive 16.7ms apart, so
// the second and third wait while the first holds the slot.
const proxyQueueScenario = `name: proxy queue
duration: 50ms
workload: {entry: proxy, arrival: constant, rate: 60, client: {timeout: 10s, retry: %s}}
services:
  - name: proxy
    workers: 100
    service_time: {dist: constant, value: 0s}
    calls:
      - {to: app, pool: {size: 1}, queue_timeout: 50ms, retry: %s}
  - name: app
    workers: 10
    service_time: {dist: constant, value: 200ms}
`

// TestProxyQueueTimeout: an attempt that waits past queue_timeout for its
// replica's slot is the proxy's 503 (unavailable): it never reaches the
// server, the proxy's own retries leave it alone (HAProxy retries
// connections and servers' answers, not its queue's 503, even with
// retry-on 503), and the caller above the proxy retries it if its policy
// retries unavailable.
func TestProxyQueueTimeout(t *testing.T) {
	const none = "{max_attempts: 1}"
	for _, tc := range []struct {
		name, client, retry                     string
		attempts, served, failed, queueTimeouts int64
	}{
		{"not retried", none, none, 3, 1, 2, 2},
		{"the proxy retries unavailable: not its own 503", none, "{max_attempts: 2, on: [unavailable], backoff: {initial: 0}}", 3, 1, 2, 2},
		// Each 503 is retried once, at once, by the client: a new request
		// to the proxy, which waits again behind the first request, which
		// holds the slot until 200ms.
		{"the client retries unavailable", "{max_attempts: 2, on: [unavailable], backoff: {initial: 0}}", none, 5, 1, 2, 4},
		{"the client retries timeouts only", "{max_attempts: 2, on: [timeout, not_sent], backoff: {initial: 0}}", none, 3, 1, 2, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := topology.Parse("q.yaml", []byte(fmt.Sprintf(proxyQueueScenario, tc.client, tc.retry)), nil)
			require.NoError(t, err)
			s := runScenario(t, sc).Summary
			require.EqualValues(t, 3, s.Requests.Offered)
			require.Equal(t, s.Requests.Offered-tc.failed, s.Requests.Succeeded)
			require.Equal(t, tc.failed, s.Requests.Failed, "the proxy's 503s fail definitely")
			var e = s.Edges[len(s.Edges)-1]
			require.Equal(t, "app", e.To)
			require.Equal(t, tc.attempts, e.Attempts)
			require.Zero(t, e.NotSent, "a queue timeout is unavailable, not not_sent")
			require.Equal(t, tc.queueTimeouts, e.Pool.PoolTimeouts)
			for _, sv := range s.Services {
				if sv.Name == "app" {
					require.Equal(t, tc.served, sv.Attempts, "only the first request reached the server")
				}
			}
		})
	}
}
