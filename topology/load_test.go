package topology

import (
	"errors"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stormsim/stormsim/internal/golden"
	"github.com/stormsim/stormsim/policies"
)

// positioned matches a problem line that names where it comes from: a file
// and line, or the --set override.
var positioned = regexp.MustCompile(`^(\S+:\d+: |--set [^:]*: )`)

// TestBrokenGolden loads each broken scenario and compares the full problem
// report with its golden file, so every message, position and sort order is
// pinned. Run with -update to rewrite the golden files after a deliberate
// change, and read the diff.
func TestBrokenGolden(t *testing.T) {
	tests := []struct {
		name string
		file string
		sets []string
	}{
		{name: "unknown_keys", file: "unknown_keys.yaml"},
		{name: "bad_values", file: "bad_values.yaml"},
		{name: "references", file: "references.yaml"},
		{name: "cycles", file: "cycles.yaml"},
		{name: "ranges", file: "ranges.yaml"},
		{name: "dists", file: "dists.yaml"},
		{name: "enums", file: "enums.yaml"},
		{name: "policies", file: "policies.yaml"},
		{name: "variants", file: "variants.yaml"},
		{name: "syntax", file: "syntax.yaml"},
		{name: "tab_token", file: "tab_token.yaml"},
		{name: "not_mapping", file: "not_mapping.yaml"},
		{name: "empty", file: "empty.yaml"},
		{name: "merge_bomb", file: "merge_bomb.yaml"},
		{name: "replicas", file: "replicas.yaml"},
		{name: "converge", file: "converge.yaml"},
		{name: "set_errors", file: "../base.yaml", sets: []string{
			"services.back.workers=-1",
			"services.back.wrkers=3",
			"services.nope.workers=1",
			"workload=5",
			"noequals",
			"duration=5 s",
			"services.front.calls.back.retry.max_attempts=zero",
			"services.front.calls.7.timeout=1s",
			"services.front.service_time.dist.kind=x",
			"services.front.calls.back.budget.ratio=2",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc, err := Load(filepath.Join("testdata", "broken", tt.file), tt.sets)
			if err == nil {
				t.Fatalf("Load succeeded, want problems; got %+v", sc)
			}
			var ps Problems
			if !errors.As(err, &ps) {
				t.Fatalf("error %T is not Problems: %v", err, err)
			}
			got := err.Error() + "\n"
			for _, line := range strings.Split(strings.TrimSpace(got), "\n") {
				if !positioned.MatchString(line) {
					t.Errorf("problem does not name its position: %q", line)
				}
			}
			golden.Check(t, filepath.Join("testdata", "broken", tt.name+".golden"), []byte(got))
		})
	}
}

