package metrics_test

import (
	"fmt"

	"github.com/stormsim/stormsim/metrics"
)

// Two replicas' latencies merge into the service's, losslessly.
func ExampleMergeHistograms() {
	a, b := metrics.NewLatencyHistogram(), metrics.NewLatencyHistogram()
	for _, us := range []int64{1000, 2000, 3000} {
		a.RecordValue(us)
	}
	b.RecordValue(9000)
	h, err := metrics.MergeHistograms(a, nil, b)
	if err != nil {
		panic(err)
	}
	fmt.Println(h.TotalCount(), h.Max(), a.TotalCount())
	// Output: 4 9007 3
}

// Edges of one caller-callee pair add up, in the order pairs first appear.
func ExampleMergeEdges() {
	shard0 := []metrics.EdgeSummary{{From: "api", To: "db", Calls: 10, Attempts: 12}}
	shard1 := []metrics.EdgeSummary{{From: "api", To: "cache", Calls: 5, Attempts: 5}, {From: "api", To: "db", Calls: 7, Attempts: 9}}
	for _, e := range metrics.MergeEdges(shard0, shard1) {
		fmt.Println(e.From, e.To, e.Calls, e.Attempts)
	}
	// Output:
	// api db 17 21
	// api cache 5 5
}
