package shard

import (
	"testing"
	"time"
)

// BenchmarkRequests measures the per-request overhead a load shard adds
// on top of its pacer: it must be negligible next to an HTTP request.
func BenchmarkRequests(b *testing.B) {
	s := Spec{Index: 3, Count: 8}
	at := func(n uint64) (time.Duration, bool) { return time.Duration(n) * time.Microsecond, true }
	b.ReportAllocs()
	n := 0
	for r := range s.Requests(at) {
		if n++; n >= b.N {
			break
		}
		_ = r
	}
}

func BenchmarkOwns(b *testing.B) {
	s := Spec{Index: 3, Count: 8}
	b.ReportAllocs()
	owned := 0
	for i := range b.N {
		if s.Owns(i) {
			owned++
		}
	}
	if b.N >= 8 && owned == 0 {
		b.Fatal("owns nothing")
	}
}
