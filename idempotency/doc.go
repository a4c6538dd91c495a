// Package idempotency holds the server side of idempotent writes: the
// idempotency store a committing service keeps per (scope, key), and the
// Ledger that counts how often each logical request's side effect really
// executed.
//
// # Store
//
// A request that carries an idempotency key calls Store.Begin on arrival
// with a digest of its payload. The first arrival becomes the key's owner,
// in state PROCESSING with a lease; it performs the effect and calls Commit
// with its fence, which saves the result (state COMPLETED), or Abort if it
// failed before the effect, which deletes the record. For a key begun by
// an owner at time b:
//
//	lease ends      b + Lease          a same-digest arrival may take over
//	record expires  b + Retention      it becomes a tombstone (no result)
//	key forgotten   b + Retention + Tombstone
//
// Begin's decisions, by the record's state:
//
//	state                     same digest               other digest
//	none                      Execute (or Full)         Execute (or Full)
//	PROCESSING, lease live    InProgress                Conflict
//	PROCESSING, lease over    Execute, higher fence     Conflict
//	COMPLETED                 Replay saved result       Conflict
//	tombstone                 Expired                   Expired
//	held (Hold)               InProgress                Conflict
//
// With Config.HoldExpired, PROCESSING past its lease answers InProgress
// too: a recovery task settles it (Settle) or holds it for reconciliation
// (Hold), and no second owner executes. Lookup answers a query by key
// without changing anything.
//
// Fences come from one counter per store, so they increase across keys and
// across the forgetting of a key: a stale owner can never match a newer
// record. Commit and Abort succeed only for the current owner's fence
// (ErrFenced otherwise), so a key is committed at most once per record, and
// a second record for a key can only begin after the first expired or was
// aborted. A takeover restarts the record's retention.
//
// The store holds at most MaxRecords records, live and tombstones together.
// A new key that finds it full evicts the oldest tombstone; if every record
// is live it gets Full. A live record is never evicted.
//
// The store never reads a clock: every method takes now, the time since the
// run began, so the simulator passes its virtual clock and the HTTP server
// time.Since(start). Expiry is lazy: records are kept in two lists in expiry
// order (retention is constant and now never decreases), and each call first
// retires what has expired by now. An earlier now than one already seen is
// treated as the latest seen. Begin, Commit and Abort take O(1) time and
// allocate nothing in steady state.
//
// The zero Store is ready to use with the default Config (retention 24h,
// lease 10s, in-progress retry-after 100ms, tombstones kept as long as the
// retention, 1,000,000 records). A Store is not safe for concurrent use:
// its drivers hold it under their own lock (serve's service mutex).
//
// # Ledger
//
// Ledger folds each finished logical request — the executions of its side
// effect, which the driver counted while its attempts were alive — into
// Totals along with how its caller saw it end
// (Succeeded, Failed, Unknown): executions, duplicates Σ max(0, n−1), and
// unknown outcomes split into committed (n ≥ 1) and not committed (n = 0).
// Its memory is proportional to the live requests. The zero Ledger is ready
// to use; it is not safe for concurrent use.
package idempotency
