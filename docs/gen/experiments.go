package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/stormsim/stormsim/analysis"
	"github.com/stormsim/stormsim/experiments"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/plots"
	"github.com/stormsim/stormsim/sim"
	"github.com/stormsim/stormsim/topology"
)

func workers() int { return runtime.GOMAXPROCS(0) }

// plotSpec is one overlay figure of an experiment's variants.
type plotSpec struct {
	file, column, title, ylabel string
	logY                        bool
	// custom, when set, draws the figure instead of an overlay of column.
	custom func(r *results, variants []string) (*plot.Plot, error)
}

// expDoc says how one experiment is documented: how many seeds each
// variant runs, the rows comparing our result with the published one, and
// the figures.
type expDoc struct {
	seeds int // runs per variant (seeds 1…n); 0 means the scenario's seed only
	rows  func(r *results) [][3]string
	plots []plotSpec
}

// results holds an experiment's runs by variant ("baseline" for the file
// as written), one per seed.
type results struct {
	// seed is the scenario's own seed, whose run the plots show.
	seed uint64
	sc   map[string][]*topology.Scenario
	runs map[string][]*metrics.Result
}

// first returns the run of a variant with the scenario's own seed.
func (r *results) first(v string) *metrics.Result {
	for i, sc := range r.sc[v] {
		if sc.Seed == r.seed {
			return r.runs[v][i]
		}
	}
	return r.runs[v][0]
}

func svc(r *metrics.Result, name string) metrics.ServiceSummary {
	for _, s := range r.Summary.Services {
		if s.Name == name {
			return s
		}
	}
	return metrics.ServiceSummary{}
}

func edgeOf(r *metrics.Result, from, to string) metrics.EdgeSummary {
	for _, e := range r.Summary.Edges {
		if e.From == from && e.To == to {
			return e
		}
	}
	return metrics.EdgeSummary{}
}

// sum adds a series column over the intervals starting in [from, to).
func sum(r *metrics.Result, column string, from, to time.Duration) float64 {
	ts := r.Series
	i := ts.Column(column)
	if i < 0 {
		return math.NaN()
	}
	s := 0.0
	for k, row := range ts.Rows {
		if at := ts.Start + time.Duration(k)*ts.Interval; at >= from && at < to {
			s += row[i]
		}
	}
	return s
}

func recovers(sc *topology.Scenario, r *metrics.Result, cfg analysis.DetectorConfig) analysis.Verdict {
	s, err := analysis.SeriesOf(r, sc.Duration)
	if err != nil {
		return analysis.Verdict{}
	}
	trig, err := analysis.TriggerOf(sc)
	if err != nil {
		return analysis.Verdict{}
	}
	v, _ := analysis.Detect(s, sc.Warmup, trig, cfg)
	return v
}

func mean(xs []float64) float64 {
	m := 0.0
	for _, x := range xs {
		m += x
	}
	return m / float64(len(xs))
}

func pct(x float64) string { return fmt.Sprintf("%.1f %%", 100*x) }

func amp(r *metrics.Result, s string) string { return fmt.Sprintf("%.3g×", svc(r, s).Amplification) }

