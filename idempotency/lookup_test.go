package idempotency

import (
	"errors"
	"testing"
	"time"
)

// TestLookupHoldSettle is a time script of one key through a lost owner:
// a query at each step sees what a status endpoint would answer, recovery
// settles the record once, and the stale owner's commit is fenced.
func TestLookupHoldSettle(t *testing.T) {
	ms := time.Millisecond
	s, err := NewStore(Config{Lease: 100 * ms, Retention: time.Second, HoldExpired: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Lookup(0, "svc", "k"); got.State != Absent {
		t.Fatalf("before Begin: %v, want absent", got.State)
	}
	_, fence, _ := s.Begin(10*ms, "svc", "k", 1)
	steps := []struct {
		at   time.Duration
		do   func(now time.Duration) error
		want Record
		err  error
	}{
		{at: 20 * ms, want: Record{State: Processing, Began: 10 * ms, LeaseLive: true}},
		{at: 30 * ms, do: func(now time.Duration) error { return s.Settle(now, "svc", "k", Result{Status: 1}) }, err: ErrLeased,
			want: Record{State: Processing, Began: 10 * ms, LeaseLive: true}},
		{at: 30 * ms, do: func(now time.Duration) error { return s.Hold(now, "svc", "k", 0) }, err: ErrLeased,
			want: Record{State: Processing, Began: 10 * ms, LeaseLive: true}},
		// The lease is over: with HoldExpired, a retry waits, it does not take over.
		{at: 200 * ms, do: func(now time.Duration) error {
			if d, _, _ := s.Begin(now, "svc", "k", 1); d != InProgress {
				return errors.New("retry after the lease: " + d.String())
			}
			return nil
		}, want: Record{State: Processing, Began: 10 * ms}},
		{at: 210 * ms, do: func(now time.Duration) error { return s.Hold(now, "svc", "k", 0) }, want: Record{State: Held, Began: 10 * ms}},
		{at: 220 * ms, do: func(now time.Duration) error { return s.Commit(now, "svc", "k", fence, Result{}) }, err: ErrFenced,
			want: Record{State: Held, Began: 10 * ms}},
		{at: 300 * ms, do: func(now time.Duration) error { return s.Settle(now, "svc", "k", Result{Status: 7}) },
			want: Record{State: Completed, Result: Result{Status: 7}, Began: 10 * ms}},
		{at: 310 * ms, do: func(now time.Duration) error { return s.Settle(now, "svc", "k", Result{Status: 8}) }, err: ErrCompleted,
			want: Record{State: Completed, Result: Result{Status: 7}, Began: 10 * ms}},
		{at: 2 * time.Second, want: Record{State: Gone}},
	}
	for i, st := range steps {
		if st.do != nil {
			if err := st.do(st.at); !errors.Is(err, st.err) {
				t.Fatalf("step %d at %v: error %v, want %v", i, st.at, err, st.err)
			}
		}
		if got := s.Lookup(st.at, "svc", "k"); got != st.want {
			t.Fatalf("step %d at %v: Lookup = %+v, want %+v", i, st.at, got, st.want)
		}
	}
	if st := s.Stats(); st.Holds != 1 || st.Settles != 1 || st.Executes != 1 {
		t.Errorf("stats %+v: want 1 hold, 1 settle, 1 execute", st)
	}
}

// TestHoldByOwner: an owner hands its record over with its fence; a
// held record is never taken over, even without HoldExpired.
func TestHoldByOwner(t *testing.T) {
	var s Store
	_, fence, _ := s.Begin(0, "", "k", 1)
	if err := s.Hold(time.Millisecond, "", "k", fence+1); !errors.Is(err, ErrFenced) {
		t.Fatalf("Hold with a wrong fence: %v", err)
	}
	if err := s.Hold(time.Millisecond, "", "k", fence); err != nil {
		t.Fatal(err)
	}
	if d, _, _ := s.Begin(time.Hour, "", "k", 1); d != InProgress {
		t.Fatalf("arrival past the lease at a held record: %v, want in_progress", d)
	}
	if err := s.Abort(time.Hour, "", "k", fence); !errors.Is(err, ErrFenced) {
		t.Fatalf("owner's Abort after Hold: %v, want fenced", err)
	}
}
