package model

import (
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/stormsim/stormsim/dist"
	"github.com/stormsim/stormsim/policies"
	"github.com/stormsim/stormsim/topology"
)

const ms = time.Millisecond

// TestQuerierScript drives one intent's schedule through fixed instants:
// the first query after First, PROCESSING answers spaced by the backoff,
// a lost query, then SUCCEEDED.
func TestQuerierScript(t *testing.T) {
	p := &QueryPolicy{First: 100 * ms, Backoff: policies.Backoff{Initial: 200 * ms, Multiplier: 2, Max: 500 * ms},
		Deadline: 2 * time.Second, Lease: time.Second}
	var q Querier
	type step struct {
		name string
		do   func() QueryAction
		want QueryAction
	}
	steps := []step{
		{"start", func() QueryAction { return q.Start(p, 50*ms, 0, 0) }, QueryAction{Step: QueryWait, At: 150 * ms}},
		{"wake 1", func() QueryAction { return q.Wake(p, 150*ms) }, QueryAction{Step: QuerySend}},
		{"processing", func() QueryAction { return q.Answered(p, 160*ms, true, Processing) }, QueryAction{Step: QueryWait, At: 360 * ms}},
		{"wake 2", func() QueryAction { return q.Wake(p, 360*ms) }, QueryAction{Step: QuerySend}},
		{"lost", func() QueryAction { return q.Answered(p, 460*ms, false, NotFound) }, QueryAction{Step: QueryWait, At: 860 * ms}},
		{"wake 3", func() QueryAction { return q.Wake(p, 860*ms) }, QueryAction{Step: QuerySend}},
		{"capped", func() QueryAction { return q.Answered(p, 870*ms, true, Unknown) }, QueryAction{Step: QueryWait, At: 1370 * ms}},
		{"wake 4", func() QueryAction { return q.Wake(p, 1370*ms) }, QueryAction{Step: QuerySend}},
		{"succeeded", func() QueryAction { return q.Answered(p, 1380*ms, true, Succeeded) },
			QueryAction{Step: QueryStop, Resolved: true, State: Succeeded}},
	}
	for _, s := range steps {
		if got := s.do(); got != s.want {
			t.Fatalf("%s: %+v, want %+v", s.name, got, s.want)
		}
	}
	if q.Sent() != 4 {
		t.Errorf("Sent() = %d, want 4", q.Sent())
	}
}

// TestQuerierResubmitAndDeadline: NOT_FOUND inside the lease waits,
// past it resubmits (with Resubmit); the deadline stops the schedule.
func TestQuerierResubmitAndDeadline(t *testing.T) {
	p := &QueryPolicy{First: 100 * ms, Backoff: policies.Backoff{Initial: 100 * ms, Multiplier: 1},
		Deadline: time.Second, Lease: 300 * ms, Resubmit: true}
	var q Querier
	q.Start(p, 0, 0, 0)
	q.Wake(p, 100*ms)
	if a := q.Answered(p, 110*ms, true, NotFound); a.Step != QueryWait {
		t.Fatalf("NOT_FOUND inside the lease: %+v, want a wait", a)
	}
	q.Wake(p, 210*ms)
	if a := q.Answered(p, 310*ms, true, NotFound); a.Step != QueryResubmit {
		t.Fatalf("NOT_FOUND past the lease: %+v, want a resubmit", a)
	}
	if a := q.Start(p, 400*ms, 0, 350*ms); a != (QueryAction{Step: QueryWait, At: 500 * ms}) {
		t.Fatalf("restart after the resubmit: %+v", a)
	}
	if a := q.Wake(p, 1001*ms); a.Step != QueryStop || a.Resolved {
		t.Fatalf("wake past the deadline: %+v, want an unresolved stop", a)
	}
	if a := q.Start(p, 950*ms, 0, 900*ms); a.Step != QueryStop {
		t.Fatalf("a first query due past the deadline: %+v, want stop", a)
	}

	// Without resubmit, NOT_FOUND past the lease is final: the write
	// failed, and the schedule stops resolved rather than polling on.
	p.Resubmit = false
	q = Querier{}
	q.Start(p, 0, 0, 0)
	q.Wake(p, 100*ms)
	if a := q.Answered(p, 110*ms, true, NotFound); a.Step != QueryWait {
		t.Fatalf("NOT_FOUND inside the lease, no resubmit: %+v, want a wait", a)
	}
	q.Wake(p, 210*ms)
	if a := q.Answered(p, 310*ms, true, NotFound); a != (QueryAction{Step: QueryStop, Resolved: true, State: NotFound}) {
		t.Fatalf("NOT_FOUND past the lease, no resubmit: %+v, want a resolved stop", a)
	}

	// MaxQueries stops the schedule after that many queries, unresolved.
	p.MaxQueries = 2
	q = Querier{}
	q.Start(p, 0, 0, 0)
	for i, at := range []time.Duration{100 * ms, 200 * ms} {
		if a := q.Wake(p, at); a.Step != QuerySend {
			t.Fatalf("query %d: %+v, want a send", i+1, a)
		}
		q.Answered(p, at+ms, true, Processing)
	}
	if a := q.Wake(p, 300*ms); a.Step != QueryStop || a.Resolved || q.Sent() != 2 {
		t.Fatalf("third wake with max_queries 2: %+v after %d sent, want an unresolved stop", a, q.Sent())
	}
}

