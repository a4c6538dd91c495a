// Package edge is the client of one call edge: EdgeClient sends logical
// calls through policies.Call — the state machine the simulator drives —
// over one transport, with the run's clock (load/internal/clock) as its now.
// The driver's client edge and every downstream edge of an emulated service
// are EdgeClients.
//
// Every logical call is one policies.Call over the edge: its
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
// A callee with replicas (EdgeConfig.Replicas, built by NewReplicas) has
// each attempt sent to the replica the simulator's balancer
// (model.Balancer) picks.
//
// EdgeClient.UnaryClientInterceptor puts the same call machine into any
// grpc-go client. Tracing (NewTracing) opens the spans of requests and
// attempts (OpenTelemetry, OTLP JSON lines). EdgeClient is safe for
// concurrent use.
package edge
