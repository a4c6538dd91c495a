package policies

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTransparentRetry checks gRPC A6's transparent retry: a not-sent
// attempt is retried once, at once, outside the attempt limit and the
// budget; a sent attempt (a timeout, an error) never is, so a write is not
// duplicated by it.
func TestTransparentRetry(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cfg    EdgeConfig
		opt    CallOptions
		script []step
		stats  EdgeStats
	}{
		{
			name: "not sent then ok",
			cfg:  EdgeConfig{Timeout: 100 * ms, Retry: RetryConfig{Transparent: true}},
			opt:  CallOptions{Counted: true, Write: true},
			script: []step{
				{at: 0, op: "start", want: send(1, 100*ms)},
				{at: 5 * ms, op: "answer", k: 1, o: NotSent, want: send(2, 100*ms)},
				{at: 9 * ms, op: "answer", k: 2, o: OK, want: finish(OK, Succeeded)},
			},
			stats: EdgeStats{Calls: 1, Attempts: 2, NotSent: 1, TransparentRetries: 1, Succeeded: 1},
		},
		{
			name: "only once, and the call failed, not unknown",
			cfg:  EdgeConfig{Retry: RetryConfig{Transparent: true}},
			opt:  CallOptions{Counted: true, Write: true},
			script: []step{
				{at: 0, op: "start", want: send(1, 0)},
				{at: 5 * ms, op: "answer", k: 1, o: NotSent, want: send(2, 0)},
				{at: 9 * ms, op: "answer", k: 2, o: NotSent, want: finish(NotSent, Failed)},
			},
			stats: EdgeStats{Calls: 1, Attempts: 2, NotSent: 2, TransparentRetries: 1, Failed: 1},
		},
		{
			name: "a sent write that timed out is not retried",
			cfg:  EdgeConfig{Timeout: 10 * ms, Retry: RetryConfig{Transparent: true}},
			opt:  CallOptions{Counted: true, Write: true},
			script: []step{
				{at: 0, op: "start", want: send(1, 10*ms)},
				{at: 10 * ms, op: "timeout", k: 1, want: finish(Timeout, Unknown)},
			},
			stats: EdgeStats{Calls: 1, Attempts: 1, Unknown: 1},
		},
		{
			name: "outside max attempts: a normal retry still follows",
			cfg:  EdgeConfig{Retry: RetryConfig{MaxAttempts: 2, On: []RetryClass{"error"}, Transparent: true}},
			opt:  CallOptions{Counted: true},
			script: []step{
				{at: 0, op: "start", want: send(1, 0)},
				{at: 1 * ms, op: "answer", k: 1, o: NotSent, want: send(2, 0)},
				{at: 2 * ms, op: "answer", k: 2, o: Error, want: send(3, 0)},
				{at: 3 * ms, op: "answer", k: 3, o: Error, want: finish(Error, Failed)},
			},
			stats: EdgeStats{Calls: 1, Attempts: 3, Retries: 1, NotSent: 1, TransparentRetries: 1, Failed: 1},
		},
		{
			name: "without transparent, not_sent is an ordinary retry class",
			cfg:  EdgeConfig{Retry: RetryConfig{MaxAttempts: 2, On: []RetryClass{"not_sent"}, Backoff: BackoffConfig{Initial: 3 * ms}}},
			opt:  CallOptions{Counted: true},
			script: []step{
				{at: 0, op: "start", want: send(1, 0)},
				{at: 1 * ms, op: "answer", k: 1, o: NotSent, want: waitUntil(4 * ms)},
				{at: 4 * ms, op: "wake", want: send(2, 0)},
				{at: 5 * ms, op: "answer", k: 2, o: NotSent, want: finish(NotSent, Failed)},
			},
			stats: EdgeStats{Calls: 1, Attempts: 2, Retries: 1, NotSent: 2, Failed: 1},
		},
		{
			name: "not_sent is not retried by default",
			cfg:  EdgeConfig{Retry: RetryConfig{MaxAttempts: 3}},
			opt:  CallOptions{Counted: true},
			script: []step{
				{at: 0, op: "start", want: send(1, 0)},
				{at: 1 * ms, op: "answer", k: 1, o: NotSent, want: finish(NotSent, Failed)},
			},
			stats: EdgeStats{Calls: 1, Attempts: 1, NotSent: 1, Failed: 1},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEdge(t, tc.cfg)
			runScript(t, e, tc.opt, tc.script)
			require.Equal(t, tc.stats, e.Stats)
		})
	}
}