var docs = map[string]expDoc{
	"five-layer-chain": {
		rows: func(r *results) [][3]string {
			b := r.first("baseline")
			return [][3]string{
				{"attempts at s5 per request", "3⁵ = 243", amp(b, "s5")},
				{"attempts at s4 / s3 / s2 / s1", "81 / 27 / 9 / 3", amp(b, "s4") + " / " + amp(b, "s3") + " / " + amp(b, "s2") + " / " + amp(b, "s1")},
				{"requests failed", "all", fmt.Sprintf("%d of %d", b.Summary.Requests.Failed, b.Summary.Requests.Offered)},
			}
		},
		plots: []plotSpec{{"amplification", "amplification/s5", "attempts at s5 per logical request", "attempts per request", false, nil}},
	},
	"sre-nested-retries": {
		rows: func(r *results) [][3]string {
			b, e := r.first("baseline"), r.first("retry-at-edge-only")
			return [][3]string{
				{"attempts at db per request", "4 × 4 × 4 = 64", amp(b, "db")},
				{"backend / frontend", "16 / 4", amp(b, "backend") + " / " + amp(b, "frontend")},
				{"retry at the edge only: db", "4", amp(e, "db")},
			}
		},
		plots: []plotSpec{{"amplification", "amplification/db", "attempts at db per logical request", "attempts per request", true, nil}},
	},
	"proxy-retry-layers": {
		rows: func(r *results) [][3]string {
			row := func(label, published, v string) [3]string {
				x := r.first(v)
				perReq := float64(x.Summary.Duplicates) / float64(x.Summary.Requests.Offered)
				return [3]string{label, published, fmt.Sprintf("%s, %.3g duplicates", amp(x, "db"), perReq)}
			}
			return [][3]string{
				row("as deployed: commits at db per request", "3 × 3 × 4 = 36, 35 duplicates", "baseline"),
				row("retries at the app only", "3, 2 duplicates", "retries-at-one-layer"),
				row("nginx's default (non_idempotent off)", "1 × 3 × 4 = 12, 11 duplicates", "nginx-default"),
				row("HAProxy disable-l7-retry for POST", "3 × 3 × 1 = 9, 8 duplicates", "disable-l7-retry"),
				row("both proxies fixed", "3, 2 duplicates", "both-proxies-fixed"),
				row("idempotency keys", "36 attempts, no duplicate", "idempotency-keys"),
			}
		},
		plots: []plotSpec{{"amplification", "amplification/db", "attempts at db per logical request", "attempts per request", true, nil}},
	},
	"independent-failures": {
		rows: func(r *results) [][3]string {
			b, ratio, grpc := r.first("baseline"), r.first("ratio-10pct"), r.first("grpc-token-bucket")
			rate := func(x *metrics.Result) string {
				return pct(float64(x.Summary.Requests.Succeeded) / float64(x.Summary.Requests.Offered))
			}
			return [][3]string{
				{"success, f = 0.5, N = 3", "1 − f⁴ = 93.75 %", rate(b)},
				{"load (attempts per request)", "(1 − f⁴)/(1 − f) = 1.875", amp(b, "svc")},
				{"10 % ratio budget: success / load", "(1 − f)(1 + 0.1) = 55 % / 1.1", rate(ratio) + " / " + amp(ratio, "svc")},
				// The published result covers the closed form; the budgets' steady states are derived in the scenario's header.
				{"gRPC token bucket: success / load", "→ 1 − f = 50 % / → 1", rate(grpc) + " / " + amp(grpc, "svc")},
				{"AWS retry quota: success / load", "balance at 0.2 retries/request: 60 % / 1.2", rate(r.first("aws-quota")) + " / " + amp(r.first("aws-quota"), "svc")},
				{"Envoy concurrency budget: success / load", "never binds here: 93.75 % / 1.875", rate(r.first("envoy-concurrency")) + " / " + amp(r.first("envoy-concurrency"), "svc")},
			}
		},
		plots: []plotSpec{{"goodput", "goodput", "goodput: retries vs retry budgets", "requests/s", false, nil}},
	},
	"congestive-collapse": {
		seeds: 20,
		rows: func(r *results) [][3]string {
			var collapsed int
			var starts, succ, retries []float64
			for _, x := range r.runs["baseline"] {
				s := sum(x, "succeeded", 70*time.Second, 80*time.Second) / 10
				succ = append(succ, s)
				starts = append(starts, sum(x, "offered", 70*time.Second, 80*time.Second)/10)
				retries = append(retries, sum(x, "retries/client->server", 70*time.Second, 80*time.Second)/10)
				if s < 5 {
					collapsed++
				}
			}
			var ttr []float64
			for i, x := range r.runs["full-jitter-backoff"] {
				v := recovers(r.sc["full-jitter-backoff"][i], x, analysis.DetectorConfig{AmpTolerance: math.Inf(1)})
				if v.Recovers {
					ttr = append(ttr, 25+v.TimeToRecover.Seconds())
				}
			}
			n := len(r.runs["baseline"])
			return [][3]string{
				{"no backoff, t = 70–79 s: starts/s", "~40", fmt.Sprintf("%.1f", mean(starts))},
				{"no backoff, t = 70–79 s: successes/s", "~16 (10-run average)", fmt.Sprintf("%.1f (%d-run average)", mean(succ), n)},
				{"no backoff, t = 70–79 s: retries/s", "~48", fmt.Sprintf("%.1f", mean(retries))},
				{"no backoff: runs that collapse", "≈ 60 % (implied by 16 of 40)", fmt.Sprintf("%d of %d", collapsed, n)},
				{"full-jitter backoff: recovered by", "t ≈ 40 s", fmt.Sprintf("t = %.0f s on average (%d of %d runs recover)", mean(ttr), len(ttr), n)},
			}
		},
		plots: []plotSpec{{"goodput", "succeeded", "successes per second (seed 2): a 5 s spike at t = 20 s", "successes/s", false, nil},
			{"retries", "retries/client->server", "retries per second (seed 2)", "retries/s", false, nil}},
	},
	"metastable-capacity-drop": {
		seeds: 12,
		rows: func(r *results) [][3]string {
			count := func(v string, bound time.Duration) string {
				stuck := 0
				for i, x := range r.runs[v] {
					if !recovers(r.sc[v][i], x, analysis.DetectorConfig{RecoveryBound: bound}).Recovers {
						stuck++
					}
				}
				return fmt.Sprintf("%d of %d runs stay metastable", stuck, len(r.runs[v]))
			}
			return [][3]string{
				{"deep, long trigger", "0.40 cores for 10 s: metastable", "capacity 0.75 for 10 s: " + count("baseline", 0)},
				{"slightly milder trigger", "0.45 cores for 10 s: recovers", "capacity 0.825 for 10 s: " + count("milder-drop", 0)},
				{"shorter trigger", "0.40 cores for 9 s: recovers", "capacity 0.75 for 5 s: " + count("shorter-drop", 0)},
				{"on the boundary", "—", "capacity 0.8 for 10 s: " + count("on-the-boundary", 0)},
				{"retry budget (not in the paper)", "—", "capacity 0.75 for 10 s, 10 % budget: " + count("budget", 45*time.Second)},
			}
		},
		plots: []plotSpec{{"goodput", "goodput", "goodput: the capacity drop at t = 30 s and its variants", "requests/s", false, nil},
			{"queue", "queue/db", "database queue", "requests", false, nil}},
	},
	"jitter-herd": {
		seeds: 200,
		rows: func(r *results) [][3]string {
			stat := func(v string) (float64, float64) {
				var c, f []float64
				for _, x := range r.runs[v] {
					c = append(c, float64(svc(x, "row").Attempts))
					f = append(f, x.Summary.LatencyMs.Max)
				}
				return mean(c), mean(f)
			}
			nc, nf := stat("baseline")
			fc, ff := stat("full")
			ec, ef := stat("equal")
			dc, df := stat("decorrelated")
			return [][3]string{
				{"calls, no jitter", "highest", fmt.Sprintf("%.0f (completion %.1f s)", nc, nf/1000)},
				{"calls, full jitter", "under half of no jitter", fmt.Sprintf("%.0f = %.0f %% of no jitter (completion %.2f s)", fc, 100*fc/nc, ff/1000)},
				{"equal jitter", "calls close to full, slower", fmt.Sprintf("%.0f calls, completion %.2f s", ec, ef/1000)},
				{"decorrelated jitter", "somewhat more calls, fastest", fmt.Sprintf("%.0f calls, completion %.2f s", dc, df/1000)},
			}
		},
		plots: []plotSpec{{"calls", "attempts/row", "calls to the row per 100 ms (seed 1)", "calls", false, nil},
			{file: "done", title: "clients done by time t (seed 1)", custom: completionCDF}},
	},
	"hedging-tail": {
		rows: func(r *results) [][3]string {
			b, f, a := r.first("baseline"), r.first("hedge-fixed-p95"), r.first("hedge-p95")
			h := func(x *metrics.Result) string {
				e := edgeOf(x, "client", "store")
				return pct(float64(e.HedgesSent) / float64(e.Calls))
			}
			return [][3]string{
				{"extra load, hedge at p95", "≈ 5 %", h(f) + " (true p95, 10.49 ms); " + h(a) + " (learnt p95)"},
				{"p99 without hedging", "slow mode", fmt.Sprintf("%.0f ms (theory 733 ms)", b.Summary.LatencyMs.P99)},
				{"p99 with hedging", "tens of ms", fmt.Sprintf("%.1f ms (theory 15.7 ms); %.1f ms learnt", f.Summary.LatencyMs.P99, a.Summary.LatencyMs.P99)},
				{"p99.9 with / without", "BigTable: 1,800 → 74 ms", fmt.Sprintf("%.0f → %.0f ms", b.Summary.LatencyMs.P999, f.Summary.LatencyMs.P999)},
			}
		},
		plots: []plotSpec{{"p99", "latency_p99_ms", "end-to-end p99 per second", "ms", true, nil}},
	},
	"deadline-budget": {
		rows: func(r *results) [][3]string {
			b, p := r.first("baseline"), r.first("propagated")
			return [][3]string{
				{"wasted attempts at the bottom", "fewer with deadlines", fmt.Sprintf("%d → %d", svc(b, "bottom").Wasted, svc(p, "bottom").Wasted)},
				{"goodput", "higher with deadlines", fmt.Sprintf("%.0f → %.0f req/s", b.Summary.GoodputRPS, p.Summary.GoodputRPS)},
				{"after the slowdown", "—", fmt.Sprintf("fixed: %v; propagated: %v",
					recovers(r.sc["baseline"][0], b, analysis.DetectorConfig{RecoveryBound: 15 * time.Second}),
					recovers(r.sc["propagated"][0], p, analysis.DetectorConfig{RecoveryBound: 15 * time.Second}))},
			}
		},
		plots: []plotSpec{{"goodput", "goodput", "goodput: fixed timeouts vs a propagated deadline", "requests/s", false, nil}},
	},
	"retry-layer": {
		rows: func(r *results) [][3]string {
			a := func(x *metrics.Result) float64 {
				return sum(x, "attempts/store", 20*time.Second, 35*time.Second) / sum(x, "offered", 20*time.Second, 35*time.Second)
			}
			b, e := r.first("baseline"), r.first("edge-only")
			return [][3]string{
				{"store attempts per request during the fault", "up to 3⁴ = 81 vs ≤ 3", fmt.Sprintf("%.1f vs %.2f", a(b), a(e))},
				{"requests succeeded", "edge-only keeps more", fmt.Sprintf("%d vs %d", b.Summary.Requests.Succeeded, e.Summary.Requests.Succeeded)},
				{"after the fault", "—", fmt.Sprintf("every hop: %v; edge only: %v",
					recovers(r.sc["baseline"][0], b, analysis.DetectorConfig{RecoveryBound: 20 * time.Second}),
					recovers(r.sc["edge-only"][0], e, analysis.DetectorConfig{RecoveryBound: 20 * time.Second}))},
			}
		},
		plots: []plotSpec{{"amplification", "amplification/store", "attempts at the store per request", "attempts per request", true, nil}},
	},
	"fan-out-tail": {
		rows: func(r *results) [][3]string {
			slow := func(x *metrics.Result) string {
				var s int64
				for _, b := range x.Latency.Distribution() {
					if b.From >= 50000 {
						s += b.Count
					}
				}
				return fmt.Sprintf("%s (%d of %d)", pct(float64(s)/float64(x.Latency.TotalCount())), s, x.Latency.TotalCount())
			}
			return [][3]string{
				{"slow, waiting for all of 100", "1 − 0.99¹⁰⁰ = 63.4 %", slow(r.first("baseline"))},
				{"slow, waiting for all of 5", "1 − 0.99⁵ = 4.9 %", slow(r.first("all-of-5"))},
				{"slow, waiting for 3 of 5", "≈ 10⁻⁵", slow(r.first("quorum-3-of-5"))},
			}
		},
	},
	"pushback": {
		rows: func(r *results) [][3]string {
			b, h := r.first("baseline"), r.first("honor-pushback")
			return [][3]string{
				{"failed requests", "fewer when honoured", fmt.Sprintf("%d → %d", b.Summary.Requests.Failed, h.Summary.Requests.Failed)},
				{"goodput", "—", fmt.Sprintf("%.0f → %.0f req/s", b.Summary.GoodputRPS, h.Summary.GoodputRPS)},
				{"peak queue", "—", fmt.Sprintf("%d → %d", svc(b, "api").QueueMax, svc(h, "api").QueueMax)},
				{"attempts per request", "—", amp(b, "api") + " → " + amp(h, "api")},
				{"shedding server: peak queue", "lower when honoured", fmt.Sprintf("%d → %d", svc(r.first("shedding"), "api").QueueMax, svc(r.first("shedding-honor-pushback"), "api").QueueMax)},
				{"shedding server: attempts per request", "fewer when honoured", amp(r.first("shedding"), "api") + " → " + amp(r.first("shedding-honor-pushback"), "api")},
			}
		},
		plots: []plotSpec{
			{"failed", "failed", "failed requests per second", "requests/s", false, nil},
			{"queue", "queue/api", "queue length at api (mean per second)", "requests queued", false, nil},
		},
	},
	"breaker": {
		rows: func(r *results) [][3]string {
			b, k := r.first("baseline"), r.first("consecutive-breaker")
			per := func(x *metrics.Result) string {
				return fmt.Sprintf("%.2f", sum(x, "attempts/dep", 21*time.Second, 40*time.Second)/sum(x, "offered", 21*time.Second, 40*time.Second))
			}
			return [][3]string{
				{"dep attempts per request in the outage", "3 without, ≈ 0 with", per(b) + " vs " + per(k)},
				{"breaker fast fails / opens", "—", fmt.Sprintf("%d / %d", edgeOf(k, "api", "dep").BreakerFastFail, edgeOf(k, "api", "dep").BreakerOpens)},
			}
		},
		plots: []plotSpec{{"attempts", "attempts/dep", "attempts reaching the dependency per second", "attempts/s", false, nil}},
	},
	"open-vs-closed": {
		rows: func(r *results) [][3]string {
			o, c := r.first("baseline"), r.first("closed-one-client")
			return [][3]string{
				{"open loop: mean sojourn", "0.5 s", fmt.Sprintf("%.3f s", o.Summary.LatencyMs.Mean/1000)},
				{"open loop: p99", "≈ 2.30 s", fmt.Sprintf("%.2f s", o.Summary.LatencyMs.P99/1000)},
				{"closed loop, one client: p99", "≈ 0.46 s", fmt.Sprintf("%.2f s", c.Summary.LatencyMs.P99/1000)},
				{"closed loop: throughput", "10/s (it cannot offer more)", fmt.Sprintf("%.2f req/s", c.Summary.GoodputRPS)},
			}
		},
	},
	"order-timeout": {
		rows: func(r *results) [][3]string {
			row := func(v string) string {
				x := r.first(v)
				s := x.Summary
				return fmt.Sprintf("%d succeeded, %d unknown, %d executions, %d duplicates, %d unknown but committed",
					s.Requests.Succeeded, s.Requests.Unknown, svc(x, "orders").Executions, s.Duplicates, s.UnknownCommitted)
			}
			return [][3]string{
				{"retry, no key", "the order is placed twice", row("baseline")},
				{"retry, idempotency key", "placed once", row("idempotency-keys")},
				{"no retry", "the client sees UNKNOWN, the order exists", row("no-retry")},
			}
		},
	},
	"deploy-reconnect": {
		rows: func(r *results) [][3]string {
			row := func(v string) string {
				x := r.first(v)
				s, e := x.Summary, x.Summary.Edges[0]
				return fmt.Sprintf("%d of %d unknown, %d retries, %d duplicates; %d handshakes, pool wait max %.0f ms",
					s.Requests.Unknown, s.Requests.Offered, e.Retries, s.Duplicates, e.Pool.Handshakes, e.Pool.WaitMaxMs)
			}
			return [][3]string{
				{"one 100 ms timeout per attempt", "a spike of timeouts and retries", row("baseline")},
				{"phase timeouts + transparent retry", "no spike", row("phase-timeouts")},
			}
		},
		plots: []plotSpec{
			{"goodput", "goodput", "goodput: a deploy resets every connection at 20 s", "requests/s", false, nil},
			{"retries", "retries/client->api", "client retries after the reset", "retries per interval", false, nil},
		},
	},
	"lost-response": {
		rows: func(r *results) [][3]string {
			b, k := r.first("baseline"), r.first("idempotency-keys")
			return [][3]string{
				{"duplicates without keys", "≈ 1 % of writes", fmt.Sprintf("%d of %d writes", b.Summary.Duplicates, b.Summary.Requests.Offered)},
				{"duplicates with keys", "0", fmt.Sprint(k.Summary.Duplicates)},
			}
		},
	},
	"outbox-order": {
		rows: func(r *results) [][3]string {
			c := func(v string) *metrics.ConsumerSummary { return svc(r.first(v), "inventory").Consumer }
			row := func(v string) string {
				x := c(v)
				return fmt.Sprintf("%d intents: %d lost, %d duplicate, %d out of order", x.Intents, x.LostEffects, x.DuplicateEffects, x.OutOfOrderEffects)
			}
			st := c("redelivery-storm")
			return [][3]string{
				{"dual write", "events lost (≈ 1 % of intents)", row("baseline")},
				{"outbox, effect then ack", "none lost, duplicates (≈ 1 % + ≈ 0.5 %)", row("outbox")},
				{"outbox, dedup in the effect's transaction", "neither", row("outbox-dedup")},
				{"the same, ordered per key", "neither, in order", row("outbox-dedup-ordered")},
				{"consumer slowed past its ack deadline", "≈ 5,600 redeliveries, ≈ 400 dead-lettered",
					fmt.Sprintf("%d redeliveries, %d dead-lettered, %d duplicate effects", st.Redeliveries, st.DeadLettered, st.DuplicateEffects)},
			}
		},
		plots: []plotSpec{{"deliveries", "deliveries/inventory", "deliveries to inventory per second", "deliveries/s", false, nil}},
	},
	"order-recovery": {
		rows: func(r *results) [][3]string {
			row := func(v string) string {
				x := r.first(v).Summary
				c := x.Certainty
				b := c.ResolvedBy
				return fmt.Sprintf("%d orders, %d duplicates; certain by reply %d, query %d, recovery %d, reconciliation %d, manual %d, never %d; %d alerts; p99 %.0f ms",
					c.Intents, x.Duplicates, b.Reply, b.Query, b.Recovery, b.Reconciliation, b.Manual, b.Never, c.Alerts, c.P99Ms)
			}
			inv := svc(r.first("baseline"), "inventory").Consumer
			rec := func(v string) string {
				x := r.first(v).Summary.Certainty.Reconciliation
				return fmt.Sprintf("%d repaired, %d twice, %d to the manual queue, over %d scans", x.Repaired, x.Rerepaired, x.ToManual, x.Runs)
			}
			verdict := func(v string) string {
				for i, sc := range r.sc[v] {
					if sc.Seed == r.seed {
						s := r.runs[v][i].Summary
						s.Verdict = analysis.Assess(sc, r.runs[v][i])
						return v + ": " + metrics.OutcomeText(&s)
					}
				}
				return v + ": not run"
			}
			return [][3]string{
				{"verdict, trigger 20–45 s (the crashes all run long are background)", "recovers once stuck orders can be settled",
					verdict("baseline") + "; " + verdict("warehouse-query") + "; " + verdict("reconcile-often")},
				{"warehouse without an idempotent query", "one order per key; stuck orders to the manual queue, alerted", row("baseline")},
				{"each event changes inventory once", "0 duplicate effects", fmt.Sprintf("%d events published for %d orders, %d duplicate effects", inv.Published, inv.Intents, inv.DuplicateEffects)},
				{"warehouse with a query endpoint", "recovery and reconciliation settle every stuck order", row("warehouse-query")},
				{"reconciliation run twice", "the same repairs, none twice", rec("warehouse-query") + " vs " + rec("reconcile-often")},
			}
		},
		plots: []plotSpec{{"unknown", metrics.ColUnknownIntents, "orders unknown at each second's end", "orders", false, nil}},
	},
	"polling-storm": {
		rows: func(r *results) [][3]string {
			row := func(v string) string {
				x := r.first(v).Summary
				c, o := x.Certainty, svc(r.first(v), "order")
				return fmt.Sprintf("%d queries (%.1f per polling intent), order amplification %.1f; %d never certain; p99 time to certainty %.1f s",
					c.Queries, c.QueriesPerIntent, o.Amplification, c.ResolvedBy.Never, c.P99Ms/1000)
			}
			return [][3]string{
				{"poll every 100 ms, no jitter", "a storm of queries at the committing service", row("fixed")},
				{"random phase, ×2 backoff, full jitter, 2 s cap", "far fewer queries, certainty sooner", row("backoff")},
			}
		},
		plots: []plotSpec{{"attempts", metrics.Column(metrics.MetricAttempts, "order"), "attempts at order per second (writes and queries)", "attempts/s", true, nil}},
	},
	"metastable-retry-storm": {
		rows: func(r *results) [][3]string {
			return [][3]string{
				{"plain retries after the trigger", "metastable", recovers(r.sc["baseline"][0], r.first("baseline"), analysis.DetectorConfig{}).String()},
				{"10 % budgets on every edge", "recovers", recovers(r.sc["budget"][0], r.first("budget"), analysis.DetectorConfig{}).String()},
			}
		},
		plots: []plotSpec{{"goodput", "goodput", "goodput: plain retries vs retry budgets", "requests/s", false, nil}},
	},
	"retry-storm": {
		rows: func(r *results) [][3]string {
			a := func(x *metrics.Result) string {
				return fmt.Sprintf("%.1f", sum(x, "attempts/db", 20*time.Second, 30*time.Second)/sum(x, "offered", 20*time.Second, 30*time.Second))
			}
			return [][3]string{
				{"db attempts per request in the fault", "up to 27", a(r.first("baseline")) + " (plain), " + a(r.first("budget-10pct")) + " (budgets), " + a(r.first("edge-only-backoff")) + " (edge only)"},
			}
		},
		plots: []plotSpec{{"amplification", "amplification/db", "attempts at db per request", "attempts per request", true, nil}},
	},
}

