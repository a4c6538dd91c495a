package main

import (
	"fmt"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/plots"
)

// The replica experiments (issue 18), kept apart from the docs map's
// literal so that each page's entry is one hunk.
func init() {
	docs["gray-failure"] = expDoc{
		rows: func(r *results) [][3]string {
			b, p, e, h := r.first("baseline"), r.first("p2c"), r.first("ejection"), r.first("hedge-other-host")
			lost := func(x *metrics.Result) int64 { return x.Summary.Requests.Failed + x.Summary.Requests.Unknown }
			slowShare := func(x *metrics.Result) string {
				db := svc(x, "db")
				return pct(float64(db.Replicas[0].Attempts) / float64(db.Attempts))
			}
			return [][3]string{
				{"round robin: requests lost", "the slow replica's share of the fault (400/s × 30 s = 12,000)", fmt.Sprintf("%d (timed out)", lost(b))},
				{"p2c: requests lost / p99", "none / the slow replica's ~52 ms", fmt.Sprintf("%d / %.1f ms", lost(p), p.Summary.LatencyMs.P99)},
				{"share of db calls to the slow replica", "20 % round robin; ~1/25 in the fault with p2c", slowShare(b) + " / " + slowShare(p) + " over the run"},
				{"ejection: requests lost / ejections", "the calls before 5 timeouts in a row / 1", fmt.Sprintf("%d / %d", lost(e), edgeOf(e, "api", "db").Ejections)},
				{"hedge to another host: lost / p99 / hedges", "none / ~10 ms + a healthy call / ~1 per slow call", fmt.Sprintf("%d / %.1f ms / %d", lost(h), h.Summary.LatencyMs.P99, edgeOf(h, "api", "db").HedgesSent)},
			}
		},
		plots: []plotSpec{
			{"unknown", "unknown", "requests timed out per second", "requests/s", false, nil},
			{"p99", "latency_p99_ms", "end-to-end p99 per second", "ms", true, nil},
			{file: "replicas", title: "db utilization per replica over the run", custom: replicaBars("db")},
			{"slow-replica", "replica_utilization/db#0", "utilization of the slow replica (db#0) per second", "utilization", false, nil},
		},
	}
	docs["fleet-budgets"] = expDoc{
		rows: func(r *results) [][3]string {
			a := func(v string) string {
				x := r.first(v)
				return fmt.Sprintf("%.2f", sum(x, "attempts/api", 20*time.Second, 40*time.Second)/sum(x, "offered", 20*time.Second, 40*time.Second))
			}
			denied := func(v string) int64 { return edgeOf(r.first(v), "client", "api").RetriesDenied }
			return [][3]string{
				{"attempts at the API per request in the outage, 10 instances", "the budget binds", fmt.Sprintf("%s (%d retries denied)", a("baseline"), denied("baseline"))},
				{"1,000 instances", "no protection (3 × 1,000 retries allowed in flight)", fmt.Sprintf("%s (%d denied)", a("instances-1000"), denied("instances-1000"))},
				{"10,000 instances", "no protection (30,000 allowed)", fmt.Sprintf("%s (%d denied)", a("instances-10000"), denied("instances-10000"))},
				{"goodput in the outage", "the API's 500/s whatever the retries", fmt.Sprintf("%.0f / %.0f / %.0f req/s",
					sum(r.first("baseline"), "succeeded", 20*time.Second, 40*time.Second)/20,
					sum(r.first("instances-1000"), "succeeded", 20*time.Second, 40*time.Second)/20,
					sum(r.first("instances-10000"), "succeeded", 20*time.Second, 40*time.Second)/20)},
			}
		},
		plots: []plotSpec{{"attempts", "attempts/api", "attempts reaching the API per second", "attempts/s", false, nil}},
	}
	docs["zone-outage"] = expDoc{
		rows: func(r *results) [][3]string {
			lost := func(v string) int64 {
				q := r.first(v).Summary.Requests
				return q.Failed + q.Unknown
			}
			mean := func(v string) float64 {
				return sum(r.first(v), "latency_mean_ms", 5*time.Second, 20*time.Second) / 15
			}
			return [][3]string{
				{"requests lost, blind round robin", "5/9 of the outage's ~12,000: ~6,700", fmt.Sprint(lost("baseline"))},
				{"zone-aware", "zone c's clients' third: ~4,000", fmt.Sprint(lost("zone-aware"))},
				{"zone-aware, ejection and retry on another host", "none", fmt.Sprintf("%d (%d retries, %d ejection)", lost("zone-aware-ejection"),
					edgeOf(r.first("zone-aware-ejection"), "client", "api").Retries, edgeOf(r.first("zone-aware-ejection"), "client", "api").Ejections)},
				{"mean latency before the outage, blind − zone-aware", "2/3 × 2 ms = 1.33 ms", fmt.Sprintf("%.2f − %.2f = %.2f ms", mean("baseline"), mean("zone-aware"), mean("baseline")-mean("zone-aware"))},
			}
		},
		plots: []plotSpec{{"succeeded", "succeeded", "requests succeeded per second", "requests/s", false, nil}},
	}
}

// replicaBars draws the utilization of each replica of service name, a
// group of bars per replica, a bar per variant.
func replicaBars(name string) func(r *results, variants []string) (*plot.Plot, error) {
	return func(r *results, variants []string) (*plot.Plot, error) {
		p := plots.NewPlot(fmt.Sprintf("%s utilization per replica over the run", name), "replica", "utilization")
		w := vg.Points(12)
		most, top := 0, 0.0
		for i, v := range variants {
			reps := svc(r.first(v), name).Replicas
			most = max(most, len(reps))
			vals := make(plotter.Values, len(reps))
			for j, rs := range reps {
				vals[j] = rs.Utilization
				top = max(top, rs.Utilization)
			}
			bars, err := plotter.NewBarChart(vals, w)
			if err != nil {
				return nil, err
			}
			bars.Color = plotutil.Color(i)
			bars.LineStyle.Width = 0
			bars.Offset = w * vg.Length(float64(i)-float64(len(variants)-1)/2)
			p.Add(bars)
			p.Legend.Add(v, bars)
		}
		ticks := make([]plot.Tick, most)
		for j := range ticks {
			ticks[j] = plot.Tick{Value: float64(j), Label: fmt.Sprint(j)}
		}
		p.X.Tick.Marker = plot.ConstantTicks(ticks)
		p.X.Min, p.X.Max = -0.6, float64(most)-0.4
		// Room above the bars for the legend (about 6.5% a row).
		p.Y.Min, p.Y.Max = 0, max(top, 0.01)/(1-min(0.6, 0.1+0.065*float64(len(variants))))
		return p, nil
	}
}