// TestTransparentRetryAsksNoBudget: a budget that refuses every retry does
// not stop the transparent one.
func TestTransparentRetryAsksNoBudget(t *testing.T) {
	e := newTestEdge(t, EdgeConfig{Retry: RetryConfig{MaxAttempts: 3, On: []RetryClass{"not_sent"}, Transparent: true}})
	e.Budget = &fakeBudget{allow: 0}
	runScript(t, e, CallOptions{Counted: true}, []step{
		{at: 0, op: "start", want: send(1, 0)},
		{at: 1 * ms, op: "answer", k: 1, o: NotSent, want: send(2, 0)},
		{at: 2 * ms, op: "answer", k: 2, o: NotSent, want: finish(NotSent, Failed)},
	})
	require.Equal(t, int64(1), e.Stats.TransparentRetries)
	require.Equal(t, int64(1), e.Stats.RetriesDenied)
}

func TestPhaseTimeoutsValidate(t *testing.T) {
	_, err := NewEdge(EdgeConfig{Phases: PhaseTimeouts{TLS: -1}}, newTestEdge(t, EdgeConfig{}).Rand)
	require.ErrorContains(t, err, "tls_timeout")
	require.NoError(t, PhaseTimeouts{Pool: ms, FirstByte: ms}.Validate())
	require.True(t, Sent(Timeout))
	require.False(t, Sent(NotSent))
}

// TestProxyQueueWait is the time script of a proxy's per-server queue
// (HAProxy's server maxconn + timeout queue): the wait is bounded by
// Queue, and an attempt whose wait ran out is the proxy's own 503:
// unavailable, a failure (the server never saw it), and not retried by the
// proxy's edge even when it retries unavailable (HAProxy's retry-on 503
// retries servers' 503s only). A caller's own pool_timeout stays an
// ordinary not_sent, retried by a policy that retries not_sent.
func TestProxyQueueWait(t *testing.T) {
	d, o := PhaseTimeouts{Queue: 50 * ms}.PoolWait()
	require.Equal(t, 50*ms, d)
	require.Equal(t, Unavailable, o)
	d, o = PhaseTimeouts{Pool: 5 * ms}.PoolWait()
	require.Equal(t, 5*ms, d)
	require.Equal(t, NotSent, o)
	d, o = PhaseTimeouts{}.PoolWait()
	require.Zero(t, d, "no bound: the wait is unbounded")
	require.Equal(t, NotSent, o)
	require.ErrorContains(t, PhaseTimeouts{Pool: ms, Queue: ms}.Validate(), "queue_timeout")
	require.ErrorContains(t, PhaseTimeouts{Queue: -1}.Validate(), "queue_timeout")

	every := []RetryClass{"unavailable", "not_sent", "timeout", "error"}
	for _, tc := range []struct {
		name   string
		phases PhaseTimeouts
		script []step
		stats  EdgeStats
	}{
		{"the queue's 503 ends the call", PhaseTimeouts{Queue: 50 * ms}, []step{
			{at: 0, op: "start", want: send(1, 300*ms)},
			{at: 50 * ms, op: "waitout", k: 1, want: finish(Unavailable, Failed)},
			{at: 60 * ms, op: "answer", k: 1, o: OK, want: Action{}},
		}, EdgeStats{Calls: 1, Attempts: 1, Failed: 1}},
		{"a server's 503 is retried", PhaseTimeouts{Queue: 50 * ms}, []step{
			{at: 0, op: "start", want: send(1, 300*ms)},
			{at: 10 * ms, op: "answer", k: 1, o: Unavailable, want: send(2, 300*ms)},
			{at: 60 * ms, op: "waitout", k: 2, want: finish(Unavailable, Failed)},
		}, EdgeStats{Calls: 1, Attempts: 2, Retries: 1, Failed: 1}},
		{"the caller's pool_timeout: not_sent, retried", PhaseTimeouts{Pool: 5 * ms}, []step{
			{at: 0, op: "start", want: send(1, 300*ms)},
			{at: 5 * ms, op: "waitout", k: 1, want: send(2, 300*ms)},
			{at: 10 * ms, op: "waitout", k: 2, want: finish(NotSent, Failed)},
		}, EdgeStats{Calls: 1, Attempts: 2, Retries: 1, NotSent: 2, Failed: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEdge(t, EdgeConfig{Timeout: 300 * ms, Phases: tc.phases,
				Retry: RetryConfig{MaxAttempts: 2, On: every, Backoff: BackoffConfig{Initial: 0}}})
			runScript(t, e, CallOptions{Counted: true, Write: true}, tc.script)
			require.Equal(t, tc.stats, e.Stats)
		})
	}
}
