package tune_test

import (
	"os"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/tune"
)

func ExampleRecommendPhases() {
	// What a load run measured on one edge: new connections pay a
	// handshake, reused ones do not.
	edge := metrics.EdgeSummary{From: "client", To: "api", Phases: &metrics.PhaseReport{Phases: map[string]metrics.PhaseStat{
		"pool_wait":       {Count: 1000, P99Ms: 45},
		"connect":         {Count: 20, P99Ms: 2},
		"tls":             {Count: 20, P99Ms: 40},
		"first_byte":      {Count: 1000, P99Ms: 30},
		metrics.PhaseCold: {Count: 20, P50Ms: 50, P99Ms: 80},
		metrics.PhaseWarm: {Count: 980, P50Ms: 6, P99Ms: 31},
	}}}
	plans, err := tune.RecommendPhases([]metrics.EdgeSummary{edge}, 2)
	if err != nil {
		panic(err)
	}
	_ = tune.WritePhasePlans(os.Stdout, plans)
	// Output:
	// client->api (timeouts at 2 × the phase's p99)
	//   pool_timeout:       90ms
	//   connect_timeout:    4ms
	//   tls_timeout:        80ms
	//   first_byte_timeout: 60ms
	//   timeout:            160ms
	//   attempts on a new connection (cold): 20, p50 50ms p99 80ms
	//   attempts on a reused connection (warm): 980, p50 6ms p99 31ms
	//   cold attempts are more than twice as slow as warm ones at p99: bound the pool wait, connect and TLS
	//   phases on their own rather than raising one timeout for both
	//   warning: the p99 of connect (20 samples), tls (20 samples), attempt_cold (20 samples): fewer than the 299 that bound a p99 from above at 95% confidence (the largest of n samples exceeds the true p99 with probability 1 − 0.99ⁿ, at least 0.95 only for n ≥ ln 0.05 / ln 0.99); a timeout from it may cut more than 1% of attempts: run the load longer (or, for new connections, with more of them)
}
