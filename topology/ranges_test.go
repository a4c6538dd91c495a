package topology

import (
	"strings"
	"testing"
)

// TestRanges: values that overflowed the simulator's clock or memory are
// refused with their path; values at the bounds load (issue 17, items 3
// and 7).
func TestRanges(t *testing.T) {
	for _, c := range []struct{ set, want string }{
		{"workload.rate=1e-11", "workload.rate: must be 0 or at least 2.78e-08"},
		{"workload.client.timeout=2562047h", "workload.client.timeout: must be at most 10000h0m0s"},
		{"services.a.calls.b.timeout=10001h", "services[0].calls[0].timeout: must be at most"},
		{"services.b.slowdown_per_inflight=10000h", "services[1].slowdown_per_inflight: must be ≤ 10000h0m0s / workers (5000h0m0s)"},
		{"services.a.workers=1000000000", "services[0].workers: must be at most 1000000"},
		{"services.a.calls.b.fanout=1000000000", "services[0].calls[0].fanout: must be at most 10000"},
		{"services.a.calls.b.retry.max_attempts=5000", "retry.max_attempts: must be at most 1000"},
		{"interval=1ns", "interval: must be ≥ (duration + limits.max_drain) / 1000000 (3.61ms)"},
		{"workload.rate=2.8e-8", ""},
		{"workload.client.timeout=10000h", ""},
		{"services.a.calls.b.fanout=10000", ""},
	} {
		_, err := Parse("aliased.yaml", []byte(aliased), []string{c.set})
		switch {
		case c.want == "" && err != nil:
			t.Errorf("--set %s: %v", c.set, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("--set %s: %v, want %q", c.set, err, c.want)
		}
	}
}
