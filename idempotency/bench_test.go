package idempotency

import (
	"strconv"
	"testing"
	"time"
)

// BenchmarkStoreCycle is the steady state of a committing service: each new
// key is begun, committed and replayed once, and old keys expire. Keys are
// prebuilt so the benchmark measures the store, not strconv.
func BenchmarkStoreCycle(b *testing.B) {
	const nkeys = 1 << 14
	keys := make([]string, nkeys)
	for i := range keys {
		keys[i] = strconv.Itoa(i)
	}
	// Retention and tombstone period together span a quarter of the key
	// ring, so every key is forgotten before it comes round again.
	s, err := NewStore(Config{Retention: nkeys / 8 * time.Millisecond, Lease: time.Millisecond, Tombstone: nkeys / 8 * time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	res := Result{Status: 201}
	b.ReportAllocs()
	var now time.Duration
	for i := 0; b.Loop(); i++ {
		now += time.Millisecond
		k := keys[i%nkeys]
		d, f, _ := s.Begin(now, "svc", k, 1)
		if d != Execute {
			b.Fatalf("op %d: %v", i, d)
		}
		if err := s.Commit(now, "svc", k, f, res); err != nil {
			b.Fatal(err)
		}
		if d, _, _ := s.Begin(now, "svc", k, 1); d != Replay {
			b.Fatalf("op %d: replay got %v", i, d)
		}
	}
}

// BenchmarkLedger is the simulator's per-request cost: one fold.
func BenchmarkLedger(b *testing.B) {
	var l Ledger
	b.ReportAllocs()
	for i := int64(0); b.Loop(); i++ {
		l.Fold(i%3, CallerView(i%3))
	}
}
