package metrics

// Summary is the JSON summary of a run: a contract that tests, docs and users
// rely on. Extend it; never rename or remove a field.
type Summary struct {
	Scenario string  `json:"scenario"`
	Seed     uint64  `json:"seed"`
	Version  string  `json:"version,omitempty"`
	SimTimeS float64 `json:"sim_time_s"`
	// WindowS is the measurement window goodput is computed over, in
	// seconds (duration − warm-up, or up to where a run stopped early). Merge recomputes goodput from it; when
	// zero it is inferred from succeeded / goodput_rps.
	WindowS float64 `json:"window_s,omitempty"`
	// Status is complete, diverged or interrupted.
	Status Status `json:"status"`
	// Diverged says where a runaway run was stopped (nil when complete).
	Diverged *Divergence `json:"diverged,omitempty"`

	Requests   Requests `json:"requests"`
	GoodputRPS float64  `json:"goodput_rps"`
	// LatencyMs is the end-to-end latency of succeeded logical requests.
	LatencyMs Latency `json:"latency_ms"`
	// LatencyFailedMs and LatencyUnknownMs are how long the failed and the
	// unknown requests took to end (nil when there were none, or when the
	// producer does not record them): a fast failure is not a fast success.
	LatencyFailedMs  *Latency `json:"latency_failed_ms,omitempty"`
	LatencyUnknownMs *Latency `json:"latency_unknown_ms,omitempty"`
	// LatencyAllMs is the end-to-end latency of every logical request
	// offered after warm-up, each at the time its caller knew its outcome:
	// a failed or unknown request at its time to failure (nil when the
	// producer does not record it). It is what an SLO's p99(all) reads;
	// LatencyMs, over the survivors only, flatters a collapsing system.
	LatencyAllMs *Latency `json:"latency_all_ms,omitempty"`
	// Amplification is the largest service amplification.
	Amplification float64 `json:"amplification"`
	// Duplicates counts side-effect executions beyond the first per logical write.
	Duplicates int64 `json:"duplicates"`
	// Writes says the run offered writes and counted their executions, so
	// that the text shows duplicates even when there were none: a zero is
	// then a finding, not a default. Not in the JSON, whose duplicates is
	// always there.
	Writes              bool  `json:"-"`
	UnknownCommitted    int64 `json:"unknown_committed"`
	UnknownNotCommitted int64 `json:"unknown_not_committed"`
	// Certainty is how the run's writes converged after UNKNOWN (nil
	// unless the scenario configures convergence).
	Certainty *Certainty `json:"certainty,omitempty"`
	// Irrevocable counts the intents that passed an irrevocable step (nil
	// unless the scenario has one).
	Irrevocable *Irrevocable `json:"irrevocable,omitempty"`

	Services []ServiceSummary `json:"services"`
	Edges    []EdgeSummary    `json:"edges,omitempty"`
	// Load is what the HTTP load driver saw (load mode only): the schedule
	// it kept, and attempts by transport failure kind.
	Load *LoadReport `json:"load,omitempty"`
	// Verdict is the run's outcome in words (nil when not assessed).
	Verdict *Verdict `json:"verdict,omitempty"`
	// SLO is the objective given with --slo, judged (nil without one).
	SLO *SLOReport `json:"slo,omitempty"`
	// Hints say what in the scenario let the run behave as it did and
	// which keys would change it, e.g. a drain longer than 3x the arrival
	// window (omitted when there are none).
	Hints []string `json:"hints,omitempty"`
}

// Requests counts logical requests offered at the entry after warm-up, by
// the outcome their caller saw.
type Requests struct {
	Offered   int64 `json:"offered"`
	Succeeded int64 `json:"succeeded"`
	Failed    int64 `json:"failed"`
	Unknown   int64 `json:"unknown"`
}

// Latency is a latency distribution summary in milliseconds. The
// quantiles come from a histogram (3 significant digits); when Count is
// set, Mean is exactly SumUs / Count and Max the exact largest value, and
// merging shards sums the integers, so a merged mean is the whole run's.
type Latency struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Max  float64 `json:"max"`
	// Count is how many values the summary is over (for the run's
	// latency: the succeeded requests); SumUs their sum in microseconds.
	Count int64 `json:"count,omitempty"`
	SumUs int64 `json:"sum_us,omitempty"`
}

