package topology

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stormsim/stormsim/policies"
)

func TestPastedConfigs(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(data), 0o600))
		return p
	}
	write("sc.json", `{"methodConfig": [{"name": [{"service": "a.B"}],
  "retryPolicy": {"maxAttempts": 9, "initialBackoff": "0.1s", "maxBackoff": "1s",
    "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}],
  "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}}`)
	write("route.yaml", "route:\n  retry_policy:\n    retry_on: 5xx\n    num_retries: 2\n    per_try_timeout: 0.2s\n")
	write("cluster.yaml", "circuit_breakers:\n  thresholds:\n    - retry_budget: {budget_percent: {value: 10}}\n")
	write("lb.yaml", "lb_policy: LEAST_REQUEST\noutlier_detection: {consecutive_5xx: 3}\n")
	write("hosts.yaml", "route:\n  retry_policy:\n    retry_on: 5xx\n    retry_host_predicate: [{name: envoy.retry_host_predicates.previous_hosts}]\n")
	write("bad.json", "{\"methodConfig\": [{\"name\": [{}],\n  \"timeout\": \"1s\"}]}")

	t.Run("grpc on a policy file", func(t *testing.T) {
		p := write("policy.yaml", "grpc_service_config: sc.json\ngrpc_method: a.B/C\n")
		data, _ := os.ReadFile(p)
		c, err := ParseCall(p, data)
		require.NoError(t, err)
		require.Equal(t, 5, c.Retry.MaxAttempts, "A6 caps maxAttempts at 5")
		require.Equal(t, policies.BudgetKind(policies.BudgetTokenBucket), c.Budget.Kind)
	})
	t.Run("envoy route and cluster", func(t *testing.T) {
		p := write("policy.yaml", "envoy_route: route.yaml\nenvoy_cluster: cluster.yaml\n")
		data, _ := os.ReadFile(p)
		c, err := ParseCall(p, data)
		require.NoError(t, err)
		require.Equal(t, 3, c.Retry.MaxAttempts)
		require.Equal(t, 200*time.Millisecond, c.Timeout)
		require.Equal(t, 10.0, c.Budget.Percent)
	})
	t.Run("envoy balancing and previous hosts", func(t *testing.T) {
		p := write("policy.yaml", "envoy_route: hosts.yaml\nenvoy_cluster: lb.yaml\n")
		data, _ := os.ReadFile(p)
		c, err := ParseCall(p, data)
		require.NoError(t, err)
		require.Equal(t, BalanceP2C, c.Balance)
		require.True(t, c.Retry.OtherHost)
		// The cluster's consecutive_5xx, and the defaults for the rest.
		require.Equal(t, &OutlierDetection{ConsecutiveFailures: 3, Interval: DefaultOutlierInterval, BaseEjectionTime: DefaultBaseEjectionTime,
			MaxEjectionTime: DefaultMaxEjectionTime, MaxEjectionPercent: DefaultMaxEjectionPercent}, c.OutlierDetection)
	})
	for _, tt := range []struct{ name, policy, want string }{
		{"unsupported field", "grpc_service_config: bad.json\n", "bad.json:2: client.grpc_service_config: methodConfig[0].timeout: not supported"},
		{"conflict", "grpc_service_config: sc.json\nretry: {max_attempts: 2}\n", "client.retry: set by grpc_service_config too"},
		{"method alone", "grpc_method: a.B/C\n", "client.grpc_method: needs grpc_service_config"},
		{"missing file", "envoy_route: nope.yaml\n", "client.envoy_route: stat "},
		{"send rate", "send_rate: {max_tokens: 0, fill_interval: 1s}\n", "client.send_rate.max_tokens: must be ≥ 1"},
		{"hystrix", "breaker: {preset: hystrix, max_concurrent: -1}\n", "client.breaker.max_concurrent: must be ≥ 0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := write("policy.yaml", tt.policy)
			data, _ := os.ReadFile(p)
			_, err := ParseCall(p, data)
			require.ErrorContains(t, err, tt.want)
		})
	}
}
