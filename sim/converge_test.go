package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/topology"
)

// runYAML simulates a scenario written inline.
func runYAML(t *testing.T, name, src string, sets ...string) *metrics.Result {
	t.Helper()
	sc, err := topology.Parse(name+".yaml", []byte(src), sets)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), sc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func serviceOf(t *testing.T, s metrics.Summary, name string) metrics.ServiceSummary {
	t.Helper()
	for _, ss := range s.Services {
		if ss.Name == name {
			return ss
		}
	}
	t.Fatalf("no service %q", name)
	return metrics.ServiceSummary{}
}

// One write whose reply is lost: its call ends unknown at the client's
// timeout (100ms), the first query at 150ms (first_delay = interval 50ms)
// finds it SUCCEEDED after the endpoint's 1ms: one query, certain by query
// at 151ms, executed once.
const lostReply = `
name: lost-reply
duration: 500ms
workload:
  entry: orders
  arrival: constant
  rate: 2
  write_fraction: 1
  idempotency_keys: true
  client: {timeout: 100ms}
  query: {interval: 50ms, call: {timeout: 100ms}}
services:
  - name: orders
    workers: 1
    service_time: {dist: constant, value: 10ms}
    query_time: {dist: constant, value: 1ms}
faults:
  - {service: orders, at: 0s, for: 100ms, drop_response: 1}
`

func TestOneLostReplyOneQuery(t *testing.T) {
	res := runYAML(t, "lost-reply", lostReply)
	s := res.Summary
	c := s.Certainty
	if c == nil {
		t.Fatal("no certainty for a scenario with queries")
	}
	if s.Requests.Offered != 1 || s.Requests.Unknown != 1 {
		t.Fatalf("requests %+v, want one unknown write", s.Requests)
	}
	want := metrics.ResolvedBy{Query: 1}
	if c.Intents != 1 || c.ResolvedBy != want || c.Queries != 1 || c.QueriesPerIntent != 1 {
		t.Errorf("certainty %+v", *c)
	}
	if !near(c.P50Ms, 151) || !near(c.MaxMs, 151) {
		t.Errorf("time to certainty p50 %v max %v, want 151ms", c.P50Ms, c.MaxMs)
	}
	orders := serviceOf(t, s, "orders")
	if orders.Executions != 1 || s.Duplicates != 0 || orders.Attempts != 2 || orders.Queries != 1 {
		t.Errorf("orders %+v: want 1 execution, 2 attempts (the write and its query), 1 query", orders)
	}
	if res.Certainty == nil || res.Certainty.TotalCount() != 1 {
		t.Error("Result.Certainty does not hold the one time to certainty")
	}
}

// One owner crashes after its call to the ledger: its record stays
// PROCESSING; the client retries. With recovery the retries past the
// lease are answered in progress and the recovery task, at the lease's end
// (200ms), asks the ledger (1ms): found, SUCCEEDED — executed once.
// Without recovery a retry past the lease takes the key over and runs the
// effect a second time.
const crashedOwner = `
name: crashed-owner
duration: 500ms
workload:
  entry: orders
  arrival: constant
  rate: 2
  write_fraction: 1
  idempotency_keys: true
  client: {timeout: 100ms, retry: {max_attempts: 4, on: [timeout, unavailable, in_progress], backoff: {initial: 60ms, multiplier: 1}}}
  query: {interval: 150ms, call: {timeout: 100ms}}
services:
  - name: orders
    workers: 2
    commits: true
    service_time: {dist: constant, value: 10ms}
    query_time: {dist: constant, value: 1ms}
    idempotency: {lease: 200ms, in_progress_retry_after: 60ms}
    recovery:
      fact_query: {to: ledger, timeout: 50ms}
    calls:
      - to: ledger
  - name: ledger
    workers: 1
    service_time: {dist: constant, value: 5ms}
    query_time: {dist: constant, value: 1ms}
faults:
  - {service: orders, at: 0s, for: 50ms, crash_owner: 1}
`

