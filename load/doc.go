// Package load is stormsim's real-HTTP mode: an open-loop load driver that
// sends logical requests through a client call policy, and emulated
// services that run a scenario's call graph as loopback HTTP servers. Both
// sides drive policies.Call — the state machine the simulator drives — with
// the run's clock (load/internal/clock: the wall clock since the run's
// start, scripted in tests) as its now, so a scenario means the same thing
// simulated and real, and the two can be compared.
//
// # The driver (Run)
//
// The arrivals (model.Arrivals, the simulator's arrival process; for a
// target, TargetArrivals) give the intended send time of every logical
// request and whether it is a write, drawn from the stream the model derives
// from the seed, so a scenario and seed offer the same requests at the same
// times in both modes: the n-th request of a constant rate r is due at n/r
// rounded to the nanosecond, and a rate step restarts the phase at the step
// (the driver's former pacers truncated, and integrated the rate across
// steps; the model's rule is the one kept). One scheduler goroutine
// sleeps until each due time and hands the request to a fixed pool of
// Workers sender goroutines through a bounded channel; the HTTP transport
// holds at most Connections connections. The schedule never waits for
// answers (open loop), and latency is measured from the intended time, not
// from the actual send, so a stalled target shows in the percentiles
// instead of being hidden by a driver that stopped sending (no coordinated
// omission). When every sender is busy the scheduler waits at most
// MaxLateness past a request's due time; a request not handed off by then
// is not sent and counts as unsent (a failed logical request). Requests
// sent more than LateThreshold after their due time count as late.
//
// Every logical request is one policies.Call over the client edge: its
// attempts carry X-Stormsim-Request-Id, X-Stormsim-Attempt, the remaining
// deadline in X-Stormsim-Deadline-Ms (with propagate_deadline), and, for
// writes with idempotency keys, Idempotency-Key. Attempt timeouts, backoff
// waits and hedge delays are timers. Attempts travel through the edge's
// transport (package load/transport: net/http with phases, the lean
// HTTP/1.1 client, gRPC), chosen once when the edge is built (NewEdgeClient);
// answers are classified by transport.ClassifyStatus and transport failures
// by transport.ClassifyError:
//
//	2xx               OK
//	503, 429          Unavailable (Retry-After-Ms, else Retry-After, is the pushback)
//	504, 408          Timeout (a 504 from a service: deadline expired or downstream timeout)
//	409               Conflict (idempotency key reused with another payload)
//	425               InProgress (the key's owner is still working; retry after the hint)
//	other             Error
//	connect refused   Unavailable, kind connect (the target did no work)
//	reset, EOF        Timeout, kind reset (the target may have done the work)
//	attempt timeout   Timeout, kind timeout
//
// When the schedule ends, calls in flight may take what their policy
// allows (the deadline, or every attempt's timeout plus the waits between
// attempts) plus Grace, then are aborted as unknown; with neither deadline
// nor timeout, Grace alone. Cancelling Run's context stops the schedule;
// calls in flight get Grace to finish and are then aborted; the result is
// marked interrupted. Memory grows with concurrency, not with the number of
// requests or the run's length: outcomes stream into HDR histograms and
// per-interval counters, and an interval's latency histogram is folded into
// its quantiles once completions have moved two intervals past it.
//
// # The emulated services (Service, StartCluster)
//
// A Service drives the scenario's callee machine (model.Callee, the code
// the simulator runs) from its HTTP handlers under a mutex, with its clock:
// Workers workers and a policies.Queue waiting room (its limit is the
// scenario's queue; overload control, CoDel and max queue time come from
// the queue). An attempt that finds no room is answered 503 with the
// pushback of policies.RetryAfter; one shed from the queue likewise.
// Holding a worker, it sleeps its service time (drawn from the scenario's
// distribution, plus slowdown per other attempt in flight, queued ones
// included, plus fault latency) measured from the worker's own virtual
// busy-until time, so timer overshoot does not accumulate; it fails with
// error_rate, then makes the service's downstream
// calls in order through each edge's call policy, still holding the worker.
// Fault windows are offsets from the run's epoch on the wall clock.
// reject_expired answers 504 when the propagated deadline passed before the
// work starts (on arrival or when a worker frees). With cancel_on_timeout a
// caller's disconnect (its attempt timed out) stops the work, queued or
// running; without it the work runs on for nobody and counts as wasted.
//
// The committing service (model.Committer: commits: true, else the end of
// the first path from the entry) executes writes' side effects and counts executions per
// logical request; with an Idempotency-Key it consults an idempotency
// store when the work starts: the first arrival owns the key and executes,
// a concurrent one is answered 425 with Retry-After-Ms (the store's
// in_progress_retry_after, default 100ms), a later one replays 200 without
// executing, and the key with another body is 409 without effect.
//
// GET /stats returns a service's Stats as JSON; /metrics exposes the same
// counters for Prometheus. Every other path is work.
//
// What a client may send is bounded: a header block over 64 KiB is refused
// with 431, a body over 1 MiB with 413, and a malformed
// X-Stormsim-Deadline-Ms or an Idempotency-Key over 256 bytes with 400;
// each refusal names the header or the body at fault, asks not to retry
// (X-Stormsim-Dont-Retry) and counts as rejected. Every server has read
// (header 10s, whole request 30s), write (10 min) and idle (2 min)
// timeouts. The side-effect ledger keeps a long request id as a digest;
// with a LedgerWindow (stormsim serve: DefaultLedgerWindow) it forgets a
// request one to two windows after its last execution, so a service that
// runs indefinitely holds bounded memory; the idempotency store is bounded
// by its max_records and evicts only expired keys.
//
// # Topics
//
// A scenario with topics runs them through NATS JetStream (package
// broker): StartCluster embeds a server on 127.0.0.1, or connects to
// ClusterOptions.NATS, and creates a stream per topic. A publish step
// commits an intent through its broker.Producer (dual write, or an outbox
// whose publisher loop runs while the service does); a consuming service
// runs its topic's broker.Consumer. RunScenario waits for the intents to
// settle after the schedule (bounded; not after Ctrl-C), and each
// consuming service's summary carries the simulator's consumer block,
// intents still in flight apart.
//
// # gRPC
//
// With ProtocolGRPC (ClusterOptions.Protocol, ScenarioOptions.Protocol)
// each service is a gRPC server (NewGRPCServer) that serves any unary
// method through the same work path, and its downstream calls go over gRPC
// (a transport.GRPCClient, the edges' transport). The stormsim headers
// travel as lower-case metadata and the propagated deadline as
// grpc-timeout; answers are status codes (UNAVAILABLE, RESOURCE_EXHAUSTED
// with grpc-retry-pushback-ms, DEADLINE_EXCEEDED, ABORTED, INTERNAL,
// INVALID_ARGUMENT), read back by transport.ClassifyGRPC. A grpc:// target is driven
// like an HTTP one; grpc-go's own retry is disabled unless a service
// config is given (Options.GRPCServiceConfig), and then runs instead of
// the policy's retries (NativeGRPCPolicy). EdgeClient.UnaryClientInterceptor
// puts the same call machine into any grpc-go client. transport.EncodeGRPCRequest
// turns JSON into the request message through a descriptor set or server
// reflection.
//
// # Concurrency
//
// Run, RunScenario, Service and EdgeClient are safe for concurrent use.
// A model.Arrivals is not (the driver's single scheduler goroutine owns it:
// give each run its own).
// Every listener and target must be on the loopback interface unless the
// caller passes AllowRemote.
package load
