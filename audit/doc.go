// Package audit answers "is my POST safe to retry?" for a real service:
// `stormsim audit SPEC.yaml`. It puts a fault proxy (package faultproxy)
// in front of every instance named by a topology.AuditSpec, sends the
// spec's write through them the way retrying clients do, asks an effect
// oracle — an HTTP query or SQL against the service's own database — how
// many times each key really took effect, and reports a verdict per check
// with the evidence behind it.
//
// # Checks
//
// The checks are one table (checkTable), in the order of
// topology.AuditChecks. Each row is a workload and a judge. The workload
// sends requests through the proxies, steering them with the proxy's rule
// hook (lose this attempt's reply, hold these attempts until all have
// arrived, release this one once that one has been written to the
// upstream), and records a history: intents (a key and tenant), each with
// its attempts, the proxy's record of every attempt, and the effects the
// oracle counted. The judge is a function of the spec and that history
// alone, as a Jepsen checker is of its history, so each rule is written
// once and can be tried on histories written by hand:
//
//	lost-reply        reply lost after the upstream answered; retries with
//	                  the same key on other instances: one effect, one result
//	concurrent-first  K attempts with a new key released at once across the
//	                  instances: one effect, one result; others replayed or
//	                  told "in progress"
//	payload-mismatch  a key reused with another body: refused with one of
//	                  mismatch_status, never the old result, never executed
//	in-flight         a duplicate released once the first has been written
//	                  to the upstream: not executed again
//	new-intent        the same body under a new key: a new resource
//	key-scope         one key from two tenants: two resources
//	amplification     intents at a fixed rate through the spec's client call
//	                  policy (load's driver), the answers slowed step by step:
//	                  attempts per intent at the upstream, flagged above 2
//
// A check is violated when one intent of its history breaks the rule;
// held when none does and at least one tested it; skipped when the spec
// rules it out (key-scope without a tenant header, payload-mismatch
// without {n} in the body) or nothing could test it, saying why. A check
// cut short by limits.time, or whose intents could not test the rule
// because the target failed them, is incomplete, and so is the report.
//
// # Bounds
//
// Every check sends at most limits.requests requests (intents of several
// attempts count each attempt) and stops at limits.time; every attempt
// of the audit's own has the spec's timeout, on a connection of its own
// (net/http would otherwise replay a request carrying an Idempotency-Key
// on a reused connection that failed). Before the checks, Run checks that
// every target answers and that the oracle counts nothing for a key never
// sent; a failure is ErrTarget.
//
// # Concurrency
//
// Run may be called concurrently; each call has its own proxies. A Report
// is plain data.
package audit