func TestCrashedOwnerRecovery(t *testing.T) {
	tests := []struct {
		name       string
		sets       []string
		executions int64
		by         metrics.ResolvedBy
		recovered  int64
	}{
		{name: "recovery", executions: 1, by: metrics.ResolvedBy{Recovery: 1}, recovered: 1},
		{name: "takeover", sets: []string{"services.orders.recovery=null"}, executions: 2, by: metrics.ResolvedBy{Reply: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := runYAML(t, "crashed-owner", crashedOwner, tt.sets...)
			s := res.Summary
			orders := serviceOf(t, s, "orders")
			if orders.Executions != tt.executions {
				t.Errorf("executions %d, want %d (duplicates %d)", orders.Executions, tt.executions, s.Duplicates)
			}
			c := s.Certainty
			if c.ResolvedBy != tt.by {
				t.Errorf("resolved by %+v, want %+v", c.ResolvedBy, tt.by)
			}
			if tt.recovered > 0 {
				if c.Recoveries == nil || c.Recoveries.Succeeded != 1 || orders.FactQueries != 0 || serviceOf(t, s, "ledger").FactQueries != 1 {
					t.Errorf("recoveries %+v, ledger fact queries %d", c.Recoveries, serviceOf(t, s, "ledger").FactQueries)
				}
				if !near(c.P50Ms, 201) {
					t.Errorf("time to certainty %vms, want 201 (lease end + the ledger's query)", c.P50Ms)
				}
			}
		})
	}
}

// One write whose call to a warehouse times out (100ms, the warehouse
// takes 300ms): orders answers timeout and holds the record UNKNOWN. The
// reconciliation job scans every 500ms; its fact query to the warehouse
// cannot tell without a query endpoint (and times out), so after
// max_tries 2 the record goes to the manual queue. With a query endpoint
// the warehouse's records prove the write: repaired once, never again.
const stuckFact = `
name: stuck-fact
duration: 500ms
workload:
  entry: orders
  arrival: constant
  rate: 2
  write_fraction: 1
  idempotency_keys: true
  client: {timeout: 1s}
services:
  - name: orders
    workers: 2
    commits: true
    service_time: {dist: constant, value: 1ms}
    reconciliation:
      interval: 500ms
      max_tries: 2
      fact_query: {to: warehouse, timeout: 100ms}
    calls:
      - {to: warehouse, timeout: 100ms}
  - name: warehouse
    workers: 2
    service_time: {dist: constant, value: 300ms}
`

func TestStuckFactReconciliation(t *testing.T) {
	t.Run("manual", func(t *testing.T) {
		c := runYAML(t, "stuck-fact", stuckFact).Summary.Certainty
		r := c.Reconciliation
		if r == nil || r.Items != 2 || r.Failed != 2 || r.ToManual != 1 || r.Repaired != 0 || r.Rerepaired != 0 {
			t.Fatalf("reconciliation %+v", r)
		}
		if c.ResolvedBy != (metrics.ResolvedBy{Manual: 1}) || c.ManualQueueEnd != 1 || c.ManualQueueMax != 1 {
			t.Errorf("certainty %+v", *c)
		}
	})
	t.Run("proved", func(t *testing.T) {
		c := runYAML(t, "stuck-fact", stuckFact, "services.warehouse.query_time.dist=constant",
			"services.warehouse.query_time.value=2ms").Summary.Certainty
		r := c.Reconciliation
		if r == nil || r.Items != 1 || r.Repaired != 1 || r.Rerepaired != 0 || r.Failed != 0 || r.Runs < 2 {
			t.Fatalf("reconciliation %+v: want one repair, none twice, over at least two scans", r)
		}
		if c.ResolvedBy != (metrics.ResolvedBy{Reconciliation: 1}) || !near(c.P50Ms, 502) {
			t.Errorf("certainty %+v: want reconciled at 502ms", *c)
		}
	})
}

// TestNoConvergenceNoCertainty: a scenario configuring no convergence
// reports none (every golden stays as it was).
func TestNoConvergenceNoCertainty(t *testing.T) {
	res := runYAML(t, "lost-reply", lostReply, "workload.query=null")
	if res.Summary.Certainty != nil || res.Certainty != nil {
		t.Fatal("certainty reported without convergence")
	}
	for _, c := range res.Series.Columns {
		if c == metrics.ColUnknownIntents {
			t.Fatal("convergence columns without convergence")
		}
	}
}

// near compares a time read back from the HDR histogram (3 significant
// digits) with the exact one.
func near(got, want float64) bool { return got >= want && got <= want*1.001 }

