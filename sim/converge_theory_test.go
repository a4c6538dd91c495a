package sim

import (
	"math"
	"testing"

	"github.com/stormsim/stormsim/metrics"
)

// Replies lost at rate p. A write commits in C = 200ms; its reply comes
// back then (certain by reply), or is lost and the client's call ends
// unknown at its timeout T = 300ms. The client then polls every I = 100ms
// from a random phase: the first query at T + U(0, I), answered after
// q = 1ms. A query's reply is lost at rate p too, and costs its timeout
// t = 20ms before the next wait. So for an intent whose reply was lost
//
//	time to certainty = T + q + U(0, I) + G·(t + I),  G ~ Geometric(p): P(G=g) = (1−p)·p^g
//	queries per intent = 1 + G, mean 1/(1−p)
//
// and over all intents the time to certainty is C with weight 1−p and the
// above with weight p. Tolerances are four standard errors of the
// estimates at the run's sample size; workers are plentiful, so nothing
// queues.
const lostAtRate = `
name: lost-at-rate
seed: 7
duration: 200s
workload:
  entry: orders
  rate: 20
  write_fraction: 1
  idempotency_keys: true
  client: {timeout: 300ms}
  query: {first_delay: 0s, interval: 100ms, random_phase: true, deadline: 1h, call: {timeout: 20ms}}
services:
  - name: orders
    workers: 200
    service_time: {dist: constant, value: 200ms}
    query_time: {dist: constant, value: 1ms}
faults:
  - {service: orders, at: 0s, for: 1h, drop_response: 0.3}
`

func TestCertaintyUnderLostReplies(t *testing.T) {
	res := runYAML(t, "lost-at-rate", lostAtRate)
	checkLostReplies(t, res, lostReplies{p: 0.3, C: 200, T: 300, q: 1, I: 100, tmo: 20})
}

// lostReplies is the law of time to certainty under replies lost at rate
// p, in milliseconds: commit time C, the caller's timeout T, the query
// endpoint's time q, the query interval I (from a random phase) and a
// query's own timeout tmo (see lostAtRate).
type lostReplies struct{ p, C, T, q, I, tmo float64 }

// checkLostReplies checks res's certainty against the law l: the share
// resolved by query, the queries per querying intent, the mean time to
// certainty and two quantiles inside the uniform share, each within four
// standard errors at the run's sample size.
func checkLostReplies(t *testing.T, res *metrics.Result, l lostReplies) {
	t.Helper()
	p, C, T, q, I, tmo := l.p, l.C, l.T, l.q, l.I, l.tmo
	c := res.Summary.Certainty
	n := float64(c.Intents)
	if n < 3000 || c.ResolvedBy.Never != 0 || c.ResolvedBy.Reply+c.ResolvedBy.Query != c.Intents {
		t.Fatalf("certainty %+v: want every intent resolved by reply or query", *c)
	}
	// Share resolved by query: Binomial(n, p).
	got := float64(c.ResolvedBy.Query)
	if sd := math.Sqrt(n * p * (1 - p)); math.Abs(got-n*p) > 4*sd {
		t.Errorf("resolved by query %v, want %v ± %.0f", got, n*p, 4*sd)
	}
	// Queries per querying intent: 1 + G.
	nq := got
	meanQ, sdQ := 1/(1-p), math.Sqrt(p)/(1-p)
	if tol := 4 * sdQ / math.Sqrt(nq); math.Abs(c.QueriesPerIntent-meanQ) > tol {
		t.Errorf("queries per intent %.4f, want %.4f ± %.4f", c.QueriesPerIntent, meanQ, tol)
	}
	// Mean time to certainty over the mixture.
	eG, varG := p/(1-p), p/((1-p)*(1-p))
	meanL := T + q + I/2 + (tmo+I)*eG
	varL := I*I/12 + (tmo+I)*(tmo+I)*varG
	mean := (1-p)*C + p*meanL
	variance := (1-p)*C*C + p*(varL+meanL*meanL) - mean*mean
	if tol := 4 * math.Sqrt(variance/n); math.Abs(c.MeanMs-mean) > tol {
		t.Errorf("mean time to certainty %.2fms, want %.2f ± %.2f", c.MeanMs, mean, tol)
	}
	// Quantiles inside the uniform share: for u in [0, I),
	// P(X ≤ T+q+u) = (1−p) + p·(1−p)·u/I.
	h := res.Certainty
	if p50 := float64(h.ValueAtQuantile(50)) / 1000; math.Abs(p50-C) > 0.5 {
		t.Errorf("p50 %.2fms, want C = %v (the replies that came back)", p50, C)
	}
	for _, quant := range []float64{0.8, 0.9} {
		u := (quant - (1 - p)) / (p * (1 - p)) * I
		want := T + q + u
		density := p * (1 - p) / I
		tol := 4 * math.Sqrt(quant*(1-quant)/n) / density
		if x := float64(h.ValueAtQuantile(quant*100)) / 1000; math.Abs(x-want) > tol {
			t.Errorf("p%.0f %.2fms, want %.2f ± %.2f (T + q + a uniform share of I)", quant*100, x, want, tol)
		}
	}
}
