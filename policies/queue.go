package policies

import (
	"time"
)

// Queue disciplines accepted in OverloadConfig.Discipline.
const (
	FIFO         = "fifo"
	LIFO         = "lifo"
	AdaptiveLIFO = "adaptive_lifo"
)

// CoDel defaults ("Fail at Scale": M = 5 ms, N = 100 ms).
const (
	DefaultCoDelTarget   = 5 * time.Millisecond
	DefaultCoDelInterval = 100 * time.Millisecond
)

// Validate reports a field that cannot describe overload protection.
func (c OverloadConfig) Validate() error {
	switch c.Discipline {
	case "", FIFO, LIFO, AdaptiveLIFO:
	default:
		return fieldErrorf("overload.discipline", "must be fifo, lifo or adaptive_lifo, got %q", c.Discipline)
	}
	if c.ConcurrencyLimit < 0 {
		return fieldErrorf("overload.concurrency_limit", "must be ≥ 0, got %d", c.ConcurrencyLimit)
	}
	if c.MaxQueueTime < 0 {
		return fieldErrorf("overload.max_queue_time", "must be ≥ 0, got %v", c.MaxQueueTime)
	}
	if c.CoDel != nil {
		if err := c.CoDel.Validate(); err != nil {
			return inField("overload", err)
		}
	}
	if c.Pushback != nil {
		if err := c.Pushback.Validate(); err != nil {
			return inField("overload", err)
		}
	}
	if c.RateLimit != nil {
		if err := c.RateLimit.Validate(); err != nil {
			return inField("overload.rate_limit", err)
		}
	}
	return nil
}

// Validate reports a field that cannot describe CoDel.
func (c CoDelConfig) Validate() error {
	t, i := c.withDefaults()
	switch {
	case c.Target < 0:
		return fieldErrorf("codel.target", "must be > 0, got %v", c.Target)
	case c.Interval < 0:
		return fieldErrorf("codel.interval", "must be > 0, got %v", c.Interval)
	case t >= i:
		return fieldErrorf("codel.target", "must be below codel.interval (%v), got %v", i, t)
	}
	return nil
}

func (c *CoDelConfig) withDefaults() (target, interval time.Duration) {
	target, interval = DefaultCoDelTarget, DefaultCoDelInterval
	if c != nil && c.Target > 0 {
		target = c.Target
	}
	if c != nil && c.Interval > 0 {
		interval = c.Interval
	}
	return target, interval
}

// Queue is a service's waiting room: a ring buffer of items with their
// enqueue times, served by a discipline and shedding stale work.
//
//   - fifo serves the oldest item, lifo the newest; adaptive_lifo serves the
//     newest while a standing queue exists and the oldest otherwise.
//   - A standing queue exists when the queue has not been empty within the
//     last Interval (CoDel's Interval, default 100 ms).
//   - With CoDel set, Next sheds items that waited longer than Target while
//     a standing queue exists, and longer than Interval otherwise. This is
//     the controlled delay of Facebook's "Fail at Scale", not the classic
//     CoDel control law (no 1/√count drop schedule): it suits a request
//     queue where each dropped item is a whole request.
//   - With MaxQueueTime set, Next sheds items that waited longer than it.
//
// Shed items are always the oldest (the queue is in arrival order), so each
// Next passes a prefix of the queue to shed, then serves one item. Offer and
// Next must be called with non-decreasing times.
//
// An owner that gives up on a queued item (its caller cancelled it) reports
// it with Cancel, after TrackCancelled told the queue how to recognize such
// items. The item frees its place at once — Len, the limit and the
// concurrency limit stop counting it — and is removed lazily: it is handed
// to the drop function when it reaches an end of the queue, or when the ring
// is full and at least half of it is cancelled (then the ring is compacted
// in one pass instead of growing). Each cancelled item is thus touched O(1)
// times amortized, and the ring never holds more than about twice the live
// items plus the limit.
//
// The ring's size is a power of two that grows by doubling, and is then
// reused, so a queue in steady state does not allocate. A Queue is not safe
// for concurrent use: an HTTP server wraps it in a mutex; the simulator is
// single-threaded.
type Queue[T any] struct {
	items     []queued[T] // len is a power of two
	mask      int         // len(items) - 1
	head, n   int         // n counts cancelled items not yet dropped
	dead      int         // cancelled items still in the ring
	limit     int         // < 0 unbounded
	concLimit int
	lifo      bool
	adaptive  bool
	codel     bool
	plain     bool // fifo with no shedding: Next just pops the head
	target    time.Duration
	interval  time.Duration
	maxWait   time.Duration
	lastEmpty time.Duration // last instant the queue was empty
	cancelled func(T) bool  // recognizes cancelled items (TrackCancelled)
	drop      func(T)       // receives them as they leave the ring
}