// TestGoldenConverge pins the summary and series of the order-recovery
// shape at a small scale (queries, crashes, recovery, reconciliation and
// the manual queue all at work), and checks that a rerun is byte-identical.
func TestGoldenConverge(t *testing.T) {
	sets := []string{"duration=20s", "faults.0.at=5s", "faults.2.at=12s"}
	sc, err := topology.Load(filepath.Join("..", "experiments", "order-recovery.yaml"), sets)
	if err != nil {
		t.Fatal(err)
	}
	a, b := runScenario(t, sc), runScenario(t, sc)
	ja, _ := json.Marshal(a.Summary)
	jb, _ := json.Marshal(b.Summary)
	if !bytes.Equal(ja, jb) {
		t.Fatal("two runs of one seed differ")
	}
	if a.Summary.Certainty == nil || a.Summary.Certainty.Reconciliation.ToManual == 0 || a.Summary.Certainty.ResolvedBy.Query == 0 {
		t.Fatalf("the small run lost the story: %+v", a.Summary.Certainty)
	}
	checkGolden(t, "golden_converge_summary.json", "  ", a.Summary)
	checkGolden(t, "golden_converge_series.json", " ", a.Series)
}

// One write cancelled at its timeout (cancel_on_timeout aborts its key):
// its queries find NOT_FOUND, and past the lease the client resubmits it
// with the same key, which then commits: one execution, certain by the
// query path, one resubmit.
const resubmitted = `
name: resubmit
duration: 500ms
workload:
  entry: orders
  arrival: constant
  rate: 2
  write_fraction: 1
  idempotency_keys: true
  deadline: 1s
  client: {timeout: 100ms}
  query: {interval: 100ms, resubmit: true, call: {timeout: 50ms}}
services:
  - name: orders
    workers: 1
    cancel_on_timeout: true
    service_time: {dist: constant, value: 10ms}
    query_time: {dist: constant, value: 1ms}
    idempotency: {lease: 150ms}
faults:
  - {service: orders, at: 0s, for: 50ms, latency_add: 200ms}
`

func TestResubmitAfterNotFound(t *testing.T) {
	res := runYAML(t, "resubmit", resubmitted)
	c, orders := res.Summary.Certainty, serviceOf(t, res.Summary, "orders")
	if c.Resubmits != 1 || c.ResolvedBy != (metrics.ResolvedBy{Query: 1}) || orders.Executions != 1 || res.Summary.Duplicates != 0 {
		t.Fatalf("certainty %+v, executions %d", *c, orders.Executions)
	}
	// unknown at 100ms; NOT_FOUND at 201ms (past the 150ms lease) is
	// resubmitted at once and commits 10ms later
	if !near(c.P50Ms, 211) {
		t.Errorf("time to certainty %vms, want 211", c.P50Ms)
	}
}

