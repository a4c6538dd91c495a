package traces

import (
	"fmt"
	"testing"
	"unsafe"
)

// TestInternerSharesUpToItsLimit: equal strings come back as one copy, ids
// in lowercase hex, and past its limit a table stops growing (a file whose
// names never repeat gains nothing from it) but still answers.
func TestInternerSharesUpToItsLimit(t *testing.T) {
	same := func(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }
	in := interner{limit: 3}
	a := in.of(string([]byte("GET /")))
	if b := in.of(string([]byte("GET /"))); b != a || !same(a, b) {
		t.Fatalf("of twice: %q and %q are not one string", a, b)
	}
	h := in.hex([]byte{0xAB, 0x01})
	if h2 := in.hex([]byte{0xab, 0x01}); h != "ab01" || !same(h, h2) {
		t.Fatalf("hex: %q, %q", h, h2)
	}
	for i := range 10 {
		if s := fmt.Sprint("svc", i); in.of(s) != s {
			t.Fatalf("of(%q) changed it", s)
		}
	}
	if len(in.m) != 3 {
		t.Fatalf("table holds %d strings, want its limit 3", len(in.m))
	}
	in.reset()
	if len(in.m) != 0 {
		t.Fatalf("reset left %d strings", len(in.m))
	}
	long := make([]byte, 40)
	if got := in.hex(long); len(got) != 80 {
		t.Fatalf("hex of 40 bytes: %d characters", len(got))
	}
}
