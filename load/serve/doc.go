// Package serve runs a scenario's call graph as emulated services on
// loopback HTTP or gRPC servers (Service, StartCluster: replicas, client
// fleets, topics, faults), and a whole scenario run against them
// (RunScenario: the cluster driven by package driver, its result filled
// from the services' own stats as the simulator reports them).
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
// config is given (driver.Options.GRPCServiceConfig), and then runs instead of
// the policy's retries (NativeGRPCPolicy). transport.EncodeGRPCRequest
// turns JSON into the request message through a descriptor set or server
// reflection.
//
// Service, Cluster and RunScenario are safe for concurrent use. Every
// listener must be on the loopback interface unless the caller passes
// AllowRemote.
package serve
