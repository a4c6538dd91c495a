// Package paste turns production resilience configurations, pasted as they
// are deployed, into stormsim call policies: a gRPC service config (gRFC
// A6 retryPolicy, hedgingPolicy and retryThrottling), an Envoy route
// (retry_policy) and an Envoy cluster (circuit_breakers thresholds with
// retry_budget); and the reverse proxies' configs: an nginx.conf location
// or upstream, an HAProxy backend.
//
// Every field of a pasted file is either translated, exactly as the real
// system defines it, or reported as a Problem naming the file, line and
// field: nothing is ignored silently. Fields that only select what the
// config applies to (a route's match, a cluster's name, a methodConfig's
// name) are read as the selection that the stormsim call edge stands for.
// A proxy's config is mostly about other things (listeners, logs,
// headers): its directives that do not touch retries, timeouts, health or
// queueing are ignored and named, by name only, in Policies.Note; those
// that change retries in ways stormsim cannot model are Problems.
//
// The package reads bytes and returns plain policy configs; resolving file
// names and laying the result onto a scenario's call is package topology's.
package paste