// ServiceSummary is one service's view of the run. Its counts are of the
// attempts made for logical requests that arrived after the warm-up (the
// requests counted in Requests), whenever the attempts came; Utilization,
// QueueMean and QueueMax are over time, from the warm-up to the end of the
// run, its drain included (model.Callee.Measured).
type ServiceSummary struct {
	Name string `json:"name"`
	// Attempts that arrived at the service.
	Attempts int64 `json:"attempts"`
	// Amplification is Attempts / requests.offered.
	Amplification float64 `json:"amplification"`
	Succeeded     int64   `json:"succeeded"`
	Failed        int64   `json:"failed"`
	// Rejected: refused before starting (queue full, limit, shed, expired).
	Rejected int64 `json:"rejected"`
	// TimedOut: attempts whose caller gave up before the answer arrived.
	TimedOut int64 `json:"timed_out"`
	// Wasted: attempts that completed work after their caller had given up.
	Wasted      int64   `json:"wasted"`
	Utilization float64 `json:"utilization"`
	QueueMean   float64 `json:"queue_mean"`
	QueueMax    int64   `json:"queue_max"`
	LatencyMs   Latency `json:"latency_ms"`
	Shed        int64   `json:"shed,omitempty"`
	Duplicates  int64   `json:"duplicates,omitempty"`
	Executions  int64   `json:"executions,omitempty"`
	// Queries counts status queries by key that arrived at the service
	// (they are also in Attempts); FactQueries the recovery and
	// reconciliation fact queries that did. The load confirmation adds.
	Queries     int64 `json:"queries,omitempty"`
	FactQueries int64 `json:"fact_queries,omitempty"`
	// Effects is the service's external effect (nil without one).
	Effects *Effects `json:"effects,omitempty"`
	// VersionedWrites is its optimistic read-modify-writes (nil without).
	VersionedWrites *VersionedWrites `json:"versioned_writes,omitempty"`
	// Consumer is the service's consumer group of a topic, if it has one.
	Consumer *ConsumerSummary `json:"consumer,omitempty"`
	// Replicas are the service's replicas one by one, when it has more
	// than one (the fields above sum them; queue_max is the longest queue
	// of any one replica).
	Replicas []ReplicaSummary `json:"replicas,omitempty"`
}

// ReplicaSummary is one replica of a service with replicas: what reached
// it and how busy it was, after warm-up.
type ReplicaSummary struct {
	Replica     int     `json:"replica"`
	Attempts    int64   `json:"attempts"`
	Succeeded   int64   `json:"succeeded"`
	Failed      int64   `json:"failed"`
	Rejected    int64   `json:"rejected"`
	TimedOut    int64   `json:"timed_out"`
	Shed        int64   `json:"shed,omitempty"`
	Utilization float64 `json:"utilization"`
	QueueMean   float64 `json:"queue_mean"`
	QueueMax    int64   `json:"queue_max"`
}

// EdgeSummary is one call edge (caller → callee) and what its policies did.
type EdgeSummary struct {
	From string `json:"from"`
	To   string `json:"to"`
	// Calls: logical calls made on the edge; Attempts: attempts sent.
	Calls           int64 `json:"calls"`
	Attempts        int64 `json:"attempts"`
	Retries         int64 `json:"retries"`
	RetriesDenied   int64 `json:"retries_denied_budget"`
	RetriesDeadline int64 `json:"retries_denied_deadline"`
	BreakerFastFail int64 `json:"breaker_fast_fails"`
	BreakerOpens    int64 `json:"breaker_opens"`
	HedgesSent      int64 `json:"hedges_sent"`
	HedgesWon       int64 `json:"hedges_won"`
	PushbackWaits   int64 `json:"pushback_waits"`
	Throttled       int64 `json:"throttled"`
	Succeeded       int64 `json:"succeeded"`
	Failed          int64 `json:"failed"`
	Unknown         int64 `json:"unknown"`
	// Ejections: replicas of the callee ejected by the edge's outlier
	// detection (summed over the callers' replicas and instances).
	Ejections int64 `json:"ejections,omitempty"`
	// NotSent counts attempts that failed before they were sent;
	// TransparentRetries those retried transparently (gRPC A6).
	NotSent            int64 `json:"not_sent,omitempty"`
	TransparentRetries int64 `json:"transparent_retries,omitempty"`
	// Pool is the edge's connection pool, if it has one.
	Pool *PoolSummary `json:"pool,omitempty"`
	// Phases splits a load run's attempts by phase (load mode only).
	Phases *PhaseReport `json:"phases,omitempty"`
}

// Divergence describes where a runaway run was stopped.
type Divergence struct {
	AtS     float64 `json:"at_s"`
	Reason  string  `json:"reason"`
	Service string  `json:"service,omitempty"`
	Queue   int64   `json:"queue,omitempty"`
}

// Clock says which clock SimTimeS is on: "simulated" for the simulator's
// virtual clock, "ran" for a load run's wall clock (Load is set).
func (s *Summary) Clock() string {
	if s.Load != nil {
		return "ran"
	}
	return "simulated"
}
