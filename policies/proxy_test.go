package policies

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestProxyRuleScripts are time scripts of the reverse proxies' rules:
// nginx's held writes and proxy_next_upstream_timeout, HAProxy's
// turn-around and its redispatched retries.
func TestProxyRuleScripts(t *testing.T) {
	nginx := RetryConfig{Preset: "nginx", MaxAttempts: 3}
	haproxy := RetryConfig{Preset: "haproxy"}
	tests := []struct {
		name   string
		cfg    EdgeConfig
		opt    CallOptions
		script []step
	}{
		{
			name: "nginx passes a read on after a timeout, at once",
			cfg:  EdgeConfig{Retry: nginx, Timeout: 100 * ms},
			script: []step{
				{at: 0, op: "start", want: send(1, 100*ms)},
				{at: 100 * ms, op: "timeout", k: 1, want: send(2, 100*ms)},
				{at: 200 * ms, op: "timeout", k: 2, want: send(3, 100*ms)},
				{at: 300 * ms, op: "timeout", k: 3, want: finish(Timeout, Unknown)},
			},
		},
		{
			name: "nginx does not pass a sent write on",
			cfg:  EdgeConfig{Retry: nginx, Timeout: 100 * ms},
			opt:  CallOptions{Write: true},
			script: []step{
				{at: 0, op: "start", want: send(1, 100*ms)},
				{at: 100 * ms, op: "timeout", k: 1, want: finish(Timeout, Unknown)},
			},
		},
		{
			name: "nginx passes a write on after a connect failure",
			cfg:  EdgeConfig{Retry: nginx, Timeout: 100 * ms},
			opt:  CallOptions{Write: true},
			script: []step{
				{at: 0, op: "start", want: send(1, 100*ms)},
				{at: 1 * ms, op: "answer", k: 1, o: NotSent, want: send(2, 100*ms)},
				{at: 50 * ms, op: "answer", k: 2, o: Unavailable, want: finish(Unavailable, Failed)},
			},
		},
		{
			name: "nginx passes on the status it was not told to retry",
			cfg:  EdgeConfig{Retry: nginx},
			script: []step{
				{at: 0, op: "start", want: send(1, 0)},
				{at: 1 * ms, op: "answer", k: 1, o: Unavailable, want: finish(Unavailable, Failed)},
			},
		},
		{
			name: "proxy_next_upstream_timeout forbids a new try, not the one running",
			cfg:  EdgeConfig{Retry: RetryConfig{Preset: "nginx", MaxAttempts: 3, RetryWindow: 150 * ms}, Timeout: 100 * ms},
			script: []step{
				{at: 0, op: "start", want: send(1, 100*ms)},
				{at: 100 * ms, op: "timeout", k: 1, want: send(2, 100*ms)}, // 100 ms < 150 ms: a new try
				{at: 200 * ms, op: "timeout", k: 2, want: finish(Timeout, Unknown)},
			},
		},
		{
			name: "haproxy waits its turn-around after a connect failure; retries 3 is 4 attempts",
			cfg:  EdgeConfig{Retry: haproxy},
			script: []step{
				{at: 0, op: "start", want: send(1, 0)},
				{at: 1 * ms, op: "answer", k: 1, o: NotSent, want: waitUntil(1001 * ms)},
				{at: 1001 * ms, op: "wake", want: send(2, 0)},
				{at: 1002 * ms, op: "answer", k: 2, o: NotSent, want: waitUntil(2002 * ms)},
				{at: 2002 * ms, op: "wake", want: send(3, 0)},
				{at: 2003 * ms, op: "answer", k: 3, o: NotSent, want: waitUntil(3003 * ms)},
				{at: 3003 * ms, op: "wake", want: send(4, 0)},
				{at: 3004 * ms, op: "answer", k: 4, o: NotSent, want: finish(NotSent, Failed)},
			},
		},
		{
			name: "haproxy's redispatched last retry goes at once",
			cfg:  EdgeConfig{Retry: RetryConfig{Preset: "haproxy", Redispatch: -1}},
			script: []step{
				{at: 0, op: "start", want: send(1, 0)},
				{at: 1 * ms, op: "answer", k: 1, o: NotSent, want: waitUntil(1001 * ms)},
				{at: 1001 * ms, op: "wake", want: send(2, 0)},
				{at: 1002 * ms, op: "answer", k: 2, o: NotSent, want: waitUntil(2002 * ms)},
				{at: 2002 * ms, op: "wake", want: send(3, 0)},
				{at: 2003 * ms, op: "answer", k: 3, o: NotSent, want: send(4, 0)},
				{at: 2004 * ms, op: "answer", k: 4, o: OK, want: finish(OK, Succeeded)},
			},
		},
		{
			name: "haproxy retries a write after a 503 when told to (retry-on 503)",
			cfg:  EdgeConfig{Retry: RetryConfig{Preset: "haproxy", On: []RetryClass{"unavailable"}}},
			opt:  CallOptions{Write: true},
			script: []step{
				{at: 0, op: "start", want: send(1, 0)},
				{at: 1 * ms, op: "answer", k: 1, o: Unavailable, want: send(2, 0)},
				{at: 2 * ms, op: "answer", k: 2, o: NotSent, want: finish(NotSent, Failed)}, // conn-failure replaced
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runScript(t, newTestEdge(t, tt.cfg), tt.opt, tt.script)
		})
	}
}