// genExperiments runs every documented experiment and renders its block
// and plots.
func genExperiments(root string, o *output) error {
	names := experiments.Names()
	errs := make([]error, len(names))
	for i, name := range names {
		errs[i] = genExperiment(root, name, o)
	}
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("%s: %w", names[i], err)
		}
	}
	return nil
}

func genExperiment(root, name string, o *output) error {
	d, ok := docs[name]
	if !ok {
		return fmt.Errorf("no documentation entry in docs/gen (add one to the docs map)")
	}
	data, _ := experiments.Lookup(name)
	base, err := topology.Parse(name+".yaml", data, nil)
	if err != nil {
		return err
	}
	variants := []string{"baseline"}
	for _, v := range base.Variants {
		variants = append(variants, v.Name)
	}
	res := &results{seed: base.Seed, sc: map[string][]*topology.Scenario{}, runs: map[string][]*metrics.Result{}}
	type job struct {
		v  string
		sc *topology.Scenario
	}
	var jobs []job
	for _, v := range variants {
		sc := base
		if v != "baseline" {
			if sc, err = base.Variant(v); err != nil {
				return err
			}
		}
		if d.seeds == 0 {
			jobs = append(jobs, job{v, sc})
			continue
		}
		for s := 1; s <= d.seeds; s++ {
			x, err := sc.WithSets("seed=" + strconv.Itoa(s))
			if err != nil {
				return err
			}
			jobs = append(jobs, job{v, x})
		}
	}
	out := make([]*metrics.Result, len(jobs))
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, workers())
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			out[i], errs[i] = sim.Run(context.Background(), j.sc, sim.Options{})
		}()
	}
	wg.Wait()
	for i, j := range jobs {
		if errs[i] != nil {
			return errs[i]
		}
		res.sc[j.v] = append(res.sc[j.v], j.sc)
		res.runs[j.v] = append(res.runs[j.v], out[i])
	}

	var b strings.Builder
	b.WriteString("\n| | published | stormsim |\n|---|---|---|\n")
	for _, r := range d.rows(res) {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", r[0], r[1], r[2])
	}
	if d.seeds > 0 {
		fmt.Fprintf(&b, "\nEach variant ran %d seeds (1–%d).\n", d.seeds, d.seeds)
	}
	for _, p := range d.plots {
		file := name + "-" + p.file
		var png []byte
		if p.custom != nil {
			png, err = render(p.custom(res, variants))
		} else {
			png, err = overlay(res, variants, file, p)
		}
		if err != nil {
			return fmt.Errorf("plot %s: %w", p.file, err)
		}
		o.file("docs/experiments/img/"+file+".png", png)
		fmt.Fprintf(&b, "\n![%s](img/%s.png)\n", p.title, file)
	}
	b.WriteString("\n")
	o.block("docs/experiments/"+name+".md", b.String(), freshPage(name, data))
	return nil
}

