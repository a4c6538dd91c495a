// Package sim is stormsim's discrete-event simulator: an event engine on a
// virtual clock, and on it the model of services, attempts and logical
// requests that a topology.Scenario describes. Run simulates a scenario and
// returns a metrics.Result.
//
// # Engine
//
// Engine runs callbacks (Handler) in (time, sequence) order, so events at
// one instant run in the order they were scheduled. At and After return a
// Timer that Stop cancels in O(log n): each event record keeps its heap
// position. Events due within about 131 µs go, once the heap holds a few,
// to a calendar ring beside it (O(1) in and out), and timers of one
// duration to a Lane (a FIFO with only its head in the heap); neither
// changes the order. Records are recycled through a free list, so a
// steady-state run allocates nothing per event. Stream derives one random
// stream per named component from the run's seed — arrivals (arrival times
// and write draws), service/NAME (service times, errors, dropped replies),
// edge/FROM->TO (network delays and the edge's policies) — so the same
// scenario and seed give byte-identical results, and adding a service does
// not reshuffle the others' draws.
//
// # Model
//
// A logical request arrives (poisson, constant, a piecewise schedule, or a
// closed loop of clients each waiting think_time after its previous request
// ended, first requests at U(0, think_time)) during [0, duration). Its
// deadline is arrival + workload.deadline (none when 0); write_fraction of
// requests are writes, one draw per request from the arrivals stream, made
// even when write_fraction is 0 so that changing it never moves the
// arrivals. The external client calls the entry service over the edge
// "client->ENTRY" with workload.client's call policy.
//
// Every call over an edge is a policies.Call: the one retry state machine
// (timeouts, retries, backoff, budget, breaker, hedging, pushback,
// throttle) shared with load mode. The per-attempt timeout is
// min(call.timeout, time left to the deadline); a retry that could not
// start before the deadline is not scheduled.
//
// A root call over a plain client edge — one attempt, no timeout, budget,
// breaker, throttle or hedge — with no workload deadline skips the state
// machine: its one attempt is sent directly and its answer is the call's
// (OK succeeds, a Timeout class is unknown, any other class fails), and the
// edge's counters move exactly as policies.Call would move them. The
// equivalence is tested by running scenarios both ways and comparing the
// results byte for byte.
//
// An attempt crosses the edge's network delay, then at the callee:
//
//   - counts as an attempt of the service (for requests that arrived after
//     warm-up, so amplification is exact);
//   - is rejected with Timeout if the service has reject_expired and the
//     propagated deadline has passed (on arrival, or when a worker frees);
//   - starts on a free worker, else waits in the queue (queue nil:
//     unbounded; 0: no waiting room; with overload: discipline, CoDel,
//     max_queue_time shedding, concurrency limit — policies.Queue). A full
//     queue rejects with Unavailable and the service's pushback hint; shed
//     attempts are rejected the same way and counted in Shed;
//   - holds the worker for sample(service_time) (package dist, as in load
//     mode; an absent distribution is no delay) + slowdown_per_inflight ×
//     (other attempts in flight at the service) + the active faults'
//     latency_add;
//   - fails with error_class at error_rate (a fault may replace the rate);
//   - else makes its downstream calls in order, still holding the worker.
//     A step with fanout N or parallel members runs them at once and needs
//     wait_for successes (0: all); it fails as soon as that is impossible,
//     and the members still running are abandoned;
//   - answers OK, or on a failed step the class downstream_failure names:
//     propagate (the step's last failure; a caller-side timeout is Timeout,
//     a breaker or throttle fast fail becomes Unavailable), unavailable,
//     error or timeout.
//
// The reply crosses the network back. With a drop_response fault it is
// lost after the work is done: the caller times out, or, with no timeout
// and no deadline, waits until the run ends and the request is unknown.
//
// With propagate_deadline the callee attempt carries the caller's deadline
// and bounds its own calls by it; without it the callee knows none. When a
// caller stops waiting for an attempt (its timeout fired, a hedge won with
// cancel_others, a quorum was decided, or the caller was itself
// cancelled), a callee with cancel_on_timeout cancels the attempt: it leaves
// the queue, frees its worker and abandons its own downstream calls, in
// turn. Otherwise the callee finishes the work for nobody: the attempt is
// counted wasted and its busy time still shows in utilization. A cancelled
// queued attempt gives its place back at once (policies.Queue.Cancel): it
// stops counting in the queue length, the queue limit and the in-flight
// figures, and its record is released when the queue drops it.
//
// Faults change a service during [at, at+for): capacity scales the workers
// that may be busy (floor(workers × Π capacity); running work finishes),
// latency_add adds to service times, error_rate replaces the error rate,
// drop_response loses replies with that probability.
//
// # Outcomes
//
// A logical request ends SUCCEEDED when an attempt of the client's call
// answered OK; FAILED when the call ended without OK and no attempt can
// have done the work — every attempt sent was answered (an error or
// rejection answer is definite) or failed locally (breaker, throttle); and
// UNKNOWN when it ended without OK while some attempt timed out or was
// abandoned unanswered, or when the run ended first.
//
// The committing service (model.Committer: commits: true; by default the
// end of the first path from the entry) executes a write's side effect when
// an attempt of the write answers OK there. Executions are counted per
// logical request while any of its attempts is alive and then folded into
// duplicates (executions beyond the first) and unknown_committed /
// unknown_not_committed. With workload.idempotency_keys the committing
// service asks an idempotency.Store when a write attempt starts: a
// completed key is replayed (OK, no execution), a key in progress answers
// InProgress with the store's retry-after, a conflict answers Conflict.
//
// # The run
//
// Arrivals stop at duration; the run goes on until no event is left: every
// request has its outcome and in-flight work has drained. sim_time_s is
// max(duration, the last event). Limits stop a runaway run — more than
// max_inflight attempts alive (default 1,000,000) or more than max_events
// events (default 2e9) — with Status "diverged" and the service holding
// the largest queue. A cancelled context stops it with Status
// "interrupted". Both return the result so far with a nil error.
//
// # Metrics
//
// Summary counts are for requests that arrived after warm-up (and their
// attempts). goodput_rps = succeeded / (duration − warmup). A service's
// utilization is busy worker-time / (workers × (sim end − warmup)) and
// queue_mean the time-averaged queue over the same span; timed_out counts
// attempts that arrived whose caller stopped waiting before the answer
// reached it (or whose reply was dropped), wasted those that completed
// work for a caller that had given up. Edges merge every call entry
// between the same two services. The time series covers the whole run,
// warm-up included, one row per interval: offered, succeeded, failed,
// unknown (by completion), goodput, latency_p50_ms, latency_p99_ms,
// latency_mean_ms; per service attempts, queue (time-weighted mean),
// queue_max, inflight (at the interval's end), utilization, rejected, shed;
// per edge retries (of requests after warm-up, like every edge counter),
// breaker_state (0 closed, 1 open, 2 half-open, edges with a breaker) and
// budget_level (edges with a budget). goodput is the interval's successes
// over the interval's length, the last (partial) row's too; events at
// exactly the run's end on an interval boundary open a last row of their
// own, so the series' successes add up to the summary's.
//
// Latencies are counted in the bucket layout of metrics.NewLatencyHistogram
// (1 µs to 2^40 µs, 3 significant digits; the summary's
// mean and max are exact) by an index computation and an
// increment, a request's index once for both the interval's and the run's
// counts; the Result's histograms are HdrHistograms with the same counts,
// and the interval quantiles and summary latencies (mean, percentiles,
// max) are what HdrHistogram would answer, computed from the counts. The
// count arrays (about 180 KB each) return zeroed to a pool shared by all
// runs when a run ends, so short runs in a loop allocate little besides
// their Result.
//
// Memory grows with concurrency, never with the number of requests:
// requests, attempts, calls and groups are pooled records returned as soon
// as nothing refers to them, and results are streamed into histograms and
// per-interval rows. Every request record the run made is kept (alive or
// pooled) so that its end can settle the requests still open without the
// event loop maintaining a list of them.
//
// A run is single-threaded and owns its model; separate runs may proceed in
// parallel.
package sim