type queued[T any] struct {
	v  T
	at time.Duration
}

// NewQueue returns an empty queue holding at most limit items (limit < 0:
// unbounded; 0: no waiting room, so every Offer is refused).
func NewQueue[T any](limit int, c OverloadConfig) (*Queue[T], error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	q := &Queue[T]{limit: limit, concLimit: c.ConcurrencyLimit, maxWait: c.MaxQueueTime}
	q.target, q.interval = c.CoDel.withDefaults()
	q.codel = c.CoDel != nil
	q.lifo = c.Discipline == LIFO
	q.adaptive = c.Discipline == AdaptiveLIFO
	q.plain = !q.codel && q.maxWait <= 0 && !q.lifo && !q.adaptive
	size := 16
	if limit >= 0 && limit < size {
		size = 1
		for size < limit {
			size *= 2
		}
	}
	q.items = make([]queued[T], size)
	q.mask = size - 1
	return q, nil
}

// Len returns the number of queued items, cancelled ones excluded.
func (q *Queue[T]) Len() int { return q.n - q.dead }

// Cancelled returns how many cancelled items the ring still holds (they
// are not in Len). A drained queue holds none.
func (q *Queue[T]) Cancelled() int { return q.dead }

// Held returns how many items the ring holds, cancelled ones included:
// Len plus Cancelled.
func (q *Queue[T]) Held() int { return q.n }

// Admits reports whether the concurrency limit leaves room for one more
// request when inService are being served and Len are queued. A server
// checks it before starting a request directly on a free worker.
func (q *Queue[T]) Admits(inService int) bool {
	return q.concLimit <= 0 || inService+q.n-q.dead < q.concLimit
}

// Offer queues v at now. It returns false, leaving the queue unchanged, when
// the queue is full or the concurrency limit (inService + queued) is reached:
// the caller rejects the request.
func (q *Queue[T]) Offer(now time.Duration, v T, inService int) bool {
	live := q.n - q.dead
	if (q.concLimit > 0 && inService+live >= q.concLimit) || (q.limit >= 0 && live >= q.limit) {
		return false
	}
	if live == 0 {
		q.lastEmpty = now
	}
	if q.n == len(q.items) {
		q.grow()
	}
	q.items[(q.head+q.n)&q.mask] = queued[T]{v: v, at: now}
	q.n++
	return true
}

// Push is Offer for a queue without a limit or a concurrency limit, in a
// form small enough to inline into a caller that checks more: it queues v
// at now and returns true, or returns false, leaving the queue unchanged,
// when the ring is full (Offer then grows it).
func (q *Queue[T]) Push(now time.Duration, v T) bool {
	if q.n == len(q.items) {
		return false
	}
	if q.n == q.dead {
		q.lastEmpty = now
	}
	q.items[(q.head+q.n)&q.mask] = queued[T]{v: v, at: now}
	q.n++
	return true
}

// Unlimited reports whether the queue has neither a limit nor a
// concurrency limit: Offer refuses nothing, and Push may stand in for it.
func (q *Queue[T]) Unlimited() bool { return q.limit < 0 && q.concLimit <= 0 }

// TrackCancelled tells the queue how to recognize an item its owner has
// cancelled (cancelled(v) must hold from the owner's Cancel on), and gives
// the function that receives each such item when it leaves the ring. Call
// it once, before the first Cancel.
func (q *Queue[T]) TrackCancelled(cancelled func(T) bool, drop func(T)) {
	q.cancelled, q.drop = cancelled, drop
}