// TestArchitectureExample loads the example of ARCHITECTURE.md and checks
// the decoded values and the defaults that were filled in.
func TestArchitectureExample(t *testing.T) {
	sc, err := Load("testdata/architecture.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	gw, orders := sc.Service("gateway"), sc.Service("orders")
	if gw == nil || orders == nil {
		t.Fatalf("services = %+v", sc.Services)
	}
	call := gw.Calls[0]
	checks := []struct {
		name      string
		got, want any
	}{
		{"name", sc.Name, "five-layer-chain"},
		{"seed", sc.Seed, uint64(1)},
		{"duration", sc.Duration, 60 * time.Second},
		{"warmup", sc.Warmup, 5 * time.Second},
		{"interval", sc.Interval, time.Second},
		{"entry", sc.Workload.Entry, "gateway"},
		{"arrival", sc.Workload.Arrival, ArrivalPoisson},
		{"rate", sc.Workload.Rate, 500.0},
		{"schedule", len(sc.Workload.Schedule), 2},
		{"schedule[0].at", sc.Workload.Schedule[0].At, 20 * time.Second},
		{"schedule[0].rate", sc.Workload.Schedule[0].Rate, 1500.0},
		{"deadline", sc.Workload.Deadline, 2 * time.Second},
		{"client.timeout", sc.Workload.Client.Timeout, time.Second},
		{"client.retry.max_attempts", sc.Workload.Client.Retry.MaxAttempts, 3},
		{"client.retry.backoff.initial", sc.Workload.Client.Retry.Backoff.Initial, 50 * time.Millisecond},
		{"client.retry.backoff.jitter", sc.Workload.Client.Retry.Backoff.Jitter, policies.JitterName("full")},
		{"client.max_pushback (default)", sc.Workload.Client.MaxPushback, 30 * time.Second},
		{"gateway.workers", gw.Workers, 64},
		{"gateway.queue", *gw.Queue, 1000},
		{"gateway.service_time", gw.ServiceTime.Mean, time.Millisecond},
		{"gateway.error_class (default)", gw.ErrorClass, ErrorClass("error")},
		{"gateway.downstream_failure (default)", gw.DownstreamFailure, DownstreamFailure("propagate")},
		{"call.to", call.To, "orders"},
		{"call.fanout (default)", call.Fanout, 1},
		{"call.timeout", call.Timeout, 300 * time.Millisecond},
		{"call.propagate_deadline", call.PropagateDeadline, true},
		{"call.retry.on", strings.Join(policies.Names(call.Retry.On), ","), "unavailable,timeout"},
		{"call.budget.ratio", call.Budget.Ratio, 0.1},
		{"call.breaker.failures", call.Breaker.Failures, 5},
		{"call.breaker.open_for", call.Breaker.OpenFor, 5 * time.Second},
		{"call.hedge.delay", call.Hedge.Delay, 20 * time.Millisecond},
		{"call.honor_pushback", call.HonorPushback, true},
		{"orders.p99", orders.ServiceTime.P99, 40 * time.Millisecond},
		{"orders.reject_expired", orders.RejectExpired, true},
		{"orders.commits (default: last reached)", orders.Commits, true},
		{"gateway.commits", gw.Commits, false},
		{"orders.idempotency.retention (default)", orders.Idempotency.Retention, 24 * time.Hour},
		{"orders.idempotency.lease (default)", orders.Idempotency.Lease, 10 * time.Second},
		{"orders.idempotency.in_progress_retry_after (default)", orders.Idempotency.InProgressRetryAfter, 100 * time.Millisecond},
		{"faults", len(sc.Faults), 2},
		{"faults[0].capacity", *sc.Faults[0].Capacity, 0.5},
		{"faults[1].latency_add", sc.Faults[1].LatencyAdd, 200 * time.Millisecond},
		{"limits.max_inflight (default)", sc.Limits.MaxInflight, 1_000_000},
		{"limits.max_events (default)", sc.Limits.MaxEvents, int64(2e9)},
		{"file", sc.File, "testdata/architecture.yaml"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v (%T), want %v (%T)", c.name, c.got, c.got, c.want, c.want)
		}
	}
}

// TestValidScenarios covers features the architecture example does not use.
func TestValidScenarios(t *testing.T) {
	const common = "duration: 10s\n"
	tests := []struct {
		name  string
		doc   string
		check func(*Scenario) (got, want any)
	}{
		{"closed loop needs no rate", common + `
workload: {entry: a, arrival: closed, clients: 20, think_time: 100ms}
services: [{name: a, workers: 1, service_time: {dist: constant, value: 1ms}}]
`, func(s *Scenario) (any, any) { return s.Workload.Clients, 20 }},
		{"null means default; client.to may name the entry", common + `
interval: ~
workload: {entry: a, rate: 5, client: {to: a}}
services: [{name: a, workers: 1, service_time: {dist: constant, value: 1ms}}]
`, func(s *Scenario) (any, any) { return s.Interval, time.Second }},
		{"schedule supplies the rate", common + `
workload: {entry: a, schedule: [{at: 0s, rate: 10}, {at: 5s, rate: 20}]}
services: [{name: a, workers: 1, service_time: {dist: constant, value: 1ms}}]
`, func(s *Scenario) (any, any) { return len(s.Workload.Schedule), 2 }},
		{"commits follows the first path, through parallel groups", common + `
workload: {entry: a, rate: 1}
services:
  - {name: a, workers: 1, service_time: {dist: constant, value: 1ms}, calls: [{to: d}, {to: b}]}
  - {name: b, workers: 1, service_time: {dist: constant, value: 1ms}}
  - {name: c, workers: 1, service_time: {dist: constant, value: 1ms}}
  - name: d
    workers: 1
    service_time: {dist: constant, value: 1ms}
    calls: [{parallel: [{to: c}, {to: b}], wait_for: 1}]
`, func(s *Scenario) (any, any) {
			var committing []string
			for _, sv := range s.Services {
				if sv.Commits {
					committing = append(committing, sv.Name)
				}
			}
			return strings.Join(committing, ","), "c"
		}},
		{"explicit commits wins", common + `
workload: {entry: a, rate: 1}
services:
  - {name: a, workers: 1, commits: true, service_time: {dist: constant, value: 1ms}, calls: [{to: b}]}
  - {name: b, workers: 1, service_time: {dist: constant, value: 1ms}}
`, func(s *Scenario) (any, any) {
			return [3]bool{s.Service("a").Commits, s.Service("b").Commits, s.Service("a").Idempotency != nil}, [3]bool{true, false, true}
		}},
		{"anchors and merge keys", common + `
x-small: &small {workers: 3, service_time: {dist: constant, value: 2ms}}
workload: {entry: a, rate: 1}
services:
  - {<<: *small, name: a, workers: 5, calls: [{to: b}]}
  - {name: b, <<: *small}
`, func(s *Scenario) (any, any) {
			return [3]any{s.Service("a").Workers, s.Service("b").Workers, s.Service("b").ServiceTime.Value}, [3]any{5, 3, 2 * time.Millisecond}
		}},
		{"empirical samples in the given unit", common + `
workload: {entry: a, rate: 1}
services: [{name: a, workers: 1, service_time: {dist: empirical, file: broken/samples_good.txt, unit: us}}]
`, func(s *Scenario) (any, any) {
			return s.Service("a").ServiceTime.Samples, []time.Duration{time.Microsecond, 2 * time.Microsecond, 3 * time.Microsecond}
		}},
		{"mixture of lognormal and constant", common + `
workload: {entry: a, rate: 1}
services:
  - name: a
    workers: 1
    service_time:
      dist: mixture
      modes:
        - {weight: 9, dist: lognormal, p50: 2ms, p99: 9ms}
        - {weight: 1, dist: constant, value: 300ms}
`, func(s *Scenario) (any, any) { return s.Service("a").ServiceTime.Modes[1].Value, 300 * time.Millisecond }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc, err := Parse("testdata/inline.yaml", []byte(tt.doc), nil)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := tt.check(sc); !reflect.DeepEqual(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
}
