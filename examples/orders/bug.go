package orders

import (
	"fmt"
	"strings"
)

// Bug names one classic way to get idempotency wrong. The zero value (and
// BugNone) is the correct implementation. A *Bug is a flag.Value, so a
// command can take it as -bug NAME.
type Bug string

// The variants. Each is the correct service with one mistake put in, so the
// scenario that exposes it changes one count and nothing else.
const (
	// BugNone is the correct service: the idempotency record and the order
	// committed in one transaction, the record unique per (tenant, key), a
	// payload digest, a PROCESSING state with a lease and a fencing token,
	// and the stored answer replayed.
	BugNone Bug = "none"
	// BugCheckThenAct looks for an order under the key, and inserts one if
	// there is none, with nothing unique behind the check: requests with one
	// key that overlap in time each find nothing and each write an order.
	BugCheckThenAct Bug = "check-then-act"
	// BugRecordAfterEffect writes the order first and the idempotency record
	// only afterwards, in a separate statement: a crash between the two
	// (Options.CrashAfterEffect) leaves an order with no record, so the
	// retry writes a second one; overlapping requests both find no record.
	BugRecordAfterEffect Bug = "record-after-effect"
	// BugMemoryDedup keeps the idempotency records in the instance's memory:
	// correct for one instance that never restarts, wrong as soon as a retry
	// reaches another instance or the instance crashed in between.
	BugMemoryDedup Bug = "memory-dedup"
	// BugUnscopedKey records keys without their tenant: the same key from two
	// tenants is taken for one request, and the second tenant is answered
	// with the first tenant's order.
	BugUnscopedKey Bug = "unscoped-key"
	// BugNoDigest keeps no digest of the payload: a different body under a
	// key already used is answered with the old result instead of refused.
	BugNoDigest Bug = "no-digest"
	// BugNoDedup ignores the key: every request writes an order.
	BugNoDedup Bug = "no-dedup"
)

// Bugs lists every variant, BugNone first, in a fixed order.
func Bugs() []Bug {
	return []Bug{BugNone, BugCheckThenAct, BugRecordAfterEffect, BugMemoryDedup, BugUnscopedKey, BugNoDigest, BugNoDedup}
}

// String returns the variant's name; the zero value reads as "none".
func (b Bug) String() string {
	if b == "" {
		return string(BugNone)
	}
	return string(b)
}

// ParseBug returns the variant named s (as String writes it; "" is BugNone).
func ParseBug(s string) (Bug, error) {
	if s == "" {
		return BugNone, nil
	}
	for _, b := range Bugs() {
		if string(b) == s {
			return b, nil
		}
	}
	names := make([]string, len(Bugs()))
	for i, b := range Bugs() {
		names[i] = string(b)
	}
	return "", fmt.Errorf("orders: unknown bug %q (want one of: %s)", s, strings.Join(names, ", "))
}

// Set parses s into b, so that *Bug is a flag.Value.
func (b *Bug) Set(s string) error {
	v, err := ParseBug(s)
	if err != nil {
		return err
	}
	*b = v
	return nil
}

// Type names the flag's value kind (for github.com/spf13/pflag).
func (b *Bug) Type() string { return "bug" }
