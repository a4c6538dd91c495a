// Package load is stormsim's real-HTTP mode: an open-loop load driver that
// sends logical requests through a client call policy, and emulated
// services that run a scenario's call graph as loopback HTTP or gRPC
// servers. Both sides drive policies.Call — the state machine the simulator
// drives — with the run's clock (load/internal/clock: the wall clock since
// the run's start, scripted in tests) as its now, so a scenario means the
// same thing simulated and real, and the two can be compared.
//
// This package holds no code; the mode lives in packages named for their
// jobs, each with its observability beside it:
//
//	load/edge       the edge client (EdgeClient): one logical call through
//	                policies.Call over a transport, its phases, attempt
//	                latencies and summary row, tracing, the gRPC interceptor
//	load/driver     the open-loop driver (Run): arrivals, the pacer, targets
//	                files, request templates, Vegeta results, the recorder
//	                and its result, the live rows, the client fleet
//	load/serve      the emulated services (Service, StartCluster,
//	                RunScenario): cluster, replicas, topics, faults and
//	                resets, gRPC serving, request bounds, /stats, /metrics
//	                and the services' live rows
//	load/transport  how one attempt travels: net/http with phases, the lean
//	                HTTP/1.1 client, gRPC, behind one Transport interface
//	load/internal   the run's clock, the host or in-memory network
//	                (network), test helpers shared by the packages' tests
//	                (loadtest), and the benchmark targets
//
// Imports point down: serve → driver → edge → transport. The edge client is
// below both sides; serve imports the driver because a scenario run drives
// its own cluster (RunScenario), and the driver never imports serve (a
// scenario run hands it the services' live columns as a driver.RowSource).
package load
