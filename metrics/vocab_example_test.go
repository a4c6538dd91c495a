package metrics_test

import (
	"fmt"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/policies"
)

// A producer names its columns and an edge's summary through the shared
// vocabulary; a reader finds them by the same names.
func ExampleColumn() {
	ts := &metrics.TimeSeries{Columns: append(metrics.RunColumns(), metrics.Column(metrics.MetricQueue, "db"))}
	fmt.Println(ts.Columns[len(ts.Columns)-1], ts.Column(metrics.Column(metrics.MetricQueue, "db")))

	e := metrics.EdgeSummaryOf("gateway", "db", policies.EdgeStats{Calls: 10, Attempts: 14, Retries: 4}, 1)
	e.Add(metrics.EdgeSummaryOf("gateway", "db", policies.EdgeStats{Calls: 5, Attempts: 5}, 0))
	fmt.Println(e.From+"->"+e.To, e.Calls, e.Attempts, e.Retries, e.BreakerOpens)
	// Output:
	// queue/db 7
	// gateway->db 15 19 4 1
}
