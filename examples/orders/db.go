package orders

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
	_ "modernc.org/sqlite"             // registers the pure-Go "sqlite" database/sql driver
)

// dialect is the SQL flavour behind a DB: the two differ only in placeholders
// and in the DDL of an auto-incrementing key.
type dialect int

const (
	sqlite dialect = iota
	postgres
)

// DB is the orders database: the orders table and the idempotency records,
// reached through database/sql. Several Services (in one process or in
// several) may share one database; a DB is safe for concurrent use.
type DB struct {
	sql     *sql.DB
	dialect dialect
	dsn     string
}

// sqliteBusyTimeout is how long a SQLite writer waits for another writer's
// lock before failing with SQLITE_BUSY. Two instances sharing one file take
// turns on the write lock; this only has to outlast one short transaction.
const sqliteBusyTimeout = 10 * time.Second

// Open opens (creating if need be) the orders database named by dsn and
// creates its schema when it is missing:
//
//   - "postgres://…" or "postgresql://…": PostgreSQL through pgx's
//     database/sql driver, the DSN passed to it unchanged;
//   - "sqlite:///abs/path.db", "sqlite://rel/path.db" or a plain file path:
//     SQLite through the pure-Go modernc.org/sqlite driver, in WAL mode with
//     a busy timeout and IMMEDIATE write transactions, so two instances
//     sharing one file (in one process or two) serialise their writes
//     instead of failing with "database is locked".
//
// An in-memory SQLite database is refused: each pooled connection would see
// a database of its own.
func Open(dsn string) (*DB, error) {
	if strings.TrimSpace(dsn) == "" {
		return nil, errors.New("orders: open: empty DSN")
	}
	db := &DB{dsn: dsn}
	var driver, source string
	switch {
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		db.dialect, driver, source = postgres, "pgx", dsn
	default:
		path := strings.TrimPrefix(dsn, "sqlite://")
		switch {
		case path == "":
			return nil, fmt.Errorf("orders: open %q: no file path", dsn)
		case path == ":memory:" || strings.HasPrefix(path, "file::memory:"):
			return nil, fmt.Errorf("orders: open %q: in-memory SQLite is not shared between connections; give a file path", dsn)
		case strings.ContainsRune(path, '?'):
			return nil, fmt.Errorf("orders: open %q: the SQLite path may not contain '?' (the driver's options are set by Open)", dsn)
		}
		db.dialect, driver = sqlite, "sqlite"
		source = path + "?_busy_timeout=" + strconv.FormatInt(sqliteBusyTimeout.Milliseconds(), 10) +
			"&_journal_mode=WAL&_synchronous=NORMAL&_txlock=immediate"
	}
	pool, err := sql.Open(driver, source)
	if err != nil {
		return nil, fmt.Errorf("orders: open %q: %w", dsn, err)
	}
	db.sql = pool
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := db.createSchema(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("orders: open %q: %w", dsn, err)
	}
	return db, nil
}

// Close closes the database's connection pool.
func (db *DB) Close() error { return db.sql.Close() }

// SQL returns the underlying pool, for callers (tests, an effect oracle) that
// query the orders table directly.
func (db *DB) SQL() *sql.DB { return db.sql }

// DSN returns the DSN the database was opened with.
func (db *DB) DSN() string { return db.dsn }

