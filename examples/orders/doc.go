// Package orders is the reference target of `stormsim audit`: a small real
// orders service over a real database, written correctly, with a switch per
// classic idempotency mistake (Bug), so the audit can be shown to pass on the
// one and to catch each of the others.
//
// The database is SQLite (the pure-Go modernc.org/sqlite driver) by default
// and PostgreSQL (pgx) when Open is given a postgres:// DSN; it is reached
// through database/sql only. Two tables:
//
//	orders(id, tenant, idem_key, digest, sku, qty, created_unix_ns)
//	idempotency_keys(tenant, idem_key, digest, state, fence, lease_until_unix_ns, status, body)
//	    PRIMARY KEY (tenant, idem_key)
//
// An effect oracle counts orders per key with
//
//	SELECT count(*) FROM orders WHERE tenant = :tenant AND idem_key = :key
//
// or over HTTP with GET /orders?key=K&tenant=T.
//
// # The correct protocol
//
// A POST carrying an idempotency key is handled in three steps, so that
// exactly one request per (tenant, key) writes an order, whatever the number
// of instances, retries and crashes:
//
//  1. Claim: insert the record (tenant, key, payload digest, PROCESSING,
//     fence 1, lease until now+Lease). The primary key makes exactly one
//     concurrent claim win. A loser reads the record: a different digest
//     is refused with Options.MismatchStatus; DONE is replayed (the stored
//     status and body, with Idempotent-Replayed: true); PROCESSING under a
//     live lease is answered 425 in_progress with Retry-After: 1; PROCESSING
//     with an expired lease is taken over by raising the fence
//     (compare-and-swap on the fence the loser saw).
//  2. Work: Options.Work of processing time.
//  3. Complete, in one transaction: insert the order and mark the record
//     DONE with the answer, only where the record still has this owner's
//     fence. An owner fenced out by a takeover writes nothing and answers
//     with the winner's result (or in_progress while it is not done yet).
//
// A request without a key writes an order each time, as a non-idempotent
// POST does.
//
// Services are safe for concurrent use; any number of them may share one
// DB, or one database through several DBs (as separate processes do).
package orders
