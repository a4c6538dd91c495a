package idempotency_test

import (
	"fmt"
	"time"

	"github.com/stormsim/stormsim/idempotency"
)

// A write whose first attempt timed out at the client is retried. The retry
// arrives while the first attempt still holds the key, then after it
// committed: the effect runs once and the retry gets the saved result.
func ExampleStore() {
	s, err := idempotency.NewStore(idempotency.Config{Retention: time.Minute, Lease: time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	const digest = 0xfeed // hash of the request payload
	d, fence, _ := s.Begin(0, "orders", "key-1", digest)
	fmt.Println("attempt 1:", d)

	d, _, _ = s.Begin(300*time.Millisecond, "orders", "key-1", digest)
	fmt.Println("attempt 2:", d, "retry after", s.Config().InProgressRetryAfter)

	err = s.Commit(500*time.Millisecond, "orders", "key-1", fence, idempotency.Result{Status: 201, Body: "order 17"})
	fmt.Println("commit:", err)

	d, _, saved := s.Begin(800*time.Millisecond, "orders", "key-1", digest)
	fmt.Println("attempt 3:", d, saved.Status, saved.Body)

	d, _, _ = s.Begin(time.Second, "orders", "key-1", digest+1)
	fmt.Println("other payload:", d)

	d, _, _ = s.Begin(61*time.Second, "orders", "key-1", digest)
	fmt.Println("after retention:", d)
	// Output:
	// attempt 1: execute
	// attempt 2: in_progress retry after 100ms
	// commit: <nil>
	// attempt 3: replay 201 order 17
	// other payload: conflict
	// after retention: expired
}

// An owner that stalls past its lease is taken over; its late commit is
// refused, so the key is committed once.
func ExampleStore_fencing() {
	s, _ := idempotency.NewStore(idempotency.Config{Lease: time.Second})
	_, stale, _ := s.Begin(0, "orders", "key-2", 1)
	d, owner, _ := s.Begin(2*time.Second, "orders", "key-2", 1)
	fmt.Println("retry:", d, owner > stale)
	fmt.Println("stale commit:", s.Commit(3*time.Second, "orders", "key-2", stale, idempotency.Result{Status: 201}))
	fmt.Println("new owner commit:", s.Commit(3*time.Second, "orders", "key-2", owner, idempotency.Result{Status: 201}))
	// Output:
	// retry: execute true
	// stale commit: idempotency: fenced: a newer owner holds the key
	// new owner commit: <nil>
}

// The ledger counts what actually happened on the server against what the
// caller saw.
func ExampleLedger() {
	var l idempotency.Ledger
	// request 1: its first attempt executed and the reply was lost, its
	// retry executed again and succeeded
	l.Fold(2, idempotency.Succeeded)
	// request 2 executed, but the caller timed out
	l.Fold(1, idempotency.Unknown)
	t := l.Totals()
	fmt.Println("executions:", t.Executions, "duplicates:", t.Duplicates, "unknown but committed:", t.UnknownCommitted)
	// Output:
	// executions: 3 duplicates: 1 unknown but committed: 1
}
