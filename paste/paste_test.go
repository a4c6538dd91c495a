package paste

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stormsim/stormsim/policies"
)

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile("testdata/" + name)
	require.NoError(t, err)
	return data
}

func TestGRPCServiceConfig(t *testing.T) {
	data := readTestdata(t, "grpc_service_config.json")
	budget := &policies.BudgetConfig{Kind: policies.BudgetTokenBucket, MaxTokens: 10, TokenRatio: 0.123}
	tests := []struct {
		method string
		want   Policies
	}{
		{"shop.Cart/Put", Policies{Retried: true, Budget: budget, Retry: policies.RetryConfig{
			MaxAttempts: 5, On: []policies.RetryClass{"unavailable"},
			Backoff: policies.BackoffConfig{Initial: 100 * time.Millisecond, Max: time.Second, Multiplier: 2, Jitter: "proportional", Spread: 0.2}}}},
		{"shop.Cart/Get", Policies{Retried: true, Budget: budget,
			Retry: policies.RetryConfig{MaxAttempts: 1, On: []policies.RetryClass{"unavailable", "timeout"}},
			Hedge: &policies.HedgeConfig{MaxAttempts: 3, Delay: 50 * time.Millisecond}}},
	}
	for _, tt := range tests {
		t.Run(tt.method, func(t *testing.T) {
			got, err := GRPCServiceConfig("sc.json", data, tt.method)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestEnvoy(t *testing.T) {
	got, err := EnvoyRoute("route.yaml", readTestdata(t, "envoy_route.yaml"))
	require.NoError(t, err)
	require.Equal(t, Policies{Retried: true, Timeout: 250 * time.Millisecond, HonorPushback: true, MaxPushback: 10 * time.Second,
		Retry: policies.RetryConfig{MaxAttempts: 4, On: []policies.RetryClass{"unavailable", "timeout", "error"},
			Backoff: policies.BackoffConfig{Initial: 50 * time.Millisecond, Multiplier: 2, Max: time.Second, Jitter: "full"}}}, got)

	got, err = EnvoyCluster("cluster.yaml", readTestdata(t, "envoy_cluster.yaml"))
	require.NoError(t, err)
	require.Equal(t, &policies.BudgetConfig{Kind: policies.BudgetConcurrency, Percent: 25, MinConcurrency: 2}, got.Budget)

	got, err = EnvoyCluster("cluster.yaml", []byte("name: x\ncircuit_breakers: {thresholds: [{max_retries: 5}]}\n"))
	require.NoError(t, err)
	require.Equal(t, 5, got.Budget.MinConcurrency, "max_retries without a retry_budget")
	b, err := policies.NewBudget(*got.Budget)
	require.NoError(t, err)
	for range 1000 {
		b.OnRequest(0)
	}
	require.InDelta(t, 5, b.Level(0), 0, "max_retries bounds concurrent retries whatever the traffic")
}

// TestProblemsNameFileLineField checks that what cannot be used is named,
// never dropped: each case's message must hold file:line: field.
func TestProblemsNameFileLineField(t *testing.T) {
	tests := []struct {
		name, kind, src, method, want string
	}{
		{"grpc timeout", "grpc", `{"methodConfig": [{"name": [{}],
  "timeout": "1s"}]}`, "", "f:2: methodConfig[0].timeout: not supported"},
		{"grpc lb", "grpc", `{"loadBalancingConfig": [{"round_robin": {}}]}`, "", "f:1: loadBalancingConfig: not supported"},
		{"grpc both policies", "grpc", `{"methodConfig": [{"name": [{}], "retryPolicy": {}, "hedgingPolicy": {"maxAttempts": 2}}]}`, "", "hedgingPolicy: a methodConfig has retryPolicy or hedgingPolicy, not both"},
		{"grpc missing fields", "grpc", `{"methodConfig": [{"name": [{}], "retryPolicy": {"maxAttempts": 3}}]}`, "", "methodConfig[0].retryPolicy.initialBackoff: required"},
		{"grpc code", "grpc", "{\"methodConfig\": [{\"name\": [{}], \"retryPolicy\": {\"maxAttempts\": 3, \"initialBackoff\": \"1s\",\n \"maxBackoff\": \"1s\", \"backoffMultiplier\": 2,\n \"retryableStatusCodes\": [\"ABORTED\"]}}]}", "", "f:3: methodConfig[0].retryPolicy.retryableStatusCodes[0]: ABORTED: no stormsim callee answers"},
		{"grpc attempts", "grpc", `{"methodConfig": [{"name": [{}], "hedgingPolicy": {"maxAttempts": 1}}]}`, "", "hedgingPolicy.maxAttempts: want a whole number in [2,"},
		{"grpc several", "grpc", `{"methodConfig": [{"name": [{"service": "a"}]}, {"name": [{"service": "b"}]}]}`, "", "name the one to use with grpc_method"},
		{"grpc no match", "grpc", `{"methodConfig": [{"name": [{"service": "a"}]}]}`, "b/M", "no methodConfig names b/M"},
		{"grpc tokens", "grpc", `{"retryThrottling": {"maxTokens": 1001, "tokenRatio": 0.0001}}`, "", "retryThrottling.maxTokens: must be in (0, 1000]"},
		{"envoy route timeout", "route", "route:\n  timeout: 15s\n", "", "f:2: route.timeout: not supported"},
		{"envoy retry_on", "route", "route:\n  retry_policy:\n    retry_on: 5xx,retriable-4xx\n", "", "f:3: route.retry_policy.retry_on: condition \"retriable-4xx\" is not supported"},
		{"envoy predicate", "route", "route:\n  retry_policy:\n    retry_on: 5xx\n    retry_host_predicate:\n      - name: envoy.retry_host_predicates.omit_canary_hosts\n", "", "f:5: route.retry_policy.retry_host_predicate[0].name: \"envoy.retry_host_predicates.omit_canary_hosts\" is not supported"},
		{"envoy host selection", "route", "route:\n  retry_policy:\n    retry_on: 5xx\n    host_selection_retry_max_attempts: 3\n", "", "f:4: route.retry_policy.host_selection_retry_max_attempts: not supported"},
		{"envoy header", "route", "route:\n  retry_policy:\n    retry_on: 5xx\n    rate_limited_retry_back_off:\n      reset_headers:\n        - {name: X-RateLimit-Reset, format: UNIX_TIMESTAMP}\n", "", "f:6: route.retry_policy.rate_limited_retry_back_off.reset_headers[0].format"},
		{"envoy cluster limit", "cluster", "circuit_breakers:\n  thresholds:\n    - max_requests: 100\n", "", "f:3: circuit_breakers.thresholds[0].max_requests: not supported"},
		{"envoy cluster lb", "cluster", "name: a\nlb_policy: MAGLEV\n", "", "f:2: lb_policy: \"MAGLEV\" is not supported"},
		{"envoy choice count", "cluster", "lb_policy: LEAST_REQUEST\nleast_request_lb_config: {choice_count: 3}\n", "", "f:2: least_request_lb_config.choice_count"},
		{"envoy success rate", "cluster", "outlier_detection:\n  enforcing_success_rate: 100\n", "", "f:2: outlier_detection.enforcing_success_rate: not supported"},
		{"envoy priority", "cluster", "circuit_breakers:\n  thresholds:\n    - priority: HIGH\n", "", "f:3: circuit_breakers.thresholds[0].priority: only DEFAULT"},
		{"not yaml", "cluster", "a: [", "", "f: not YAML or JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			switch tt.kind {
			case "grpc":
				_, err = GRPCServiceConfig("f", []byte(tt.src), tt.method)
			case "route":
				_, err = EnvoyRoute("f", []byte(tt.src))
			case "cluster":
				_, err = EnvoyCluster("f", []byte(tt.src))
			}
			require.Error(t, err)
			var ps Problems
			require.True(t, errors.As(err, &ps))
			require.Contains(t, err.Error(), tt.want)
			for _, p := range ps {
				require.True(t, strings.HasPrefix(p.Error(), "f"), p.Error())
			}
		})
	}
}

func FuzzPaste(f *testing.F) {
	for _, name := range []string{"grpc_service_config.json", "envoy_route.yaml", "envoy_cluster.yaml"} {
		data, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"methodConfig": [{"name": [{}], "retryPolicy": {"maxAttempts": "1e400"}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		// No input may panic; whatever is accepted must build.
		check := func(p Policies, err error) {
			if err != nil {
				return
			}
			if p.Retried {
				if err := p.Retry.Validate(); err != nil {
					t.Fatalf("accepted retry does not validate: %v (%+v)", err, p.Retry)
				}
			}
			if p.Budget != nil {
				if _, err := policies.NewBudget(*p.Budget); err != nil {
					t.Fatalf("accepted budget does not build: %v (%+v)", err, *p.Budget)
				}
			}
		}
		check(GRPCServiceConfig("f", data, "a.B/C"))
		check(GRPCServiceConfig("f", data, ""))
		check(EnvoyRoute("f", data))
		check(EnvoyCluster("f", data))
	})
}

// TestEnvoyPreviousHosts: Envoy's previous_hosts retry host predicate is
// stormsim's retry.other_host.
func TestEnvoyPreviousHosts(t *testing.T) {
	for _, tt := range []struct {
		src  string
		want bool
	}{
		{"route:\n  retry_policy:\n    retry_on: 5xx\n", false},
		{"route:\n  retry_policy:\n    retry_on: 5xx\n    retry_host_predicate:\n      - name: envoy.retry_host_predicates.previous_hosts\n", true},
	} {
		p, err := EnvoyRoute("f", []byte(tt.src))
		require.NoError(t, err)
		require.Equal(t, tt.want, p.Retry.OtherHost, tt.src)
	}
}

// TestEnvoyClusterBalancing: a cluster's lb_policy and outlier_detection
// become the call's balance and outlier_detection.
func TestEnvoyClusterBalancing(t *testing.T) {
	p, err := EnvoyCluster("f", []byte(`
lb_policy: LEAST_REQUEST
outlier_detection:
  consecutive_5xx: 3
  interval: 5s
  base_ejection_time: 15s
  max_ejection_percent: 50
`))
	require.NoError(t, err)
	require.Equal(t, "p2c", p.Balance)
	require.Equal(t, &Outlier{ConsecutiveFailures: 3, Interval: 5 * time.Second, BaseEjectionTime: 15 * time.Second, MaxEjectionPercent: 50}, p.Outlier)
	for lb, want := range map[string]string{"ROUND_ROBIN": "round_robin", "RANDOM": "random"} {
		p, err := EnvoyCluster("f", []byte("lb_policy: "+lb+"\n"))
		require.NoError(t, err)
		require.Equal(t, want, p.Balance)
		require.Nil(t, p.Outlier)
	}
}
