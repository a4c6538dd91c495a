package idempotency

import (
	"sync"
	"testing"
	"time"
)

// TestLockedOneOwner starts 64 goroutines that Begin the same key at once:
// exactly one must own it, the rest must see it in progress; once the owner
// commits, every one of them must get the replay.
func TestLockedOneOwner(t *testing.T) {
	const n = 64
	l, err := NewLocked(Config{})
	if err != nil {
		t.Fatal(err)
	}
	var (
		start sync.WaitGroup
		done  sync.WaitGroup
		mu    sync.Mutex
		count [numDecisions]int
		owner uint64
	)
	gate := make(chan struct{})
	start.Add(n)
	done.Add(n)
	for range n {
		go func() {
			defer done.Done()
			start.Done()
			<-gate
			d, f, _ := l.Begin(time.Millisecond, "svc", "k", 7)
			mu.Lock()
			count[d]++
			if d == Execute {
				owner = f
			}
			mu.Unlock()
		}()
	}
	start.Wait()
	close(gate)
	done.Wait()
	if count[Execute] != 1 || count[InProgress] != n-1 {
		t.Fatalf("decisions %v: want 1 execute and %d in_progress", count, n-1)
	}
	if err := l.Commit(2*time.Millisecond, "svc", "k", owner, Result{Status: 200}); err != nil {
		t.Fatal(err)
	}
	var replays sync.WaitGroup
	replays.Add(n)
	bad := make(chan Decision, n)
	for range n {
		go func() {
			defer replays.Done()
			if d, _, saved := l.Begin(3*time.Millisecond, "svc", "k", 7); d != Replay || saved.Status != 200 {
				bad <- d
			}
		}()
	}
	replays.Wait()
	close(bad)
	for d := range bad {
		t.Errorf("after commit: decision %v, want replay of status 200", d)
	}
	if st := l.Stats(); st.Executes != 1 || st.Commits != 1 || st.Replays != n {
		t.Errorf("stats %+v", st)
	}
	if got := l.Config().Lease; got != DefaultLease {
		t.Errorf("Config().Lease = %v, want default %v", got, DefaultLease)
	}
	if _, err := NewLocked(Config{Lease: -1}); err == nil {
		t.Error("NewLocked accepted a negative lease")
	}
}