// TestRedispatchAt follows HAProxy 2.6's stream_choose_redispatch:
// redispatch_after P > 0 every P-th retry, −N on retry (retries+1−N)·k.
func TestRedispatchAt(t *testing.T) {
	tests := []struct {
		every, attempts int
		want            []bool // retries 1..attempts−1
	}{
		{0, 4, []bool{false, false, false}},
		{-1, 4, []bool{false, false, true}},
		{-2, 4, []bool{false, true, false}},
		{1, 4, []bool{true, true, true}},
		{2, 5, []bool{false, true, false, true}},
		{-1, 2, []bool{true}},
		{-3, 2, []bool{false}}, // before the first retry: never
	}
	for _, tt := range tests {
		c := RetryConfig{SameServer: true, Redispatch: tt.every, MaxAttempts: tt.attempts}
		var got []bool
		for n := 1; n < tt.attempts; n++ {
			got = append(got, c.RedispatchAt(n))
		}
		require.Equal(t, tt.want, got, "redispatch %d, %d attempts", tt.every, tt.attempts)
	}
}

// TestProxyRetryValidation refuses the combinations no proxy has.
func TestProxyRetryValidation(t *testing.T) {
	tests := []struct {
		cfg  RetryConfig
		want string
	}{
		{RetryConfig{EachServerOnce: true, SameServer: true}, "retry.same_server: contradicts each_server_once"},
		{RetryConfig{Redispatch: -1}, "retry.redispatch: needs same_server"},
		{RetryConfig{SameServer: true, TurnAround: -time.Second}, "retry.turn_around: must be ≥ 0"},
		{RetryConfig{RetryWindow: -time.Second}, "retry.retry_window: must be ≥ 0"},
		{RetryConfig{MaxAttempts: -1, EachServerOnce: true}, "retry.max_attempts: must be ≥ 1"},
	}
	for _, tt := range tests {
		err := tt.cfg.Validate()
		require.Error(t, err)
		require.Contains(t, err.Error(), tt.want)
	}
	require.NoError(t, RetryConfig{Preset: "nginx"}.Validate(), "max_attempts 0 means every replica")
	_, err := NewEdge(EdgeConfig{Retry: RetryConfig{Preset: "nginx"}}, newTestEdge(t, EdgeConfig{}).Rand)
	require.ErrorContains(t, err, "resolve it against the callee's replicas")
}
