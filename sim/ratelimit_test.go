package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stormsim/stormsim/policies"
	"github.com/stormsim/stormsim/topology"
)

// TestServiceRateLimit: a service behind an Envoy local rate limit of 10
// tokens filled by 5 every 100 ms admits, out of 200 constant arrivals per
// second for 2 s, the 10 it starts with plus 5 per fill: 10 + 5·19 = 105
// (the fill at 2 s comes after the last arrival); the rest are answered
// unavailable at once.
func TestServiceRateLimit(t *testing.T) {
	sc := &topology.Scenario{
		Name: "rate-limit", Seed: 3, Duration: 2 * time.Second, Interval: time.Second,
		Workload: topology.Workload{Entry: "s", Arrival: "constant", Rate: 200,
			Client: topology.Call{Retry: policies.RetryConfig{MaxAttempts: 1}}},
		Services: []topology.Service{{Name: "s", Workers: 100, ServiceTime: constant(time.Millisecond),
			Overload: policies.OverloadConfig{RateLimit: &policies.RateLimitConfig{MaxTokens: 10, TokensPerFill: 5, FillInterval: 100 * time.Millisecond}}}},
	}
	sum := runScenario(t, sc).Summary
	require.EqualValues(t, 400, sum.Requests.Offered)
	require.EqualValues(t, 105, sum.Requests.Succeeded)
	require.EqualValues(t, 295, sum.Requests.Failed)
}
