package shard

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	cases := []struct {
		in      string
		want    Spec
		wantErr string
	}{
		{"", Spec{}, ""},
		{"0/1", Spec{0, 1}, ""},
		{"2/8", Spec{2, 8}, ""},
		{"7/8", Spec{7, 8}, ""},
		{"99999/100000", Spec{99999, 100000}, ""},
		{"8/8", Spec{}, "index must be in [0, 8)"},
		{"0/0", Spec{}, "count must be in [1, 100000]"},
		{"0/100001", Spec{}, "count must be in [1, 100000]"},
		{"-1/4", Spec{}, "not a decimal number"},
		{"+1/4", Spec{}, "not a decimal number"},
		{" 1/4", Spec{}, "not a decimal number"},
		{"1/4 ", Spec{}, "not a decimal number"},
		{"0x1/4", Spec{}, "not a decimal number"},
		{"1", Spec{}, "want I/N"},
		{"1/", Spec{}, "count: empty"},
		{"/4", Spec{}, "index: empty"},
		{"1/2/3", Spec{}, "not a decimal number"},
		{"99999999999999999999/4", Spec{}, "too large"},
	}
	for _, c := range cases {
		got, err := Parse(c.in)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("Parse(%q) error = %v, want one containing %q", c.in, err, c.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), c.in) {
				t.Errorf("Parse(%q) error %q does not quote the input", c.in, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("Parse(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, c := range []struct {
		s  Spec
		ok bool
	}{
		{Spec{}, true}, {Spec{0, 1}, true}, {Spec{3, 4}, true},
		{Spec{0, 0}, true}, // the zero Spec
		{Spec{1, 0}, false}, {Spec{-1, 4}, false}, {Spec{4, 4}, false}, {Spec{0, MaxCount + 1}, false},
	} {
		if err := c.s.Validate(); (err == nil) != c.ok {
			t.Errorf("%#v.Validate() = %v, want ok=%v", c.s, err, c.ok)
		}
	}
}

// TestPartition checks the rule every command relies on: for each N, the
// shards 0/N … N−1/N own every index exactly once, Size counts what Owns
// selects, and Global enumerates it in order.
func TestPartition(t *testing.T) {
	const total = 103 // prime, so no N divides it evenly
	for n := 1; n <= 9; n++ {
		owners := make([]int, total)
		for i := range n {
			s := Spec{Index: i, Count: n}
			var owned []int
			for x := range total {
				if s.Owns(x) {
					owners[x]++
					owned = append(owned, x)
				}
			}
			if got := s.Size(total); got != len(owned) {
				t.Errorf("%v.Size(%d) = %d, Owns selects %d", s, total, got, len(owned))
			}
			for k, x := range owned {
				if g := s.Global(uint64(k)); g != uint64(x) {
					t.Errorf("%v.Global(%d) = %d, want %d", s, k, g, x)
				}
			}
			// Balanced: shard sizes differ by at most one.
			if lo, hi := total/n, (total+n-1)/n; len(owned) < lo || len(owned) > hi {
				t.Errorf("%v owns %d of %d, want %d..%d", s, len(owned), total, lo, hi)
			}
		}
		for x, c := range owners {
			if c != 1 {
				t.Fatalf("N=%d: index %d owned by %d shards", n, x, c)
			}
		}
	}
	var zero Spec
	if !zero.Owns(0) || !zero.Owns(12345) || zero.Size(7) != 7 || zero.Global(5) != 5 || zero.Sharded() {
		t.Error("the zero Spec must own everything")
	}
	if (Spec{0, 4}).Owns(-4) || zero.Owns(-1) {
		t.Error("negative indices must not be owned")
	}
	if got := (Spec{5, 8}).Size(3); got != 0 {
		t.Errorf("Size below the index = %d, want 0", got)
	}
}

func TestFromLookup(t *testing.T) {
	env := func(kv ...string) func(string) (string, bool) {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	cases := []struct {
		env     func(string) (string, bool)
		want    Spec
		wantErr string
	}{
		{env(IndexEnv, "3", CountEnv, "8"), Spec{3, 8}, ""},
		{env(IndexEnv, "0", CountEnv, "1"), Spec{0, 1}, ""},
		{env(CountEnv, "8"), Spec{}, "JOB_COMPLETION_INDEX is not set"},
		{env(IndexEnv, "3"), Spec{}, "STORMSIM_SHARDS is not set"},
		{env(IndexEnv, "8", CountEnv, "8"), Spec{}, "index must be in [0, 8)"},
		{env(IndexEnv, "x", CountEnv, "8"), Spec{}, `JOB_COMPLETION_INDEX="x"`},
		{env(IndexEnv, "1", CountEnv, "0"), Spec{}, "count must be in"},
	}
	for i, c := range cases {
		got, err := FromLookup(c.env)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("case %d: error = %v, want %q", i, err, c.wantErr)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("case %d: got %v, %v; want %v", i, got, err, c.want)
		}
	}
}

func TestFromEnv(t *testing.T) {
	t.Setenv(IndexEnv, "1")
	t.Setenv(CountEnv, "3")
	got, err := FromEnv()
	if err != nil || got != (Spec{1, 3}) {
		t.Fatalf("FromEnv() = %v, %v; want 1/3", got, err)
	}
}

// TestRequestsUnionIsTheSchedule drives every shard over one global
// schedule, as N load pods do, and checks that ids never collide, each
// shard gets ⌈total/N⌉ or ⌊total/N⌋ requests, and the union sorted by id is
// the schedule itself.
func TestRequestsUnionIsTheSchedule(t *testing.T) {
	// A deterministic, irregular schedule: t_n = n² ms until 5 s.
	sched := func(n uint64) (time.Duration, bool) {
		t := time.Duration(n*n) * time.Millisecond
		return t, t < 5*time.Second
	}
	var total uint64
	for ; ; total++ {
		if _, ok := sched(total); !ok {
			break
		}
	}
	for n := 1; n <= 6; n++ {
		seen := map[uint64]time.Duration{}
		for i := range n {
			s := Spec{Index: i, Count: n}
			var got []Request
			for r := range s.Requests(sched) {
				got = append(got, r)
			}
			if len(got) != s.Size(int(total)) {
				t.Errorf("%v sent %d requests, want %d", s, len(got), s.Size(int(total)))
			}
			if !slices.IsSortedFunc(got, func(a, b Request) int { return int(a.At - b.At) }) {
				t.Errorf("%v: send times out of order", s)
			}
			for _, r := range got {
				if _, dup := seen[r.ID]; dup {
					t.Fatalf("N=%d: id %d sent by two shards", n, r.ID)
				}
				seen[r.ID] = r.At
			}
		}
		if uint64(len(seen)) != total {
			t.Fatalf("N=%d: union has %d requests, schedule %d", n, len(seen), total)
		}
		for id, at := range seen {
			if want, _ := sched(id); at != want {
				t.Fatalf("N=%d: request %d at %v, schedule says %v", n, id, at, want)
			}
		}
	}
}

// TestRequestsWalksForward checks that a stateful pacer is only asked for
// increasing n, and that breaking out of the loop stops the walk.
func TestRequestsWalksForward(t *testing.T) {
	last := -1
	var calls int
	at := func(n uint64) (time.Duration, bool) {
		calls++
		if int(n) <= last {
			t.Fatalf("asked for %d after %d", n, last)
		}
		last = int(n)
		return time.Duration(n), true // unbounded schedule
	}
	var ids []uint64
	for r := range (Spec{1, 4}).Requests(at) {
		ids = append(ids, r.ID)
		if len(ids) == 3 {
			break
		}
	}
	if !slices.Equal(ids, []uint64{1, 5, 9}) || calls != 3 {
		t.Fatalf("ids %v after %d calls, want [1 5 9] after 3", ids, calls)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"", "0/1", "2/8", "8/8", "-1/2", "1/", "a/b", "99999/100000", "007/010"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sp, err := Parse(s)
		if err != nil {
			if sp != (Spec{}) {
				t.Fatalf("Parse(%q) returned %v with error %v", s, sp, err)
			}
			return
		}
		if err := sp.Validate(); err != nil {
			t.Fatalf("Parse(%q) = %v, which does not validate: %v", s, sp, err)
		}
		back, err := Parse(sp.String())
		if err != nil || back != sp {
			t.Fatalf("round trip of %q: %v -> %q -> %v, %v", s, sp, sp.String(), back, err)
		}
		// A parsed shard owns exactly one of any Count consecutive indices.
		if sp.Count > 1 {
			owned := 0
			for x := 1000; x < 1000+sp.Count && x < 1000+64; x++ {
				if sp.Owns(x) {
					owned++
				}
			}
			if sp.Count <= 64 && owned != 1 {
				t.Fatalf("%v owns %d of %d consecutive indices", sp, owned, sp.Count)
			}
		}
	})
}
