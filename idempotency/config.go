package idempotency

import (
	"fmt"
	"time"
)

// Defaults applied by NewStore to the zero fields of a Config.
const (
	// DefaultRetention is how long a key is remembered after its owner began:
	// a day, the common choice of public APIs that accept idempotency keys.
	DefaultRetention = 24 * time.Hour
	// DefaultLease is how long an owner may hold a key in PROCESSING before
	// another arrival may take it over.
	DefaultLease = 10 * time.Second
	// DefaultInProgressRetryAfter is the delay suggested to a duplicate that
	// arrives while the key is being processed.
	DefaultInProgressRetryAfter = 100 * time.Millisecond
	// DefaultMaxRecords bounds the records (live and expired) a store holds.
	DefaultMaxRecords = 1_000_000
)

// Config configures a Store. It is plain data; a zero field means the
// documented default.
type Config struct {
	// Retention is how long a record lives after its current owner's Begin
	// (default 24h). Within it a completed key replays its saved result.
	Retention time.Duration
	// Lease is how long an owner holds a key in PROCESSING (default 10s).
	// After it, an arrival with the same key and digest takes the key over
	// with a higher fence. It must not exceed Retention, so a live lease
	// always ends before its record expires.
	Lease time.Duration
	// InProgressRetryAfter is the delay a caller should wait after an
	// InProgress decision before retrying (default 100ms). The store only
	// carries it, for the server to send as its retry-after hint.
	InProgressRetryAfter time.Duration
	// Tombstone is how long an expired key is still recognised, without its
	// result, so that a late replay is reported as Expired instead of being
	// executed again (default: equal to Retention). Tombstones are the only
	// records evicted to make room.
	Tombstone time.Duration
	// MaxRecords bounds the records held, live and tombstones together
	// (default 1,000,000). When every record is live, new keys get Full.
	MaxRecords int
	// HoldExpired keeps a PROCESSING record whose lease ended for a
	// recovery task to settle (Settle, Hold): an arrival meanwhile gets
	// InProgress instead of taking the key over, so the effect never runs
	// a second time. Default false: an expired lease is taken over.
	HoldExpired bool
}

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	if c.Retention == 0 {
		c.Retention = DefaultRetention
	}
	if c.Lease == 0 {
		c.Lease = DefaultLease
	}
	if c.InProgressRetryAfter == 0 {
		c.InProgressRetryAfter = DefaultInProgressRetryAfter
	}
	if c.Tombstone == 0 {
		c.Tombstone = c.Retention
	}
	if c.MaxRecords == 0 {
		c.MaxRecords = DefaultMaxRecords
	}
	return c
}

// Validate reports the first field that is out of range, after defaults.
func (c Config) Validate() error {
	neg := []struct {
		name string
		v    time.Duration
	}{
		{"retention", c.Retention},
		{"lease", c.Lease},
		{"in_progress_retry_after", c.InProgressRetryAfter},
		{"tombstone", c.Tombstone},
	}
	for _, f := range neg {
		if f.v < 0 {
			return fmt.Errorf("idempotency: config: %s: must be >= 0, got %v", f.name, f.v)
		}
	}
	if c.MaxRecords < 0 {
		return fmt.Errorf("idempotency: config: max_records: must be >= 0, got %d", c.MaxRecords)
	}
	d := c.WithDefaults()
	if d.Lease > d.Retention {
		return fmt.Errorf("idempotency: config: lease: must be <= retention (%v), got %v", d.Retention, d.Lease)
	}
	return nil
}
