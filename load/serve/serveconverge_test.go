package serve

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stormsim/stormsim/load/transport"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/model"
	"github.com/stormsim/stormsim/sim"
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

// TestServeOneLostReplyOneQuery: the scripted lost reply
// (testdata/lost-reply.yaml, the simulator's TestOneLostReplyOneQuery),
// served on the
// bubble's clock, gives the simulator's exact counts: one intent resolved
// by one query, 151ms to certainty, the committing service's two attempts
// (the write and its query), one execution.
func TestServeOneLostReplyOneQuery(t *testing.T) {
	sc := loadScenario(t, "lost-reply.yaml")
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

// TestServeQueriesAgreeWithSimulator: the same storm of lost replies
// (testdata/lost-replies.yaml: 1000 writes over 10s, each reply — a
// query's too — lost with p = 0.3, queried every 50ms) in
// the simulator and in serve (on the bubble's clock) agrees on the
// intents resolved by reply and by query and on queries per intent,
// within the statistics, and both on the closed form.
//
// Each of the N = 1000 writes is unknown with probability p = 0.3, so
// the unknowns U are binomial: mean Np = 300, sd √(Np(1−p)) = 14.5. Every
// unknown is resolved by a query (the 60s deadline is far), so
// resolved_by.query = U and reply = N − U; two independent runs differ by
// sd 14.5·√2 = 20.5: 4 sd is 82. Queries per unknown intent are geometric
// with success 1−p: mean 1/(1−p) = 1.4286, sd √p/(1−p) = 0.78 per intent,
// 0.78/√300 = 0.045 for the mean over U ≈ 300 intents; each run within 4
// sd (0.18) of the closed form, the two within 4·0.045·√2 = 0.26.
func TestServeQueriesAgreeWithSimulator(t *testing.T) {
	sc := loadScenario(t, "lost-replies.yaml")
	simRes, err := sim.Run(context.Background(), sc, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	simS := simRes.Summary
	res := runInMemory(t, sc, ScenarioOptions{})
	const n, p = 1000, 0.3
	sdU := math.Sqrt(n * p * (1 - p))
	qpi := 1 / (1 - p)
	sdQ := math.Sqrt(p) / (1 - p) / math.Sqrt(n*p)
	for _, run := range []struct {
		name string
		c    *metrics.Certainty
	}{{"simulator", simS.Certainty}, {"serve", res.Summary.Certainty}} {
		c := run.c
		if c == nil {
			t.Fatalf("%s: no certainty", run.name)
		}
		if c.Intents != n || c.ResolvedBy.Reply+c.ResolvedBy.Query != n || c.ResolvedBy.Never != 0 {
			t.Errorf("%s: %d intents resolved by %+v, want %d by reply or query", run.name, c.Intents, c.ResolvedBy, n)
		}
		if d := math.Abs(float64(c.ResolvedBy.Query) - n*p); d > 4*sdU {
			t.Errorf("%s: %d resolved by query, want %v ± %.0f", run.name, c.ResolvedBy.Query, n*p, 4*sdU)
		}
		if d := math.Abs(c.QueriesPerIntent - qpi); d > 4*sdQ {
			t.Errorf("%s: %.3f queries per intent, want %.3f ± %.3f", run.name, c.QueriesPerIntent, qpi, 4*sdQ)
		}
		t.Logf("%s: resolved %+v, queries %d, %.3f per intent, p50 %.1fms p99 %.1fms",
			run.name, c.ResolvedBy, c.Queries, c.QueriesPerIntent, c.P50Ms, c.P99Ms)
	}
	sv, rv := simS.Certainty, res.Summary.Certainty
	if d := math.Abs(float64(sv.ResolvedBy.Query - rv.ResolvedBy.Query)); d > 4*sdU*math.Sqrt2 {
		t.Errorf("resolved by query: simulator %d, serve %d: %.0f apart, want ≤ %.0f", sv.ResolvedBy.Query, rv.ResolvedBy.Query, d, 4*sdU*math.Sqrt2)
	}
	if d := math.Abs(sv.QueriesPerIntent - rv.QueriesPerIntent); d > 4*sdQ*math.Sqrt2 {
		t.Errorf("queries per intent: simulator %.3f, serve %.3f: %.3f apart, want ≤ %.3f", sv.QueriesPerIntent, rv.QueriesPerIntent, d, 4*sdQ*math.Sqrt2)
	}
	// Both series carry the run-wide convergence columns. The queries of a
	// run total Σ over U intents of geometric counts: variance
	// U·p/(1−p)² + Var(U)·(1/(1−p))² = 183 + 428, sd 24.7; two runs' totals
	// differ by sd 35: within 4 sd (140), the series' sums too.
	sq, rq := seriesSum(t, simRes.Series, metrics.ColQueries), seriesSum(t, res.Series, metrics.ColQueries)
	if math.Abs(sq-rq) > 140 || rq > float64(rv.Queries) {
		t.Errorf("queries column: simulator %v, serve %v (serve's certainty %d), want within 140 and ≤ the run's queries", sq, rq, rv.Queries)
	}
	for _, col := range []string{metrics.ColUnknownIntents, metrics.ColManualQueue, metrics.ColCertainP99} {
		seriesSum(t, res.Series, col)
	}
	// The queries are attempts at the committing service: its attempts are
	// the writes and the queries' attempts, in both modes.
	so, ro := serviceNamed(t, simS, "orders"), serviceNamed(t, res.Summary, "orders")
	for _, x := range []struct {
		name string
		s    metrics.ServiceSummary
		q    int64
	}{{"simulator", so, sv.Queries}, {"serve", ro, rv.Queries}} {
		if x.s.Queries != x.q || x.s.Attempts != n+x.q {
			t.Errorf("%s: orders %d attempts, %d queries; certainty %d queries: want attempts = %d writes + queries", x.name, x.s.Attempts, x.s.Queries, x.q, n)
		}
	}
}

// seriesSum is the sum of column col of ts, which must have it.
func seriesSum(t *testing.T, ts *metrics.TimeSeries, col string) float64 {
	t.Helper()
	i := slices.Index(ts.Columns, col)
	if i < 0 {
		t.Fatalf("no column %q in %v", col, ts.Columns)
	}
	sum := 0.0
	for _, row := range ts.Rows {
		sum += row[i]
	}
	return sum
}
