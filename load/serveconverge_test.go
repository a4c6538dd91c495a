package load

import (
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stormsim/stormsim/load/transport"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/model"
)

// serviceNamed is the summary of service name in s.
func serviceNamed(t *testing.T, s metrics.Summary, name string) metrics.ServiceSummary {
	t.Helper()
	for _, ss := range s.Services {
		if ss.Name == name {
			return ss
		}
	}
	t.Fatalf("no service %q in the summary", name)
	return metrics.ServiceSummary{}
}

// One write whose reply is lost (the simulator's TestOneLostReplyOneQuery):
// its call ends unknown at the client's timeout (100ms), the first query
// at 150ms (first_delay = interval 50ms) finds it SUCCEEDED after the
// endpoint's 1ms: one query, certain by query at 151ms, executed once.
const lostReplyScenario = `
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

// TestServeOneLostReplyOneQuery: the scripted lost reply, served on the
// bubble's clock, gives the simulator's exact counts: one intent resolved
// by one query, 151ms to certainty, the committing service's two attempts
// (the write and its query), one execution.
func TestServeOneLostReplyOneQuery(t *testing.T) {
	sc := parseScenario(t, lostReplyScenario)
	simS := runSim(t, sc)
	res := runInMemory(t, sc, ScenarioOptions{})
	s := res.Summary
	c := s.Certainty
	if c == nil || simS.Certainty == nil {
		t.Fatalf("certainty: serve %v, simulator %v; want both", c, simS.Certainty)
	}
	want := metrics.ResolvedBy{Query: 1}
	if c.Intents != 1 || c.ResolvedBy != want || c.Queries != 1 || c.QueriesPerIntent != 1 {
		t.Errorf("serve certainty %+v, want 1 intent resolved by 1 query", *c)
	}
	if c.Intents != simS.Certainty.Intents || c.ResolvedBy != simS.Certainty.ResolvedBy || c.Queries != simS.Certainty.Queries {
		t.Errorf("serve certainty %+v, simulator %+v", *c, *simS.Certainty)
	}
	// On the bubble's clock the times are exact to the histogram's
	// resolution (3 significant digits: 0.1%).
	if math.Abs(c.P50Ms-151) > 0.2 || math.Abs(c.MaxMs-simS.Certainty.MaxMs) > 0.2 {
		t.Errorf("time to certainty p50 %v max %v, simulator max %v; want 151ms", c.P50Ms, c.MaxMs, simS.Certainty.MaxMs)
	}
	orders := serviceNamed(t, s, "orders")
	if orders.Executions != 1 || s.Duplicates != 0 || orders.Attempts != 2 || orders.Queries != 1 {
		t.Errorf("orders %+v: want 1 execution, 2 attempts (the write and its query), 1 query", orders)
	}
	var qe *metrics.EdgeSummary
	for i := range s.Edges {
		if s.Edges[i].From == model.QueryCaller {
			qe = &s.Edges[i]
		}
	}
	if qe == nil || qe.To != "orders" || qe.Attempts != 1 {
		t.Errorf("query edge %+v, want client.query->orders with 1 attempt", qe)
	}
	if res.Certainty == nil || res.Certainty.TotalCount() != 1 {
		t.Error("Result.Certainty does not hold the one time to certainty")
	}
}

// TestServeQueryEndpoint: a status query is answered from the records by
// a 2xx status naming the state; one to a service without query_time, one
// without a key, and one that is also a write are refused.
func TestServeQueryEndpoint(t *testing.T) {
	const yaml = `
name: q
duration: 1s
workload:
  entry: svc
  arrival: constant
  rate: 1
services:
  - name: svc
    workers: 2
    service_time: {dist: constant, value: 10ms}
    query_time: {dist: constant, value: 1ms}
`
	s := newScripted(t, parseScenario(t, keyedWrites(yaml)), "svc")
	query := func(key string, write bool) *http.Request {
		r := httptest.NewRequest(http.MethodGet, "/svc", nil)
		r.Header.Set(HeaderQuery, "1")
		if key != "" {
			r.Header.Set(transport.HeaderIdempotencyKey, key)
		}
		if write {
			r.Header.Set(transport.HeaderWrite, "1")
		}
		return r
	}
	// The write of key k at 0 (10ms), a query of k at 5ms on the other
	// worker (PROCESSING),
	// one at 20ms (SUCCEEDED), one of another key (NOT_FOUND), then the
	// two malformed ones.
	reqs := []*http.Request{keyedPost(0), query("k", false), query("k", false), query("other", false), query("", false), query("k", true)}
	const ms = time.Millisecond
	s.run([]time.Duration{0, 5 * ms, 20 * ms, 30 * ms, 40 * ms, 50 * ms}, func(i int) *http.Request { return reqs[i] })
	want := []struct {
		status int
		state  string
	}{{http.StatusOK, ""}, {StatusRecord(model.Processing), "PROCESSING"}, {StatusRecord(model.Succeeded), "SUCCEEDED"},
		{StatusRecord(model.NotFound), "NOT_FOUND"}, {http.StatusBadRequest, ""}, {http.StatusBadRequest, ""}}
	for i, w := range want {
		rec := s.answers[i]
		if rec.Code != w.status || rec.Header().Get(HeaderRecordState) != w.state {
			t.Errorf("request %d: status %d state %q, want %d %q (%s)", i, rec.Code, rec.Header().Get(HeaderRecordState), w.status, w.state, strings.TrimSpace(rec.Body.String()))
		}
		if st, ok := RecordOf(rec.Code); ok != (w.state != "") || ok && st.String() != w.state {
			t.Errorf("request %d: RecordOf(%d) = %v, %v", i, rec.Code, st, ok)
		}
	}
	// The query ends 1ms after it started: the 5ms one at 6ms.
	if end := s.ends[1]; end != 6*ms {
		t.Errorf("the query at 5ms ended at %v, want 6ms (query_time 1ms)", end)
	}
	if st := s.svc.Stats().All; st.Attempts != 6 || st.Rejected != 2 || st.Succeeded != 4 {
		t.Errorf("stats %+v: want 6 attempts, 2 refused, 4 answered", st)
	}
	// A service without query_time has no endpoint.
	none := newScripted(t, parseScenario(t, keyedWrites(strings.Replace(yaml, "    query_time: {dist: constant, value: 1ms}\n", "", 1))), "svc")
	none.run([]time.Duration{0}, func(int) *http.Request { return query("k", false) })
	if rec := none.answers[0]; rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "no query endpoint") {
		t.Errorf("a query to a service without query_time: %d %q, want 400 naming the missing endpoint", rec.Code, rec.Body.String())
	}
}
