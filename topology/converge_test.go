package topology

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestConvergeDefaults loads a scenario with every convergence block and
// checks the defaults filled in (docs/scenario.md lists them).
func TestConvergeDefaults(t *testing.T) {
	sc, err := Load(filepath.Join("testdata", "converge.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !sc.Converges() {
		t.Fatal("Converges() = false for a scenario with queries")
	}
	q := sc.Workload.Query
	if q.FirstDelay != 200*time.Millisecond || q.Multiplier != 1 || q.Deadline != DefaultQueryDeadline {
		t.Errorf("query defaults: first_delay %v multiplier %v deadline %v", q.FirstDelay, q.Multiplier, q.Deadline)
	}
	back := sc.Service("back")
	if back.Recovery.OnAbsent != "fail" {
		t.Errorf("recovery.on_absent = %q, want fail", back.Recovery.OnAbsent)
	}
	r := back.Reconciliation
	if r.Batch != DefaultReconcileBatch || r.OlderThan != r.Interval || r.MaxTries != DefaultReconcileTries {
		t.Errorf("reconciliation defaults: batch %d older_than %v max_tries %d", r.Batch, r.OlderThan, r.MaxTries)
	}
	if r.FactQuery.Retry.MaxAttempts != 2 || r.FactQuery.Fanout != 1 {
		t.Errorf("fact_query not resolved as a call: %+v", r.FactQuery)
	}
	base, err := Load(filepath.Join("testdata", "base.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if base.Converges() {
		t.Error("Converges() = true for a scenario without convergence")
	}
}

// TestConvergeKeysValidated overrides one convergence key at a time in a
// valid scenario: each bad value is one positioned problem naming its key.
func TestConvergeKeysValidated(t *testing.T) {
	tests := []struct {
		set, path, msg string
	}{
		{"workload.alert_after=-1s", "workload.alert_after", "must be ≥ 0"},
		{"workload.query.interval=0s", "workload.query.interval", "must be > 0"},
		{"workload.query.first_delay=-1s", "workload.query.first_delay", "must be ≥ 0"},
		{"workload.query.multiplier=0.5", "workload.query.multiplier", "must be ≥ 1"},
		{"workload.query.jitter=fulll", "workload.query.jitter", "did you mean full"},
		{"workload.query.spread=2", "workload.query.spread", "must be in [0, 1]"},
		{"workload.query.max_interval=100ms", "workload.query.max_interval", "must be ≥ interval"},
		{"workload.query.deadline=0s", "workload.query.deadline", "must be > 0"},
		{"workload.query.resubmit=maybe", "workload.query.resubmit", ""},
		{"workload.query.call.timeout=-1s", "workload.query.call.timeout", "must be ≥ 0"},
		{"workload.query.call.to=front", "workload.query.call.to", "committing service"},
		{"workload.query.max_queries=-1", "workload.query.max_queries", "must be ≥ 0"},
		{"workload.idempotency_keys=false", "workload.query", "idempotency_keys"},
		{"services.back.query_time.dist=gauss", "services[1].query_time.dist", ""},
		{"services.back.recovery.on_absent=retry", "services[1].recovery.on_absent", "fail or resume"},
		{"services.back.recovery.fact_query.to=back", "services[1].recovery.fact_query.to", "downstream"},
		{"services.back.recovery.fact_query.to=nope", "services[1].recovery.fact_query.to", "unknown service"},
		{"services.back.reconciliation.interval=0s", "services[1].reconciliation.interval", "must be > 0"},
		{"services.back.reconciliation.batch=0", "services[1].reconciliation.batch", "must be ≥ 1"},
		{"services.back.reconciliation.cost_per_item=-1ms", "services[1].reconciliation.cost_per_item", "must be ≥ 0"},
		{"services.back.reconciliation.older_than=-1s", "services[1].reconciliation.older_than", "must be ≥ 0"},
		{"services.back.reconciliation.max_tries=0", "services[1].reconciliation.max_tries", "must be ≥ 1"},
		{"services.back.reconciliation.fact_query.fanout=2", "services[1].reconciliation.fact_query", "one call"},
		{"services.back.query_time=null", "workload.query", "no query endpoint"},
		{"faults.0.crash_owner=2", "faults[0].crash_owner", "must be in [0, 1]"},
		{"faults.0.service=front", "faults[0].crash_owner", "committing service"},
	}
	for _, tt := range tests {
		t.Run(tt.set, func(t *testing.T) {
			_, err := Load(filepath.Join("testdata", "converge.yaml"), []string{tt.set})
			if err == nil {
				t.Fatalf("--set %s accepted", tt.set)
			}
			checkPositioned(t, err)
			if !strings.Contains(err.Error(), tt.path+":") || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("--set %s: want a problem at %s saying %q, got\n%v", tt.set, tt.path, tt.msg, err)
			}
		})
	}
}

// TestSimulatorOnlyConvergence: serve runs every convergence key, so a
// scenario with all of them (queries, recovery, reconciliation, owner
// crashes) has no simulator-only key, nor does one without them.
func TestSimulatorOnlyConvergence(t *testing.T) {
	sc, err := Load(filepath.Join("testdata", "converge.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !sc.Converges() {
		t.Fatal("converge.yaml configures no convergence: the case tests nothing")
	}
	if probs := sc.SimulatorOnly(); probs != nil {
		t.Errorf("serve runs every convergence key, yet SimulatorOnly names %v", probs)
	}
	base, err := Load(filepath.Join("testdata", "base.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if probs := base.SimulatorOnly(); probs != nil {
		t.Errorf("problems for a scenario without convergence: %v", probs)
	}
}

// TestEdgeQueryKeys: calls[].query loads with workload.query's defaults,
// makes the scenario converge and is simulator-only at its line; each bad
// value, and each place a call's query does not apply, is one positioned
// problem naming its key and what is required.
func TestEdgeQueryKeys(t *testing.T) {
	file := filepath.Join("testdata", "edgequery.yaml")
	sc, err := Load(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	q := sc.Services[0].Calls[0].Query
	if !sc.Converges() || q.FirstDelay != 50*time.Millisecond || q.Multiplier != 1 || q.Deadline != DefaultQueryDeadline {
		t.Errorf("converges %v, defaults %+v", sc.Converges(), *q)
	}
	if got, want := sc.SimulatorOnly().Error(), "edgequery.yaml:16: services[0].calls[0].query: a call's status queries by key: simulator-only"; !strings.Contains(got, want) {
		t.Errorf("simulator-only: %s\nwant %q", got, want)
	}
	tests := []struct {
		set, path, msg string
	}{
		{"services.front.calls.0.query.interval=0s", "services[0].calls[0].query.interval", "must be > 0"},
		{"services.front.calls.0.query.multiplier=0.5", "services[0].calls[0].query.multiplier", "must be ≥ 1"},
		{"services.front.calls.0.query.jitter=fulll", "services[0].calls[0].query.jitter", "did you mean full"},
		{"services.front.calls.0.query.max_interval=10ms", "services[0].calls[0].query.max_interval", "must be ≥ interval"},
		{"services.front.calls.0.query.deadline=0s", "services[0].calls[0].query.deadline", "must be > 0"},
		{"services.front.calls.0.query.max_queries=-1", "services[0].calls[0].query.max_queries", "must be ≥ 0"},
		{"services.front.calls.0.query.call.timeout=1s", "services[0].calls[0].query.call", "travel the call's own edge"},
		{"services.front.calls.0.fanout=2", "services[0].calls[0].query", "fanout and wait_for"},
		{"services.front.calls.0.pool.size=2", "services[0].calls[0].query", "connection pool"},
		{"workload.idempotency_keys=false", "services[0].calls[0].query", "set workload.idempotency_keys"},
		{"workload.write_fraction=0", "services[0].calls[0].query", "set workload.write_fraction"},
		{"services.back.query_time=null", "services[0].calls[0].query", `the target "back" has no query endpoint: give it query_time`},
		{"services.back.calls.0.query.interval=10ms", "services[1].calls[0].query", `only the committing service ("back") keeps records; "ledger" keeps none`},
		{"workload.client.query.interval=10ms", "workload.client.query", "remove query"},
	}
	for _, tt := range tests {
		t.Run(tt.set, func(t *testing.T) {
			_, err := Load(file, []string{tt.set})
			if err == nil {
				t.Fatalf("--set %s accepted", tt.set)
			}
			checkPositioned(t, err)
			if !strings.Contains(err.Error(), tt.path+":") || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("--set %s: want a problem at %s saying %q, got\n%v", tt.set, tt.path, tt.msg, err)
			}
		})
	}
}
