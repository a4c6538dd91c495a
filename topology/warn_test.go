package topology

import (
	"strings"
	"testing"
	"time"
)

// TestWarnings: settings that are valid but do not do what they look like
// they do get a warning naming the keys to change.
func TestWarnings(t *testing.T) {
	const base = `name: w
duration: 10s
workload:
  entry: api
  rate: 10
  deadline: 1s
  client: {timeout: 500ms, propagate_deadline: CLIENT, retry: {max_attempts: 3, backoff: {initial: INITIAL, jitter: full}}}
services:
  - name: api
    workers: 4
    queue: 10
    service_time: {dist: constant, value: 1ms}
    calls: [{to: db, timeout: 100ms, propagate_deadline: true}]
  - name: db
    workers: 2
    service_time: {dist: constant, value: 1ms}
    QUEUE
`
	for _, tt := range []struct {
		name                   string
		client, initial, queue string
		want                   []string
	}{
		{"clean", "true", "10ms", "queue: 10", nil},
		{"inner propagation without the client's", "false", "10ms", "queue: 10",
			[]string{"services.api.calls.db.propagate_deadline: does nothing unless workload.client.propagate_deadline is true (the entry never learns the deadline)"}},
		{"full jitter from 0", "true", "0s", "queue: 10",
			[]string{"workload.client.retry.backoff: jitter full with initial 0 waits 0 before every retry (no backoff); set backoff.initial"}},
		{"one bounded queue is a bound", "true", "10ms", "cancel_on_timeout: false", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			y := strings.NewReplacer("CLIENT", tt.client, "INITIAL", tt.initial, "QUEUE", tt.queue).Replace(base)
			sc, err := Parse("w.yaml", []byte(y), nil)
			if err != nil {
				t.Fatal(err)
			}
			got := sc.Warnings()
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestReplicaWarnings: replica settings toward a single replica do
// nothing, and a fleet's budget floor multiplies by its instances.
func TestReplicaWarnings(t *testing.T) {
	const base = `name: w
duration: 10s
workload:
  entry: api
  rate: 10
  instances: 100
  client: {timeout: 500ms, balance: p2c, retry: {max_attempts: 3, other_host: true}, budget: {kind: concurrency, min_concurrency: 3}}
services:
  - name: api
    workers: 4
    queue: 10
    REPLICAS
    service_time: {dist: constant, value: 1ms}
    calls: [{to: db, timeout: 100ms, outlier_detection: {}}, {to: cache, zone_aware: true}]
  - name: db
    workers: 2
    queue: 10
    service_time: {dist: constant, value: 1ms}
  - name: cache
    workers: 2
    queue: 10
    replicas: 2
    service_time: {dist: constant, value: 1ms}
`
	zones := "services.api.calls.cache.zone_aware: does nothing, cache's replicas have no zones (set services.cache.zones)"
	fleet := "workload.client.budget.min_concurrency: each of the 100 instances keeps its own budget, so the fleet may have 300 retries in flight whatever the load"
	for _, tt := range []struct {
		name, replicas string
		want           []string
	}{
		{"single replicas", "replicas: 1", []string{
			"services.api.calls.db.outlier_detection: does nothing, db runs one replica (set services.db.replicas)",
			zones,
			"workload.client.balance: does nothing, api runs one replica (set services.api.replicas)",
			"workload.client.retry.other_host: does nothing, api runs one replica (set services.api.replicas)",
			fleet}},
		{"replicated entry", "replicas: 3", []string{
			"services.api.calls.db.outlier_detection: does nothing, db runs one replica (set services.db.replicas)",
			zones,
			fleet}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sc, err := Parse("w.yaml", []byte(strings.Replace(base, "REPLICAS", tt.replicas, 1)), nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := sc.Warnings(); strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// Nothing bounds a storm when every queue is unbounded and no service
// cancels abandoned work: one hint names the keys that would.
func TestWarningsUnbounded(t *testing.T) {
	sc, err := Parse("u.yaml", []byte(`name: u
duration: 10s
workload: {entry: api, rate: 10, deadline: 1s}
services:
  - {name: api, workers: 4, service_time: {dist: constant, value: 1ms}, calls: [{to: db}]}
  - {name: db, workers: 2, service_time: {dist: constant, value: 1ms}}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := sc.Warnings()
	if len(got) != 1 || !strings.Contains(got[0], "nothing bounds a storm") || !strings.Contains(got[0], "services.db.queue=1000") {
		t.Errorf("warnings %q, want one hint naming services.NAME.queue, cancel_on_timeout and reject_expired", got)
	}
}

// TestDrainHint: a drain longer than 3x the arrival window gets one hint
// naming the keys that would bound it; a drain of exactly 3x gets none.
func TestDrainHint(t *testing.T) {
	sc, err := Parse("d.yaml", []byte(`name: d
duration: 10s
workload: {entry: api, rate: 10, deadline: 1s}
services:
  - {name: api, workers: 4, queue: 5, service_time: {dist: constant, value: 1ms}, calls: [{to: db}]}
  - {name: db, workers: 2, reject_expired: true, service_time: {dist: constant, value: 1ms}}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if h := sc.DrainHint(40 * time.Second); h != "" {
		t.Errorf("a drain of 3x the window: hint %q, want none", h)
	}
	h := sc.DrainHint(40*time.Second + time.Millisecond)
	want := "hint: work drained for 30.0s after the 10s arrival window (more than 3x): bound it with services.api.cancel_on_timeout, services.api.reject_expired, services.db.queue, services.db.cancel_on_timeout or limits.max_drain"
	if h != want {
		t.Errorf("hint:\n%s\nwant:\n%s", h, want)
	}
}

func TestPhaseWarnings(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    Call
		want string
	}{
		{"no phase timeouts", Call{Timeout: time.Second}, ""},
		{"pooled", Call{FirstByteTimeout: time.Second, Pool: &Pool{Size: 1}}, ""},
		{"without a pool", Call{TLSTimeout: time.Second, FirstByteTimeout: time.Second},
			"c.tls_timeout: no effect in the simulator without c.pool (load mode enforces it); add a pool"},
		{"first_byte_timeout without a pool: enforced", Call{FirstByteTimeout: time.Second}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := phaseWarnings("c", &tc.c)
			if tc.want == "" {
				if len(got) != 0 {
					t.Errorf("got %q, want none", got)
				}
				return
			}
			if len(got) != 1 || got[0] != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestCrashWarnings: a call with neither a timeout nor a deadline that
// reaches it, toward a service whose owners crash, is warned about at its
// file and line; a timeout, a first-byte timeout or a propagated deadline
// silences it, and an unpropagated deadline does not.
func TestCrashWarnings(t *testing.T) {
	const base = `name: w
duration: 10s
workload:
  entry: api
  rate: 10
  write_fraction: 1
  DEADLINE
  client: {timeout: 5s, propagate_deadline: PROPAGATE}
services:
  - name: api
    workers: 4
    queue: 10
    service_time: {dist: constant, value: 1ms}
    calls:
      - {to: orders, CALL}
  - name: orders
    workers: 2
    service_time: {dist: constant, value: 1ms}
faults:
  - {service: orders, at: 1s, for: 1s, crash_owner: 0.1}
`
	const want = "w.yaml:15: services[0].calls[0]: warning: no timeout and no deadline toward orders, whose owners crash (faults[0].crash_owner): " +
		"a crashed owner never replies, so api never learns of the crash and its intents stay in flight; set timeout (or workload.deadline, propagated to api)"
	for _, tt := range []struct {
		name, deadline, propagate, call string
		want                            string
	}{
		{"no timeout, no deadline", "", "false", "propagate_deadline: true", want},
		{"a timeout", "", "false", "timeout: 1s", ""},
		{"a first-byte timeout", "", "false", "first_byte_timeout: 1s", ""},
		{"a deadline propagated to the call", "deadline: 2s", "true", "propagate_deadline: true", ""},
		{"a deadline the entry never learns", "deadline: 2s", "false", "propagate_deadline: true", want},
	} {
		t.Run(tt.name, func(t *testing.T) {
			y := strings.NewReplacer("DEADLINE", tt.deadline, "PROPAGATE", tt.propagate, "CALL", tt.call).Replace(base)
			sc, err := Parse("w.yaml", []byte(y), nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, w := range sc.Warnings() {
				if strings.Contains(w, "crash") {
					got = append(got, w)
				}
			}
			if strings.Join(got, "\n") != tt.want {
				t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), tt.want)
			}
		})
	}
}