// Cancel records at now that one queued item has just been cancelled by its
// owner. Its place is free at once; the item itself leaves lazily (see
// Queue). Cancel without TrackCancelled, or with more cancellations than
// queued items, is a programming error and panics.
func (q *Queue[T]) Cancel(now time.Duration) {
	if q.cancelled == nil || q.dead >= q.n {
		panic("policies: Queue.Cancel without a tracked queued item")
	}
	q.dead++
	if q.dead == q.n {
		q.lastEmpty = now
	}
}

// grow makes room for one more item in a full ring: it drops the cancelled
// items when they are at least half of it, and doubles it otherwise.
func (q *Queue[T]) grow() {
	if q.dead > 0 && 2*q.dead >= q.n {
		q.compact()
		return
	}
	size := max(2*len(q.items), 1)
	items := make([]queued[T], size)
	for i := range q.n {
		items[i] = q.items[(q.head+i)&q.mask]
	}
	q.items, q.head, q.mask = items, 0, size-1
}

// compact drops every cancelled item, keeping the others in order.
func (q *Queue[T]) compact() {
	w := 0
	for i := range q.n {
		it := q.items[(q.head+i)&q.mask]
		if q.cancelled(it.v) {
			q.drop(it.v)
			continue
		}
		q.items[(q.head+w)&q.mask] = it
		w++
	}
	for i := w; i < q.n; i++ {
		q.items[(q.head+i)&q.mask] = queued[T]{}
	}
	q.n, q.dead = w, 0
}

// Standing reports whether a standing queue exists at now: the queue is not
// empty and has not been empty within the last Interval.
func (q *Queue[T]) Standing(now time.Duration) bool {
	return q.n > q.dead && now-q.lastEmpty > q.interval
}

// Next removes and returns the item to serve at now. Items that waited too
// long are removed first and passed to shed (which may be nil); cancelled
// items met on the way go to the drop function of TrackCancelled. ok is
// false when nothing is left to serve.
func (q *Queue[T]) Next(now time.Duration, shed func(T)) (v T, ok bool) {
	if q.plain && q.dead == 0 {
		return q.Pop(now)
	}
	standing := q.Standing(now)
	limit := time.Duration(-1)
	if q.codel {
		limit = q.interval
		if standing {
			limit = q.target
		}
	}
	if q.maxWait > 0 && (limit < 0 || q.maxWait < limit) {
		limit = q.maxWait
	}
	for limit >= 0 && q.n > 0 && now-q.items[q.head].at > limit {
		it := q.popHead()
		if q.dead > 0 && q.cancelled(it) {
			q.dropped(it)
		} else if shed != nil {
			shed(it)
		}
	}
	for q.n > 0 {
		if q.lifo || (q.adaptive && standing) {
			v = q.popTail()
		} else {
			v = q.popHead()
		}
		if q.dead > 0 && q.cancelled(v) {
			q.dropped(v)
			continue
		}
		if q.n == q.dead {
			q.lastEmpty = now
		}
		return v, true
	}
	q.lastEmpty = now
	return v, false
}

// Plain reports whether the queue is a fifo that sheds nothing: its Next,
// while it holds no cancelled item, is Pop.
func (q *Queue[T]) Plain() bool { return q.plain }

// Pop is Next for a Plain queue holding no cancelled item (Cancelled is
// 0): what Next's general loop does for it, minus the checks, in a form
// the compiler inlines into its callers.
func (q *Queue[T]) Pop(now time.Duration) (v T, ok bool) {
	if q.n == 0 {
		q.lastEmpty = now
		return v, false
	}
	v = q.popHead()
	if q.n == 0 {
		q.lastEmpty = now
	}
	return v, true
}

// Shift is Pop for a queue known to hold an item, in a form small enough
// to inline into a caller that checks more: it removes and returns the
// head. It need not note when the queue becomes empty, as Pop does:
// Standing reads that instant only while the queue holds a live item, and
// the Offer that brings the first one after sets it anew.
func (q *Queue[T]) Shift() T { return q.popHead() }

func (q *Queue[T]) dropped(v T) {
	q.dead--
	q.drop(v)
}

func (q *Queue[T]) popHead() T {
	it := &q.items[q.head]
	v := it.v
	*it = queued[T]{}
	q.head = (q.head + 1) & q.mask
	q.n--
	return v
}

func (q *Queue[T]) popTail() T {
	it := &q.items[(q.head+q.n-1)&q.mask]
	v := it.v
	*it = queued[T]{}
	q.n--
	return v
}