// Recovery decides from the facts it is given. Here the crashed owner's
// effect is real but the fact query asks a service the owner never
// called, whose records are absent: on_absent fail marks the record
// FAILED_FINAL (executed once), resume does the work again (a duplicate,
// from checking the wrong facts).
func TestRecoveryOnAbsent(t *testing.T) {
	tests := []struct {
		onAbsent   string
		executions int64
		rec        metrics.Recoveries
	}{
		{"fail", 1, metrics.Recoveries{Failed: 1}},
		{"resume", 2, metrics.Recoveries{Resumed: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.onAbsent, func(t *testing.T) {
			src := strings.Replace(crashedOwner, "fact_query: {to: ledger", "fact_query: {to: audit", 1)
			src = strings.Replace(src, "faults:", "  - {name: audit, workers: 1, service_time: {dist: constant, value: 1ms}, query_time: {dist: constant, value: 1ms}}\nfaults:", 1)
			res := runYAML(t, "crashed-owner", src, "services.orders.recovery.on_absent="+tt.onAbsent)
			s := res.Summary
			if got := serviceOf(t, s, "orders").Executions; got != tt.executions {
				t.Errorf("executions %d, want %d", got, tt.executions)
			}
			// The client's retry after recovery is answered the settled
			// result; after a timed-out attempt a failure stays unknown to
			// the call (policies.Call's rule), a success does not.
			if want := tt.onAbsent == "resume"; (s.Requests.Succeeded == 1) != want {
				t.Errorf("requests %+v", s.Requests)
			}
			if c := s.Certainty; c.Recoveries == nil || *c.Recoveries != tt.rec || c.ResolvedBy.Recovery != 1 {
				t.Errorf("certainty %+v recoveries %+v, want %+v", *c, c.Recoveries, tt.rec)
			}
		})
	}
}

// A front whose call to the committing back has no timeout waits forever
// on the write the crashed owner never answers: its workers fill and the
// run diverges with requests still open. Those requests end unknown, and
// the certainty object must say so: every never-certain intent is unknown
// at the end, so unknown_max is at least resolved_by.never and the
// requests' unknown count less those a job made certain after the fact.
const stuckFront = `
name: stuck-front
duration: 2s
limits: {max_drain: 5s}
workload:
  entry: front
  arrival: constant
  rate: 20
  write_fraction: 1
  idempotency_keys: true
  alert_after: 1s
services:
  - name: front
    workers: 1
    service_time: {dist: constant, value: 1ms}
    calls:
      - to: back
  - name: back
    workers: 2
    commits: true
    service_time: {dist: constant, value: 2ms}
faults:
  - {service: back, at: 500ms, for: 10ms, crash_owner: 1}
`

func TestCertaintyCountsUnknownAtTheEnd(t *testing.T) {
	// The reconciliation job's scans keep events coming after the front
	// is stuck, so that run diverges at limits.max_drain; without it the
	// run completes with the calls still open. Both end them unknown.
	recon := strings.Replace(stuckFront, "    commits: true\n", `    commits: true
    reconciliation:
      interval: 1s
      fact_query: {to: ledger, timeout: 50ms}
`, 1)
	recon = strings.Replace(recon, "faults:\n", `  - name: ledger
    workers: 1
    service_time: {dist: constant, value: 1ms}
    query_time: {dist: constant, value: 1ms}
faults:
`, 1)
	for _, tt := range []struct {
		name, src string
		status    metrics.Status
		alerts    int64
	}{{"complete", stuckFront, metrics.StatusComplete, 10}, {"diverged", recon, metrics.StatusDiverged, 30}} {
		t.Run(tt.name, func(t *testing.T) {
			s := runYAML(t, "stuck-front", tt.src).Summary
			c := s.Certainty
			if s.Status != tt.status || c == nil {
				t.Fatalf("status %s, want %s; certainty %+v", s.Status, tt.status, c)
			}
			// Stuck from the crash at 500 ms: 30 arrivals at 50 ms
			// spacing. At the 2 s end 10 of them are older than
			// alert_after; at the diverged end, past the drain, all are.
			if s.Requests.Unknown != 30 || c.ResolvedBy.Never != 30 || c.UnknownMax != 30 || c.Alerts != tt.alerts {
				t.Errorf("requests unknown %d, never %d, unknown_max %d, alerts %d: want 30, 30, 30, %d",
					s.Requests.Unknown, c.ResolvedBy.Never, c.UnknownMax, c.Alerts, tt.alerts)
			}
		})
	}
}

// A write the committing service cancelled leaves no record: NOT_FOUND
// past the lease means it never happened. With resubmit the client sends
// it again (TestResubmitAfterNotFound); without, the answer is final —
// the write failed — and the querying stops there instead of polling
// NOT_FOUND until the deadline.
func TestNotFoundWithoutResubmitIsFailed(t *testing.T) {
	res := runYAML(t, "resubmit", resubmitted, "workload.query.resubmit=false")
	c, orders := res.Summary.Certainty, serviceOf(t, res.Summary, "orders")
	if c.Resubmits != 0 || c.ResolvedBy != (metrics.ResolvedBy{Query: 1}) || orders.Executions != 0 {
		t.Fatalf("certainty %+v, executions %d", *c, orders.Executions)
	}
	// unknown at 100ms; the query at 200ms answers NOT_FOUND at 201ms,
	// past the 150ms lease from the write sent at 0: one query, certain.
	if c.Queries != 1 || !near(c.P50Ms, 201) {
		t.Errorf("%d queries, time to certainty %vms; want 1 and 201", c.Queries, c.P50Ms)
	}
}

// max_queries bounds one intent's polling: NOT_FOUND inside a long lease
// keeps the client asking, and after 3 queries it stops, unknown.
func TestMaxQueries(t *testing.T) {
	res := runYAML(t, "resubmit", resubmitted, "services.orders.idempotency.lease=10s", "workload.query.max_queries=3")
	c := res.Summary.Certainty
	if c.Queries != 3 || c.ResolvedBy != (metrics.ResolvedBy{Never: 1}) || c.UnknownMax != 1 {
		t.Errorf("certainty %+v, want 3 queries and the intent never certain", *c)
	}
}
