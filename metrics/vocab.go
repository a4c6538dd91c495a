package metrics

// The output vocabulary every writer and reader of results shares: how a
// run ended, and the names of the time-series columns. Producers (sim,
// load) and consumers (merge, plots, analysis, the CLI) name them through
// these constants, so a column is never written under one name and read
// under another.

// Status is how a run ended, as written to Summary.Status.
type Status string

// The run statuses. The empty status is a result from before statuses
// were written; readers treat it as complete.
const (
	StatusComplete    Status = "complete"
	StatusInterrupted Status = "interrupted"
	StatusDiverged    Status = "diverged"
)

// The first two fields of every time-series row (the first two columns
// of timeseries.csv): the row's start and its width, in seconds.
const (
	ColTime     = "t_s"
	ColInterval = "interval_s"
)

// Run-wide time-series columns, one value per interval.
const (
	// ColOffered counts logical requests due in the interval.
	ColOffered = "offered"
	// ColSucceeded, ColFailed and ColUnknown count logical requests by
	// outcome, by completion time.
	ColSucceeded = "succeeded"
	ColFailed    = "failed"
	ColUnknown   = "unknown"
	// ColGoodput is succeeded per second.
	ColGoodput = "goodput"
	// End-to-end latency of the interval's succeeded requests.
	ColLatencyP50  = "latency_p50_ms"
	ColLatencyP99  = "latency_p99_ms"
	ColLatencyMean = "latency_mean_ms"
)

// RunColumns returns the run-wide columns every producer writes, in
// order, in a new slice the caller may extend.
func RunColumns() []string {
	return []string{ColOffered, ColSucceeded, ColFailed, ColUnknown, ColGoodput, ColLatencyP50, ColLatencyP99}
}

// Per-entity metrics: a column is Column(metric, entity), where the entity
// is a service name or an edge "A->B".
const (
	// Per service.
	MetricAttempts    = "attempts"
	MetricQueue       = "queue"
	MetricQueueMax    = "queue_max"
	MetricInflight    = "inflight"
	MetricUtilization = "utilization"
	MetricRejected    = "rejected"
	MetricShed        = "shed"
	// Per edge.
	MetricRetries      = "retries"
	MetricBreakerState = "breaker_state"
	MetricBudgetLevel  = "budget_level"
)

// Column names a per-entity column: "queue/db", "breaker_state/gw->db".
func Column(metric, entity string) string { return metric + "/" + entity }