// overlay draws one column of every variant's first run and returns the PNG.
func overlay(r *results, variants []string, file string, p plotSpec) ([]byte, error) {
	dir, err := os.MkdirTemp("", "stormsim-plot-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	m := map[string]*metrics.Result{}
	for _, v := range variants {
		m[v] = r.first(v)
	}
	opts := []plots.OverlayOption{plots.WithTitle(p.title), plots.WithYLabel(p.ylabel), plots.WithOrder(variants...)}
	if p.logY {
		opts = append(opts, plots.WithLogY())
	}
	if _, err := plots.Overlay(dir, file, m, p.column, opts...); err != nil {
		return nil, err
	}
	return os.ReadFile(filepath.Join(dir, file+".png"))
}

// render draws a plot as a PNG of the standard size.
func render(p *plot.Plot, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	wt, err := p.WriterTo(plots.Width, plots.Height, "png")
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if _, err := wt.WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// completionCDF draws, per variant, the share of logical requests that had
// succeeded by each time (from the end-to-end latency histogram), on a log
// time axis: when the herd is done.
func completionCDF(r *results, variants []string) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "clients done by time t (seed 1)"
	p.X.Label.Text = "time since the clients started (s, log scale)"
	p.Y.Label.Text = "share of clients done"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Legend.Top = false
	p.Legend.Left = true
	for i, v := range variants {
		h := r.first(v).Latency
		total := float64(h.TotalCount())
		var pts plotter.XYs
		done := 0.0
		for _, b := range h.Distribution() {
			if b.Count == 0 {
				continue
			}
			done += float64(b.Count)
			pts = append(pts, plotter.XY{X: float64(b.To) / 1e6, Y: done / total})
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, err
		}
		l.Color = plotutil.Color(i)
		l.Width = vg.Points(2)
		p.Add(l)
		p.Legend.Add(v, l)
	}
	p.Add(plotter.NewGrid())
	return p, nil
}

// freshPage is the page written for an experiment that has none yet: its
// header comment (a paragraph per "Label:" it opens), how to run it, and
// the generated block. Prose added below the block is the author's.
func freshPage(name string, yaml []byte) string {
	var paras []string
	var cur []string
	flush := func() {
		if len(cur) > 0 {
			paras = append(paras, strings.Join(cur, "\n"))
			cur = nil
		}
	}
	lines := strings.Split(string(yaml), "\n")
	title := ""
	for i, line := range lines {
		if !strings.HasPrefix(line, "#") {
			break
		}
		text := strings.TrimPrefix(strings.TrimPrefix(line, "#"), " ")
		if i == 0 {
			_, title, _ = strings.Cut(text, ": ")
			continue
		}
		if strings.TrimSpace(text) == "" {
			flush()
			continue
		}
		for _, label := range []string{"What it shows:", "Source:", "Expected", "Model difference:"} {
			if strings.HasPrefix(text, label) {
				flush()
				if l, rest, ok := strings.Cut(text, ":"); ok {
					text = "**" + l + ":**" + rest
				}
			}
		}
		cur = append(cur, text)
	}
	flush()
	return fmt.Sprintf("# %s\n\n*%s*\n\n%s\n\nScenario: [experiments/%s.yaml](../../experiments/%s.yaml)\n\n```\nstormsim run %s\nstormsim compare experiments/%s.yaml\n```\n\n## Ours against the published result\n\n%s\n%s\n",
		name, title, strings.Join(paras, "\n\n"), name, name, name, name, beginMarker, endMarker)
}
