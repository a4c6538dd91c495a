package metrics

import hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

// Certainty is how a run's logical writes (intents) converged to a known
// terminal state: how long each took from its first attempt to certainty,
// and what made it certain. A caller that times out knows nothing; what it
// does next — asking the committing service by the intent's key, a
// recovery task checking the facts after a lease ends, a reconciliation
// job, a person working the manual queue — decides how long an order
// stays "being confirmed" and how much load the confirming adds. Producers
// fill it only for scenarios that configure convergence (status queries,
// recovery, reconciliation or alert_after), so every other summary is
// unchanged.
type Certainty struct {
	// Intents counts the logical writes followed after warm-up: the
	// denominator of everything below.
	Intents int64 `json:"intents"`
	// Time to certainty of the intents that reached a known terminal
	// state, from the first attempt, in milliseconds.
	MeanMs float64 `json:"mean_ms"`
	P50Ms  float64 `json:"p50_ms"`
	P99Ms  float64 `json:"p99_ms"`
	MaxMs  float64 `json:"max_ms"`
	// ResolvedBy splits Intents by what made each certain.
	ResolvedBy ResolvedBy `json:"resolved_by"`
	// Alerts counts intents still unknown alert_after after their first
	// attempt (each intent alerts at most once).
	Alerts int64 `json:"alerts"`
	// UnknownMax is the most intents unknown at once.
	UnknownMax int64 `json:"unknown_max"`
	// ManualQueueMax and ManualQueueEnd are the manual queue's longest and
	// final length.
	ManualQueueMax int64 `json:"manual_queue_max"`
	ManualQueueEnd int64 `json:"manual_queue_end"`
	// Queries counts status queries sent by key (attempts, retries of a
	// query included); QueriesPerIntent is Queries over the intents that
	// sent at least one.
	Queries          int64   `json:"queries"`
	QueriesPerIntent float64 `json:"queries_per_intent"`
	// Resubmits counts writes sent again with the same key after a query
	// answered NOT_FOUND past the lease.
	Resubmits int64 `json:"resubmits,omitempty"`
	// Recoveries counts recovery tasks run on PROCESSING records whose
	// owner's lease ended, by what each decided.
	Recoveries *Recoveries `json:"recoveries,omitempty"`
	// Reconciliation is the periodic job's work, when one is configured.
	Reconciliation *Reconciliation `json:"reconciliation,omitempty"`
}

// ResolvedBy counts intents by what first made their outcome certain.
// Reply + Query + Recovery + Reconciliation + Manual + Never = Intents.
type ResolvedBy struct {
	// Reply: the caller's own call answered SUCCEEDED or FAILED.
	Reply int64 `json:"reply"`
	// Query: a status query by key answered a terminal state.
	Query int64 `json:"query"`
	// Recovery: a recovery task settled the record from the facts.
	Recovery int64 `json:"recovery"`
	// Reconciliation: the reconciliation job settled it.
	Reconciliation int64 `json:"reconciliation"`
	// Manual: it reached the manual queue (certain only after a person).
	Manual int64 `json:"manual"`
	// Never: still unknown when the run ended.
	Never int64 `json:"never"`
}

// Recoveries counts what recovery tasks decided for stuck records.
type Recoveries struct {
	Succeeded int64 `json:"succeeded"`
	Failed    int64 `json:"failed_final"`
	Resumed   int64 `json:"resumed"`
	// Unknown: handed to reconciliation.
	Unknown int64 `json:"unknown"`
}

// Reconciliation counts a reconciliation job's work.
type Reconciliation struct {
	// Runs counts scans; Items the records examined over all scans.
	Runs  int64 `json:"runs"`
	Items int64 `json:"items"`
	// Repaired counts records settled; Rerepaired counts repairs of a
	// record already repaired (must be 0: running the job twice repairs
	// nothing twice).
	Repaired   int64 `json:"repaired"`
	Rerepaired int64 `json:"rerepaired"`
	// Failed counts fact queries that failed or timed out (the record is
	// tried again on a later scan); ToManual counts records sent to the
	// manual queue.
	Failed   int64 `json:"failed"`
	ToManual int64 `json:"to_manual"`
}

// Run-wide convergence columns of the time series, written only when the
// scenario configures convergence.
const (
	// ColUnknownIntents is the number of intents unknown at the interval's end.
	ColUnknownIntents = "unknown_intents"
	// ColManualQueue is the manual queue's length at the interval's end.
	ColManualQueue = "manual_queue"
	// ColQueries counts status queries sent in the interval.
	ColQueries = "queries"
	// ColCertainP99 is the p99 time to certainty (ms) of the intents that
	// became certain in the interval.
	ColCertainP99 = "certainty_p99_ms"
)

// certaintyHighestUs is the longest time to certainty the histograms hold,
// in µs: a day, beyond any run's drain.
const certaintyHighestUs = 24 * 3600 * 1e6

// NewCertaintyHistogram returns a histogram for the times to certainty of
// a run's intents, in µs, as every producer (the simulator, serve) records
// them and SetTimes reads them.
func NewCertaintyHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, certaintyHighestUs, 3)
}

// SetTimes fills c's time to certainty (MeanMs, P50Ms, P99Ms, MaxMs) from
// h, a NewCertaintyHistogram of the intents that became certain; an empty
// h leaves them 0.
func (c *Certainty) SetTimes(h *hdrhistogram.Histogram) {
	if h.TotalCount() == 0 {
		return
	}
	c.MeanMs = h.Mean() / 1000
	c.P50Ms = float64(h.ValueAtQuantile(50)) / 1000
	c.P99Ms = float64(h.ValueAtQuantile(99)) / 1000
	c.MaxMs = float64(h.Max()) / 1000
}
