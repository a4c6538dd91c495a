// Package transport holds how one attempt of a logical request travels
// and how its answer is read: the Attempt and its Answer, the stormsim
// headers and status codes (and their gRPC metadata twins), the
// classification of answers (ClassifyStatus, ClassifyGRPC) and of
// transport failures (ClassifyError), and the transports themselves
// behind one small interface, Transport:
//
//   - HTTP: net/http, every attempt traced through its phases
//     (pool_wait, dns, connect, tls, write, first_byte, read) with
//     net/http/httptrace, the edge's phase timeouts enforced and a failure
//     classified by the phase it failed in;
//   - Lean: the driver's own HTTP/1.1 client to one plain http target,
//     which costs no allocation per attempt and times the same phases;
//   - GRPCClient: unary gRPC calls over multiplexed HTTP/2 connections,
//     its phases traced as net/http's are (grpcphases.go);
//   - Func: any function, bounded by the attempt's timeout.
//
// An edge (load.EdgeClient) chooses its transport once, when it is built;
// every attempt then goes through Transport.Send with a Sending that says
// how the edge bounds and observes it. PhaseRecorder keeps the phases of
// an edge's attempts and reports them (metrics.PhaseReport), and
// NewPhaseCollector exposes them to Prometheus.
//
// Time: the attempt's timeout runs on the clock the edge passes
// (Sending.Clock); phase timings and phase timeouts read the wall clock,
// since they measure the operating system's sockets.
//
// Every exported function and type is safe for concurrent use unless its
// documentation says otherwise.
package transport
