package topology

import (
	"strings"
	"testing"
	"time"
)

// TestProxyPresetExpansion checks the rules the nginx preset takes from
// the rest of the scenario: the cap at the callee's replicas, held writes
// by method, and nginx's passive health.
func TestProxyPresetExpansion(t *testing.T) {
	const base = `name: p
duration: 1s
workload: {entry: proxy, rate: 10, write_method: %METHOD%}
services:
  - name: proxy
    workers: 4
    service_time: {dist: constant, value: 1ms}
    calls:
      - to: app
        timeout: 100ms
        retry: %RETRY%
  - name: app
    workers: 4
    replicas: %REPLICAS%
    service_time: {dist: constant, value: 1ms}
`
	tests := []struct {
		name, method, retry, replicas string
		attempts                      int
		hold, outlier                 bool
	}{
		{"every server of three", "POST", "{preset: nginx}", "3", 3, true, true},
		{"tries capped at the servers", "POST", "{preset: nginx, max_attempts: 5}", "3", 3, true, true},
		{"tries below the servers", "POST", "{preset: nginx, max_attempts: 2}", "3", 2, true, true},
		{"one server: no retry, no passive health", "POST", "{preset: nginx}", "1", 1, true, false},
		{"PUT is passed on", "PUT", "{preset: nginx}", "3", 3, false, true},
		{"PATCH is held", "PATCH", "{preset: nginx}", "3", 3, true, true},
		{"hold_writes given wins", "PUT", "{preset: nginx, hold_writes: true}", "3", 3, true, true},
		{"non_idempotent by hand", "POST", "{preset: nginx, hold_writes: false}", "2", 2, false, true},
		{"haproxy keeps its four attempts", "POST", "{preset: haproxy}", "3", 4, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := strings.NewReplacer("%METHOD%", tt.method, "%RETRY%", tt.retry, "%REPLICAS%", tt.replicas).Replace(base)
			sc, err := Parse("p.yaml", []byte(src), nil)
			if err != nil {
				t.Fatal(err)
			}
			c := sc.Service("proxy").Calls[0]
			if c.Retry.MaxAttempts != tt.attempts || c.Retry.HoldWrites != tt.hold {
				t.Errorf("max_attempts %d, hold_writes %v; want %d, %v", c.Retry.MaxAttempts, c.Retry.HoldWrites, tt.attempts, tt.hold)
			}
			if got := c.OutlierDetection != nil; got != tt.outlier {
				t.Fatalf("outlier detection %v, want %v", got, tt.outlier)
			}
			if od := c.OutlierDetection; od != nil && (od.ConsecutiveFailures != 1 || od.BaseEjectionTime != 10*time.Second || od.MaxEjectionTime != 10*time.Second) {
				t.Errorf("outlier detection %+v, want max_fails=1 fail_timeout=10s", *od)
			}
		})
	}
}

func TestWriteMethodValidated(t *testing.T) {
	src := "name: p\nduration: 1s\nworkload: {entry: a, rate: 1, write_method: GET}\nservices:\n  - {name: a, workers: 1, service_time: {dist: constant, value: 1ms}}\n"
	_, err := Parse("p.yaml", []byte(src), nil)
	if err == nil || !strings.Contains(err.Error(), "p.yaml:3: workload.write_method: must be one of POST, PUT, PATCH, DELETE") {
		t.Fatalf("got %v", err)
	}
}