// TestRecover is recovery's rule, row by row.
func TestRecover(t *testing.T) {
	tests := []struct {
		f      Fact
		resume bool
		want   Recovery
	}{
		{FactFound, false, RecoverSucceeded},
		{FactFound, true, RecoverSucceeded},
		{FactAbsent, false, RecoverFailed},
		{FactAbsent, true, RecoverResume},
		{FactUnknown, false, RecoverUnknown},
		{FactUnknown, true, RecoverUnknown},
	}
	for _, tt := range tests {
		if got := Recover(tt.f, tt.resume); got != tt.want {
			t.Errorf("Recover(%v, resume %v) = %v, want %v", tt.f, tt.resume, got, tt.want)
		}
	}
	if FactAnswer(false, true) != FactUnknown || FactAnswer(true, true) != FactFound || FactAnswer(true, false) != FactAbsent {
		t.Error("FactAnswer: a service without a query endpoint cannot tell; one with one answers from its records")
	}
}

// TestReconcilerTwice scans the same records twice: the first scan
// repairs what the facts prove, the second repairs nothing again; an
// unprovable record reaches the manual queue after MaxTries scans.
func TestReconcilerTwice(t *testing.T) {
	r := NewReconciler(ReconcilePolicy{Interval: time.Second, OlderThan: time.Second, Batch: 2, MaxTries: 2})
	state := map[string]RecordState{"a": Unknown, "b": Unknown, "c": Unknown, "d": Processing}
	lookup := func(k string) (RecordState, bool) { return state[k], !state[k].Terminal() }
	settle := func(k string) func(Recovery) bool {
		return func(d Recovery) bool {
			if state[k].Terminal() {
				return false
			}
			state[k] = map[Recovery]RecordState{RecoverSucceeded: Succeeded, RecoverFailed: FailedFinal}[d]
			return true
		}
	}
	for _, k := range []string{"a", "b", "c"} {
		r.Watch(k, 0)
	}
	r.Watch("d", 5*time.Second) // too young for the first scans
	facts := map[string]Fact{"a": FactFound, "b": FactAbsent, "c": FactUnknown}
	scan := func(now time.Duration) []string {
		keys := append([]string(nil), r.Scan(now, lookup)...)
		for _, k := range keys {
			r.Resolve(k, facts[k], settle(k))
		}
		return keys
	}
	if got := scan(time.Second); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("scan 1 took %v, want [a b] (batch 2)", got)
	}
	if got := scan(2 * time.Second); len(got) != 1 || got[0] != "c" {
		t.Fatalf("scan 2 took %v, want [c]", got)
	}
	if got := scan(3 * time.Second); len(got) != 1 || got[0] != "c" {
		t.Fatalf("scan 3 took %v, want [c]", got)
	}
	if got := scan(4 * time.Second); len(got) != 0 {
		t.Fatalf("scan 4 took %v, want nothing: c is in the manual queue, d too young", got)
	}
	st := r.Stats()
	if st.Runs != 4 || st.Items != 4 || st.Repaired != 2 || st.Rerepaired != 0 || st.Failed != 2 || st.ToManual != 1 {
		t.Errorf("stats %+v", st)
	}
	if r.Manual() != 1 || r.Pending() != 1 {
		t.Errorf("manual %d pending %d, want 1 and 1 (d)", r.Manual(), r.Pending())
	}
	if state["a"] != Succeeded || state["b"] != FailedFinal {
		t.Errorf("states %v", state)
	}
}

