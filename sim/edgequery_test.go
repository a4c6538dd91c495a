package sim

import (
	"testing"

	"github.com/stormsim/stormsim/metrics"
)

// A 2-hop chain, client -> api -> orders. The write commits at orders
// (1ms at api, then 10ms) and orders' reply is lost (drop_response until
// 100ms): api's call ends unknown at its 50ms timeout, at 51ms. api then
// queries orders by the key over the same edge: first_delay = interval =
// 50ms, so at 101ms, when replies pass again; the endpoint answers
// SUCCEEDED after 1ms, api's step succeeds and api answers the client at
// 102ms: certain by query, executed once. On the edge api->orders: two
// calls (the write's and its query), two attempts (one of each), one
// unknown and one succeeded.
const hopLostReply = `
name: hop-lost-reply
duration: 500ms
workload:
  entry: api
  arrival: constant
  rate: 2
  write_fraction: 1
  idempotency_keys: true
  client: {timeout: 1s}
services:
  - name: api
    workers: 1
    service_time: {dist: constant, value: 1ms}
    calls:
      - {to: orders, timeout: 50ms, query: {interval: 50ms}}
  - name: orders
    workers: 1
    commits: true
    service_time: {dist: constant, value: 10ms}
    query_time: {dist: constant, value: 1ms}
faults:
  - {service: orders, at: 0s, for: 100ms, drop_response: 1}
`

func TestHopLostReplyOneQuery(t *testing.T) {
	res := runYAML(t, "hop-lost-reply", hopLostReply)
	s := res.Summary
	c := s.Certainty
	if c == nil {
		t.Fatal("no certainty for a scenario with a call's queries")
	}
	if s.Requests.Offered != 1 || s.Requests.Succeeded != 1 {
		t.Fatalf("requests %+v, want one succeeded write", s.Requests)
	}
	if want := (metrics.ResolvedBy{Query: 1}); c.Intents != 1 || c.ResolvedBy != want || c.Queries != 1 || c.QueriesPerIntent != 1 {
		t.Errorf("certainty %+v: want one intent, resolved by one query", *c)
	}
	if !near(c.P50Ms, 102) || !near(c.MaxMs, 102) {
		t.Errorf("time to certainty p50 %v max %v, want 102ms", c.P50Ms, c.MaxMs)
	}
	orders := serviceOf(t, s, "orders")
	if orders.Executions != 1 || s.Duplicates != 0 || orders.Attempts != 2 || orders.Queries != 1 {
		t.Errorf("orders %+v: want 1 execution, 2 attempts (the write and its query), 1 query", orders)
	}
	var e *metrics.EdgeSummary
	for i := range s.Edges {
		if s.Edges[i].From == "api" && s.Edges[i].To == "orders" {
			e = &s.Edges[i]
		}
	}
	if e == nil {
		t.Fatalf("no edge api->orders in %+v", s.Edges)
	}
	if e.Calls != 2 || e.Attempts != 2 || e.Retries != 0 || e.Unknown != 1 || e.Succeeded != 1 {
		t.Errorf("edge api->orders %+v: want 2 calls and 2 attempts (the write's, then its query), 1 unknown, 1 succeeded", *e)
	}
	if api := serviceOf(t, s, "api"); api.Attempts != 1 || api.Succeeded != 1 {
		t.Errorf("api %+v: want the one attempt, succeeded", api)
	}
}

// The known answer of TestCertaintyUnderLostReplies, one hop down: the
// client -> api -> orders chain, orders' replies (writes' and queries'
// alike) lost at rate p. A write commits at orders in C = 200ms (api's own
// time and the client's timeout are out of the way: api answers in 0ms,
// the client waits 1h), so its reply reaches api, and api's answer the
// client, at C with probability 1−p. Otherwise api's call ends unknown at
// its timeout T = 300ms, and api polls orders over the same edge, under
// the same policy (so a query's lost reply costs the edge's timeout T
// too), every I = 100ms from a random phase, each answered after
// q = 1ms. So for an intent whose reply was lost
//
//	time to certainty = T + q + U(0, I) + G·(T + I),  G ~ Geometric(p): P(G=g) = (1−p)·p^g
//	queries per intent = 1 + G, mean 1/(1−p), variance p/(1−p)²
//
// and over all intents it is C with weight 1−p and the above with weight
// p. Tolerances: four standard errors of each estimate at the run's sample
// size (n intents, np of them queried); the quantiles' by the asymptotic
// variance of a sample quantile, q(1−q)/(n·f²) with f the density there.
const hopLostAtRate = `
name: hop-lost-at-rate
seed: 11
duration: 200s
workload:
  entry: api
  rate: 20
  write_fraction: 1
  idempotency_keys: true
  client: {timeout: 1h}
services:
  - name: api
    workers: 2000
    service_time: {dist: constant, value: 0s}
    calls:
      - {to: orders, timeout: 300ms, query: {first_delay: 0s, interval: 100ms, random_phase: true, deadline: 1h}}
  - name: orders
    workers: 200
    commits: true
    service_time: {dist: constant, value: 200ms}
    query_time: {dist: constant, value: 1ms}
faults:
  - {service: orders, at: 0s, for: 1h, drop_response: 0.3}
`

func TestHopCertaintyUnderLostReplies(t *testing.T) {
	res := runYAML(t, "hop-lost-at-rate", hopLostAtRate)
	s := res.Summary
	c := s.Certainty
	if s.Requests.Unknown != 0 {
		t.Fatalf("requests %+v: want none unknown to the client", s.Requests)
	}
	// A query's lost reply costs the edge's own timeout, T.
	checkLostReplies(t, res, lostReplies{p: 0.3, C: 200, T: 300, q: 1, I: 100, tmo: 300})
	// The queries are attempts on the edge api->orders: one per write and
	// one per query (no retries), and orders counts each query.
	n := c.Intents
	for _, e := range s.Edges {
		if e.From == "api" && e.To == "orders" && e.Attempts != n+c.Queries {
			t.Errorf("edge api->orders: %d attempts, want %d writes + %d queries", e.Attempts, n, c.Queries)
		}
	}
	if got := serviceOf(t, s, "orders").Queries; got != c.Queries {
		t.Errorf("orders counts %d queries, certainty %d", got, c.Queries)
	}
}