// createSchema creates the two tables and their index if they are missing.
// Instances starting together may race here: PostgreSQL's CREATE … IF NOT
// EXISTS is not safe against a concurrent twin, so the statements run under a
// transaction-scoped advisory lock; SQLite's IMMEDIATE transaction serialises
// them by itself.
//
// orders deliberately has no unique constraint on (tenant, idem_key): the
// correct service's uniqueness lives in idempotency_keys' primary key, and the
// buggy variants must be able to write the duplicates they are there to show.
func (db *DB) createSchema(ctx context.Context) error {
	id := "id INTEGER PRIMARY KEY AUTOINCREMENT"
	if db.dialect == postgres {
		id = "id BIGSERIAL PRIMARY KEY"
	}
	stmts := []string{
		`CREATE TABLE IF NOT EXISTS orders (
			` + id + `,
			tenant TEXT NOT NULL,
			idem_key TEXT NOT NULL,
			digest TEXT NOT NULL,
			sku TEXT NOT NULL,
			qty BIGINT NOT NULL,
			created_unix_ns BIGINT NOT NULL
		)`,
		`CREATE INDEX IF NOT EXISTS orders_tenant_key ON orders (tenant, idem_key)`,
		`CREATE TABLE IF NOT EXISTS idempotency_keys (
			tenant TEXT NOT NULL,
			idem_key TEXT NOT NULL,
			digest TEXT NOT NULL,
			state TEXT NOT NULL,
			fence BIGINT NOT NULL,
			lease_until_unix_ns BIGINT NOT NULL,
			status INTEGER NOT NULL DEFAULT 0,
			body TEXT NOT NULL DEFAULT '',
			PRIMARY KEY (tenant, idem_key)
		)`,
	}
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	defer tx.Rollback()
	if db.dialect == postgres {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(7411033)`); err != nil {
			return fmt.Errorf("schema lock: %w", err)
		}
	}
	for _, s := range stmts {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("schema: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	return nil
}

// q rewrites a query written with '?' placeholders into the dialect's form
// ($1, $2, … for PostgreSQL). The queries here hold no literal '?'.
func (db *DB) q(query string) string {
	if db.dialect != postgres {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// execer is what an insert needs: a pool or a transaction.
type execer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// insertOrder writes one order (the side effect every variant performs) and
// returns it with its id.
func (db *DB) insertOrder(ctx context.Context, ex execer, tenant, key, digest string, in orderInput) (Order, error) {
	o := Order{Tenant: tenant, Key: key, SKU: in.SKU, Qty: in.Qty}
	err := ex.QueryRowContext(ctx, db.q(`INSERT INTO orders (tenant, idem_key, digest, sku, qty, created_unix_ns)
		VALUES (?, ?, ?, ?, ?, ?) RETURNING id`),
		tenant, key, digest, in.SKU, in.Qty, time.Now().UnixNano()).Scan(&o.ID)
	if err != nil {
		return Order{}, fmt.Errorf("insert order: %w", err)
	}
	return o, nil
}

// orderColumns is the column list scanOrder reads, in its order.
const orderColumns = `id, tenant, idem_key, digest, sku, qty`

// scanOrder reads one row of orderColumns.
func scanOrder(scan func(...any) error) (Order, string, error) {
	var o Order
	var digest string
	err := scan(&o.ID, &o.Tenant, &o.Key, &digest, &o.SKU, &o.Qty)
	return o, digest, err
}

// findOrder returns the first order written under (tenant, key), if any.
func (db *DB) findOrder(ctx context.Context, tenant, key string) (o Order, digest string, found bool, err error) {
	row := db.sql.QueryRowContext(ctx, db.q(`SELECT `+orderColumns+` FROM orders
		WHERE tenant = ? AND idem_key = ? ORDER BY id LIMIT 1`), tenant, key)
	o, digest, err = scanOrder(row.Scan)
	if errors.Is(err, sql.ErrNoRows) {
		return Order{}, "", false, nil
	}
	if err != nil {
		return Order{}, "", false, fmt.Errorf("find order: %w", err)
	}
	return o, digest, true, nil
}

// maxListed bounds one GET /orders answer's list; count is always exact.
const maxListed = 1000

// listOrders returns the number of orders matching the filters and up to
// maxListed of them, oldest first. A nil filter matches every value.
func (db *DB) listOrders(ctx context.Context, tenant, key *string) (int, []Order, error) {
	var where []string
	var args []any
	if tenant != nil {
		where, args = append(where, "tenant = ?"), append(args, *tenant)
	}
	if key != nil {
		where, args = append(where, "idem_key = ?"), append(args, *key)
	}
	cond := ""
	if len(where) > 0 {
		cond = " WHERE " + strings.Join(where, " AND ")
	}
	var count int
	if err := db.sql.QueryRowContext(ctx, db.q(`SELECT count(*) FROM orders`+cond), args...).Scan(&count); err != nil {
		return 0, nil, fmt.Errorf("count orders: %w", err)
	}
	rows, err := db.sql.QueryContext(ctx, db.q(`SELECT `+orderColumns+` FROM orders`+cond+
		` ORDER BY id LIMIT `+strconv.Itoa(maxListed)), args...)
	if err != nil {
		return 0, nil, fmt.Errorf("list orders: %w", err)
	}
	defer rows.Close()
	list := []Order{}
	for rows.Next() {
		o, _, err := scanOrder(rows.Scan)
		if err != nil {
			return 0, nil, fmt.Errorf("list orders: %w", err)
		}
		list = append(list, o)
	}
	if err := rows.Err(); err != nil {
		return 0, nil, fmt.Errorf("list orders: %w", err)
	}
	return count, list, nil
}

// getOrder returns the order with the given id.
func (db *DB) getOrder(ctx context.Context, id int64) (Order, bool, error) {
	row := db.sql.QueryRowContext(ctx, db.q(`SELECT `+orderColumns+` FROM orders WHERE id = ?`), id)
	o, _, err := scanOrder(row.Scan)
	if errors.Is(err, sql.ErrNoRows) {
		return Order{}, false, nil
	}
	if err != nil {
		return Order{}, false, fmt.Errorf("get order %d: %w", id, err)
	}
	return o, true, nil
}

// Record states of idempotency_keys.state.
const (
	stateProcessing = "processing"
	stateDone       = "done"
)

// record is one row of idempotency_keys.
type record struct {
	digest     string
	state      string
	fence      int64
	leaseUntil time.Time
	status     int
	body       []byte
}

// claim tries to become the owner of (tenant, key): it inserts a PROCESSING
// record with fence 1 and a lease until leaseUntil. It reports whether the
// insert won; when it did not, the caller reads the existing record.
func (db *DB) claim(ctx context.Context, tenant, key, digest string, leaseUntil time.Time) (bool, error) {
	res, err := db.sql.ExecContext(ctx, db.q(`INSERT INTO idempotency_keys
		(tenant, idem_key, digest, state, fence, lease_until_unix_ns) VALUES (?, ?, ?, ?, 1, ?)
		ON CONFLICT (tenant, idem_key) DO NOTHING`),
		tenant, key, digest, stateProcessing, leaseUntil.UnixNano())
	if err != nil {
		return false, fmt.Errorf("claim key: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("claim key: %w", err)
	}
	return n == 1, nil
}

// takeOver becomes the owner of a PROCESSING record whose lease expired before
// now, by raising its fence from the value the caller saw: a compare-and-swap,
// so of two instances taking over at once only one wins. It reports whether
// this caller won.
func (db *DB) takeOver(ctx context.Context, tenant, key string, seenFence int64, now, leaseUntil time.Time) (bool, error) {
	res, err := db.sql.ExecContext(ctx, db.q(`UPDATE idempotency_keys
		SET fence = fence + 1, lease_until_unix_ns = ?
		WHERE tenant = ? AND idem_key = ? AND state = ? AND fence = ? AND lease_until_unix_ns <= ?`),
		leaseUntil.UnixNano(), tenant, key, stateProcessing, seenFence, now.UnixNano())
	if err != nil {
		return false, fmt.Errorf("take over key: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("take over key: %w", err)
	}
	return n == 1, nil
}

// readRecord returns the record of (tenant, key), if there is one.
func (db *DB) readRecord(ctx context.Context, tenant, key string) (record, bool, error) {
	var r record
	var lease int64
	var body string
	err := db.sql.QueryRowContext(ctx, db.q(`SELECT digest, state, fence, lease_until_unix_ns, status, body
		FROM idempotency_keys WHERE tenant = ? AND idem_key = ?`), tenant, key).
		Scan(&r.digest, &r.state, &r.fence, &lease, &r.status, &body)
	if errors.Is(err, sql.ErrNoRows) {
		return record{}, false, nil
	}
	if err != nil {
		return record{}, false, fmt.Errorf("read key record: %w", err)
	}
	r.leaseUntil, r.body = time.Unix(0, lease), []byte(body)
	return r, true, nil
}

// errFenced reports that a newer owner took the key over while this one was
// working: its effect was rolled back.
var errFenced = errors.New("fenced out: the key's lease expired and another request took it over")

// complete performs the effect and finishes the record in one transaction:
// it inserts the order, then marks the record DONE with the answer — but only
// if the record still carries this owner's fence. If a newer owner took the
// key over, nothing is written and complete returns errFenced.
func (db *DB) complete(ctx context.Context, recTenant, tenant, key, digest string, fence int64, in orderInput) (Order, []byte, error) {
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return Order{}, nil, fmt.Errorf("complete: %w", err)
	}
	defer tx.Rollback()
	o, err := db.insertOrder(ctx, tx, tenant, key, digest, in)
	if err != nil {
		return Order{}, nil, err
	}
	body := o.json()
	res, err := tx.ExecContext(ctx, db.q(`UPDATE idempotency_keys SET state = ?, status = ?, body = ?
		WHERE tenant = ? AND idem_key = ? AND state = ? AND fence = ?`),
		stateDone, statusCreated, string(body), recTenant, key, stateProcessing, fence)
	if err != nil {
		return Order{}, nil, fmt.Errorf("complete: finish record: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return Order{}, nil, fmt.Errorf("complete: finish record: %w", err)
	}
	if n != 1 {
		return Order{}, nil, errFenced
	}
	if err := tx.Commit(); err != nil {
		return Order{}, nil, fmt.Errorf("complete: commit: %w", err)
	}
	return o, body, nil
}

// writeDoneRecord inserts a finished record after the fact (the
// record-after-effect variant). A record already there is left alone: its
// writer did its own effect, which is the bug this variant shows.
func (db *DB) writeDoneRecord(ctx context.Context, tenant, key, digest string, body []byte) error {
	_, err := db.sql.ExecContext(ctx, db.q(`INSERT INTO idempotency_keys
		(tenant, idem_key, digest, state, fence, lease_until_unix_ns, status, body) VALUES (?, ?, ?, ?, 1, 0, ?, ?)
		ON CONFLICT (tenant, idem_key) DO NOTHING`),
		tenant, key, digest, stateDone, statusCreated, string(body))
	if err != nil {
		return fmt.Errorf("write key record: %w", err)
	}
	return nil
}