// TestTally follows four intents: one answered, one resolved by a query
// after the alert was due, one sent to the manual queue, one never.
func TestTally(t *testing.T) {
	tl := Tally{AlertAfter: time.Second}
	var a, b, c, d Certain
	tl.Begin(&a, 0)
	tl.Begin(&b, 0)
	tl.Begin(&c, 0)
	tl.Begin(&d, 0)
	if took, first := tl.Resolve(&a, 10*ms, ByReply); took != 10*ms || !first {
		t.Fatalf("reply: %v %v", took, first)
	}
	tl.Unknown(&b)
	tl.Unknown(&c)
	tl.Unknown(&d)
	tl.Queried(&b)
	tl.Queried(&b)
	if tl.UnknownNow() != 3 {
		t.Fatalf("unknown now %d, want 3", tl.UnknownNow())
	}
	if took, _ := tl.Resolve(&b, 1500*ms, ByQuery); took != 1500*ms {
		t.Fatalf("query: took %v", took)
	}
	if _, first := tl.Resolve(&b, 2*time.Second, ByReconciliation); first {
		t.Fatal("a second resolution counted")
	}
	tl.Manual(&c)
	for _, in := range []*Certain{&a, &b, &c, &d} {
		tl.End(in)
	}
	got := tl.Certainty(3 * time.Second)
	want := [6]int64{1, 1, 0, 0, 1, 1}
	rb := got.ResolvedBy
	if [6]int64{rb.Reply, rb.Query, rb.Recovery, rb.Reconciliation, rb.Manual, rb.Never} != want {
		t.Errorf("resolved by %+v", rb)
	}
	if got.Intents != 4 || got.Alerts != 3 || got.UnknownMax != 3 || got.ManualQueueEnd != 1 || got.Queries != 2 || got.QueriesPerIntent != 2 {
		t.Errorf("certainty %+v", got)
	}
}

// A run that stops with calls still open (diverged, interrupted) ends
// their intents never certain: each is unknown at the end, so the peak of
// intents unknown at once counts them all, as the requests' unknown does,
// and so does the count unknown now; an intent that became certain first
// does not join them.
func TestTallyEndUnknown(t *testing.T) {
	tl := Tally{AlertAfter: time.Second}
	open := make([]Certain, 5)
	for i := range open {
		tl.Begin(&open[i], 0)
	}
	tl.Unknown(&open[0]) // its call ended unknown; the others were still open
	tl.Resolve(&open[4], 5*ms, ByReply)
	for i := range open {
		tl.End(&open[i])
	}
	got := tl.Certainty(2 * time.Second)
	if got.UnknownMax != 4 || tl.UnknownNow() != 4 || got.ResolvedBy.Never != 4 || got.Alerts != 4 {
		t.Errorf("unknown max %d, now %d, never %d, alerts %d; want 4 each", got.UnknownMax, tl.UnknownNow(), got.ResolvedBy.Never, got.Alerts)
	}
}

// TestCompileConverge: the plan holds the query edge and the jobs' fact
// edges after every call edge, and the streams of the query endpoints.
func TestCompileConverge(t *testing.T) {
	sc, err := topology.Load(filepath.Join("..", "topology", "testdata", "converge.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Compile(sc)
	if err != nil {
		t.Fatal(err)
	}
	cp := p.Converge
	if cp == nil || cp.Query == nil || cp.Recovery == nil || cp.Reconcile == nil {
		t.Fatalf("converge plan %+v", cp)
	}
	if e := cp.Query.Edge; e.From != QueryCaller || e.To != "back" || e.Out != "client.query->back" || e.Call.Timeout != 100*ms {
		t.Errorf("query edge %+v", e)
	}
	if e := cp.Reconcile.Fact; e.To != "ledger" || e.Call.Retry.MaxAttempts != 2 || e.Stream == cp.Recovery.Fact.Stream {
		t.Errorf("reconciliation fact edge %+v", e)
	}
	n := len(p.Edges)
	if p.Edges[n-3] != cp.Query.Edge || p.Edges[n-1] != cp.Reconcile.Fact {
		t.Error("convergence edges are not last in Plan.Edges")
	}
	if rp := p.Replica("back", 0); rp.QueryStream != "query/back" || rp.CrashStream != "crash/back" {
		t.Errorf("back's streams %q %q", rp.QueryStream, rp.CrashStream)
	}
	if p.Replica("front", 0).QueryStream != "" {
		t.Error("front has no query endpoint")
	}
	pol, err := cp.Query.Policy(10*time.Second, rand.New(rand.NewPCG(1, 1)))
	if err != nil || pol.First != 200*ms || pol.Backoff.Jitter != policies.FullJitter || pol.Lease != 10*time.Second {
		t.Errorf("query policy %+v, %v", pol, err)
	}
	base, err := topology.Load(filepath.Join("..", "topology", "testdata", "base.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if bp, _ := Compile(base); bp.Converge != nil {
		t.Error("a scenario without convergence has a converge plan")
	}
}

// TestCalleeConvergence drives a committing callee with recovery and
// reconciliation: an owner that crashes leaves PROCESSING, which a retry
// past the lease does not take over and recovery settles once; an owner
// whose step ended unknown holds its key (UNKNOWN).
func TestCalleeConvergence(t *testing.T) {
	cfg := topology.Service{Name: "orders", Workers: 2, ServiceTime: topology.Dist{Dist: "constant", Value: ms},
		Idempotency: &topology.Idempotency{Lease: 100 * ms, Retention: time.Hour},
		Recovery:    &topology.Recovery{OnAbsent: "fail"}, Reconciliation: &topology.Reconciliation{Interval: time.Second}}
	c, err := NewCallee[int](&cfg, Stream(1, "t"), true, true)
	if err != nil {
		t.Fatal(err)
	}
	c.EnableQueries(mustDelay(t, &topology.Dist{Dist: "constant", Value: 2 * ms}), Stream(1, "q"), Stream(1, "c"))
	if d := c.QueryTime(); d != 2*ms {
		t.Fatalf("query time %v", d)
	}
	if c.Lease() != 100*ms {
		t.Fatalf("lease %v", c.Lease())
	}
	// Owner 1 crashes.
	c.inflight++
	if _, fence, preset := c.Begin(0, true, "k1", 1); fence == 0 || preset {
		t.Fatal("first owner did not execute")
	}
	c.FinishCrashed(ms)
	if st := c.QueryByKey(ms, "k1"); st != Processing {
		t.Fatalf("after the crash: %v", st)
	}
	if _, ok, _ := c.Lookup(50*ms, "k1"); ok {
		t.Fatal("settleable while the lease runs")
	}
	if _, _, preset := c.Begin(200*ms, true, "k1", 1); !preset || c.PresetAnswer().Outcome != policies.InProgress {
		t.Fatal("a retry past the lease took the key over despite recovery")
	}
	if ok, executed := c.Settle(200*ms, "k1", RecoverSucceeded); !ok || executed {
		t.Fatalf("recovery settle: ok %v executed %v", ok, executed)
	}
	if ok, _ := c.Settle(300*ms, "k1", RecoverSucceeded); ok {
		t.Fatal("settled twice")
	}
	if st := c.QueryByKey(300*ms, "k1"); st != Succeeded {
		t.Fatalf("after recovery: %v", st)
	}
	// Owner 2's downstream step timed out: its key is held.
	c.inflight++
	_, fence, _ := c.Begin(time.Second, true, "k2", 1)
	c.Finish(time.Second+ms, Ending{Outcome: policies.Timeout, Worked: true, Write: true, Key: "k2", Fence: fence, Unknown: true})
	if st, ok, began := c.Lookup(time.Second+ms, "k2"); st != Unknown || !ok || began != time.Second {
		t.Fatalf("held record: %v settleable %v began %v", st, ok, began)
	}
	if ok, _ := c.Settle(2*time.Second, "k2", RecoverFailed); !ok || c.QueryByKey(2*time.Second, "k2") != FailedFinal {
		t.Fatal("reconciliation could not settle the held record as failed")
	}
	if _, _, preset := c.Begin(3*time.Second, true, "k2", 1); !preset || c.PresetAnswer().Outcome != policies.Error {
		t.Fatalf("a retry of a FAILED_FINAL write is answered %v, want the saved failure", c.PresetAnswer().Outcome)
	}
	if st := c.QueryByKey(2*time.Second, "never"); st != NotFound {
		t.Fatalf("unknown key: %v", st)
	}
}

func mustDelay(t *testing.T, d *topology.Dist) dist.Sampler {
	t.Helper()
	s, _, err := Delay(d, "query_time")
	if err != nil {
		t.Fatal(err)
	}
	return s
}
