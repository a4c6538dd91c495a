package sim

import (
	"fmt"
	"math/bits"
	"time"
)

// Handler is the code an event runs. It is a plain function, not a closure,
// so scheduling allocates nothing: per-event data travels in arg (a pointer
// stored in an interface does not allocate).
type Handler func(e *Engine, arg any)

// event is one scheduled callback. Records are recycled through a free
// stack; gen changes on every reuse so a stale Timer cannot cancel a later
// event. The record is 64 bytes, one cache line: a field more would cost
// every event a second line.
type event struct {
	at   time.Duration
	seq  uint64
	idx  int // position in the heap, -1 when not queued
	gen  uint64
	fn   Handler // nil on a lane head stopped in the heap (a tombstone)
	arg  any
	lane *Lane // the lane it was scheduled on, or nil
}

// idx values of records not in the heap.
const (
	notQueued = -1 // free, or run
	inLane    = -2 // waiting in a lane behind its head
	inRing    = -3 // in a bucket of the ring
)

// The ring holds the events due soon: ringSize buckets of 2^ringShift ns
// each, covering a window of about a millisecond ahead of now. Retry-storm
// scenarios schedule nearly every event (a network hop, a service time)
// microseconds ahead, so most events go in and out of a bucket in O(1),
// without the binary heap's comparisons, half of them mispredicted.
// Events further ahead, and those finding their bucket full, go to the
// heap; the next event is the earlier of the ring's first and the heap's
// top, so which one holds an event changes the cost, never the order.
const (
	ringShift = 7
	ringSize  = 1024
	ringMask  = ringSize - 1
	ringWords = ringSize / 64
	// bucketMax bounds a bucket (kept sorted by insertion): a burst of
	// events within one bucket's width goes to the heap beyond it.
	bucketMax = 4
	// ringAfter is the heap size from which events go to the ring: a
	// smaller heap is cheaper than the ring, whose events compete with it
	// at every step (an M/M/1 queue keeps two or three events).
	ringAfter = 8
)

// ring is a calendar queue of the events due within its window: bucket b
// holds, in (time, sequence) order, those whose time in units of the
// bucket width is b modulo ringSize. Every event in it is due before
// now's bucket plus ringSize, so the first non-empty bucket at or after
// now's, circularly, holds the earliest. occ marks non-empty buckets and
// sum the non-zero words of occ, so finding it takes two bit scans.
// Buckets are slots of one array, each with its events' times inline: a
// bucket is a single cache line, compared without touching the records.
type ring struct {
	slot [ringSize * bucketMax]ringEntry
	cnt  [ringSize]uint8
	occ  [ringWords]uint64
	sum  uint32
	n    int
}

// ringEntry is one event in a bucket, with its time.
type ringEntry struct {
	at time.Duration
	ev *event
}

func (a *event) before(b *event) bool {
	return a.at < b.at || (a.at == b.at && a.seq < b.seq)
}

// Timer is a handle to a scheduled event, used to cancel it. The zero Timer
// refers to nothing; Stop on it is a no-op.
type Timer struct {
	ev  *event
	gen uint64
}

// Engine is a discrete-event engine: a virtual clock and a queue of events
// ordered by (time, sequence number), so events at the same instant run in
// the order they were scheduled. It is not safe for concurrent use; one run
// owns one engine.
type Engine struct {
	now  time.Duration
	seq  uint64
	heap []*event
	free []*event // records to reuse
	// spare is the record recycled last, reused first: most events
	// schedule one, so a record usually goes from the event just run to
	// the next scheduled without the free list's slice.
	spare  *event
	events uint64
	last   time.Duration
	stop   bool
	// Lane bookkeeping, kept off the path of heap-only events: records
	// waiting in lanes behind their heads, and stopped heads still in the
	// heap. Pending is len(heap) - tombs + waiting (+ 1 with hasNext).
	waiting, tombs int
	// next is the event AtNext scheduled, if hasNext: kept beside the
	// heap rather than in it.
	next    event
	hasNext bool
	// ring is allocated with the first event it takes (64 KB, zeroed): a
	// model that keeps fewer than ringAfter events scheduled, an M/M/1
	// queue's three, never needs it, and a rare-event estimate starts
	// hundreds of thousands of such runs.
	ring  *ring
	touch uint64 // the sink of touched records' loads
}

// Lane is a FIFO of events whose times never decrease, such as timers of
// one fixed duration (every attempt's timeout on an edge): appending keeps
// it sorted, so only its head sits in the engine's heap. Scheduling on a
// lane is O(1); stopping an event behind the head is O(1) and leaves a
// stale entry that is skipped when it reaches the front (in a lane of over
// 256 waiting, stopping the front entry drops the stale ones behind it at
// once); stopping the head leaves it in the heap as a tombstone, discarded
// when it reaches the top.
// Retry-storm runs schedule a timeout per attempt and cancel nearly all of
// them, so this replaces a heap insert and removal per attempt with O(1)
// work, and keeps the heap small for every other event.
//
// Events run in the same (time, sequence) order as if scheduled with At:
// a lane changes the cost, never the order.
type Lane struct {
	q    []laneEntry // q[head:] are waiting, in order; stale ones included
	head int
	tail time.Duration // the time of the last event appended
	top  bool          // the lane's front event is in the heap
}

// laneEntry names a record by its generation, so an entry whose record was
// stopped (and perhaps reused) is recognized as stale.
type laneEntry struct {
	ev  *event
	gen uint64
}

// NewEngine returns an engine whose clock reads 0.
func NewEngine() *Engine { return &Engine{} }

// Now returns the virtual time: the offset since the run began.
func (e *Engine) Now() time.Duration { return e.now }

// Events returns how many events have run.
func (e *Engine) Events() uint64 { return e.events }

// NextAt returns the time of the next scheduled event; ok is false when
// none is scheduled.
func (e *Engine) NextAt() (t time.Duration, ok bool) {
	e.dropTombstones()
	top := e.first()
	if e.hasNext && (top == nil || e.next.before(top)) {
		return e.next.at, true
	}
	if top == nil {
		return 0, false
	}
	return top.at, true
}

// first returns the earliest event of the ring and the heap (a stopped lane
// head included), or nil when both are empty.
func (e *Engine) first() *event {
	var top *event
	if e.ring != nil && e.ring.n > 0 {
		top = e.ring.front(e.ring.firstBucket(e.now))
	}
	if len(e.heap) > 0 && (top == nil || e.heap[0].before(top)) {
		top = e.heap[0]
	}
	return top
}

// dropTombstones removes stopped lane heads from the top of the heap, so
// that the top is an event that will run.
func (e *Engine) dropTombstones() {
	for e.tombs > 0 && len(e.heap) > 0 && e.heap[0].fn == nil {
		top := e.heap[0]
		e.popLane(top)
		e.tombs--
		e.recycle(top)
	}
}

// LastAt returns the time at which the most recent event ran (0 before any).
// Unlike Now it is not moved by RunUntil's end. It is brought up to date
// when Run or RunUntil returns, not by each event.
func (e *Engine) LastAt() time.Duration { return e.last }

// Pending returns how many events are scheduled.
func (e *Engine) Pending() int {
	n := len(e.heap) - e.tombs + e.waiting
	if e.ring != nil {
		n += e.ring.n
	}
	if e.hasNext {
		n++
	}
	return n
}

// AtNext schedules fn(e, arg) at time t, like At, for a source of events
// that has one pending at a time and never cancels it, such as an arrival
// process scheduling its next arrival as each one runs. The event waits
// beside the heap, not in it, and runs in the same (time, sequence) order
// as if scheduled with At: an event on every request's path costs one
// comparison instead of a heap insertion and removal, and the heap holds
// one event less for every other one. Scheduling in the past, or while an
// AtNext event is pending, is a programming error and panics.
func (e *Engine) AtNext(t time.Duration, fn Handler, arg any) {
	if t < e.now || e.hasNext {
		panic(fmt.Sprintf("sim: AtNext at %v (now %v) with one pending: %v", t, e.now, e.hasNext))
	}
	e.next.at, e.next.seq, e.next.fn, e.next.arg = t, e.seq, fn, arg
	e.seq++
	e.hasNext = true
}

// At schedules fn(e, arg) at time t. Scheduling in the past is a programming
// error and panics.
func (e *Engine) At(t time.Duration, fn Handler, arg any) Timer {
	if t < e.now {
		panic(fmt.Sprintf("sim: event scheduled at %v, before now %v", t, e.now))
	}
	ev := e.alloc(t, fn, arg)
	if ev.lane != nil { // a recycled lane record: most are not
		ev.lane = nil
	}
	if len(e.heap) >= ringAfter && uint64(t>>ringShift)-uint64(e.now>>ringShift) < ringSize {
		// Due within the ring's window: into its bucket, after every
		// event due no later (their sequence numbers are smaller), unless
		// the bucket is full. Written out here, not in a method of the
		// ring: At is the only one to add, and the call cost more than
		// its body.
		r := e.ring
		if r == nil {
			r = new(ring)
			e.ring = r
		}
		i := int(t>>ringShift) & ringMask
		if n := int(r.cnt[i]); n < bucketMax {
			q := r.slot[i*bucketMax : i*bucketMax+bucketMax]
			for ; n > 0 && q[n-1].at > t; n-- {
				q[n] = q[n-1]
			}
			q[n] = ringEntry{t, ev}
			r.cnt[i]++
			if r.cnt[i] == 1 {
				r.occ[i>>6] |= 1 << (i & 63)
				r.sum |= 1 << (i >> 6)
			}
			ev.idx = inRing
			r.n++
			return Timer{ev: ev, gen: ev.gen}
		}
	}
	e.heap = append(e.heap, ev)
	e.up(len(e.heap)-1, ev)
	return Timer{ev: ev, gen: ev.gen}
}

// firstBucket returns the first non-empty bucket at or after now's,
// circularly; the ring must not be empty.
func (r *ring) firstBucket(now time.Duration) int {
	c := int(now>>ringShift) & ringMask
	w := c >> 6
	if x := r.occ[w] & (^uint64(0) << (c & 63)); x != 0 {
		return w<<6 | bits.TrailingZeros64(x)
	}
	// The words after w, then from word 0 round to w itself, whose
	// buckets before c are a lap later.
	s := r.sum & (^uint32(0) << (w + 1))
	if s == 0 {
		s = r.sum
	}
	w = bits.TrailingZeros32(s)
	return w<<6 | bits.TrailingZeros64(r.occ[w])
}

// front returns the first event of bucket i.
func (r *ring) front(i int) *event { return r.slot[i*bucketMax].ev }

// remove takes ev out of bucket i.
func (r *ring) remove(i int, ev *event) {
	n := int(r.cnt[i]) - 1
	q := r.slot[i*bucketMax : i*bucketMax+bucketMax]
	k := 0
	for q[k].ev != ev {
		k++
	}
	for ; k < n; k++ {
		q[k] = q[k+1]
	}
	r.shrink(i, n)
}

// shrink records that bucket i now holds n events. The slot vacated at
// n keeps its entry: only the first cnt of a bucket are ever read, and the
// event it points to is a pooled record, so clearing it would free nothing.
func (r *ring) shrink(i, n int) {
	r.cnt[i] = uint8(n)
	if n == 0 {
		r.occ[i>>6] &^= 1 << (i & 63)
		if r.occ[i>>6] == 0 {
			r.sum &^= 1 << (i >> 6)
		}
	}
	r.n--
}

func (e *Engine) alloc(t time.Duration, fn Handler, arg any) *event {
	var ev *event
	if ev = e.spare; ev != nil {
		e.spare = nil
	} else if n := len(e.free); n > 0 {
		ev = e.free[n-1]
		e.free = e.free[:n-1]
	} else {
		ev = &event{}
	}
	ev.at, ev.seq, ev.fn, ev.arg = t, e.seq, fn, arg
	e.seq++
	return ev
}

// AtLane schedules fn(e, arg) at time t on lane l, like At. An event
// earlier than the lane's last one goes to the heap instead, so any t is
// correct; only times that never decrease are cheap.
func (e *Engine) AtLane(l *Lane, t time.Duration, fn Handler, arg any) Timer {
	if t < l.tail || t < e.now {
		return e.At(t, fn, arg) // At panics on the past
	}
	ev := e.alloc(t, fn, arg)
	ev.lane = l
	l.tail = t
	if !l.top {
		l.top = true
		e.heap = append(e.heap, ev)
		e.up(len(e.heap)-1, ev)
	} else {
		ev.idx = inLane
		e.waiting++
		if l.head == len(l.q) {
			l.q, l.head = l.q[:0], 0
		} else if l.head >= 1024 && l.head >= len(l.q)/2 {
			// Slide the waiting entries down rather than grow: the
			// backing array stays as large as the lane's peak.
			n := copy(l.q, l.q[l.head:])
			l.q, l.head = l.q[:n], 0
		}
		l.q = append(l.q, laneEntry{ev, ev.gen})
	}
	return Timer{ev: ev, gen: ev.gen}
}

// promote returns lane l's next waiting event, skipping stale entries, or
// nil when none waits (the lane then has nothing in the heap).
func (e *Engine) promote(l *Lane) *event {
	for l.head < len(l.q) {
		x := l.q[l.head]
		l.q[l.head] = laneEntry{}
		l.head++
		if x.ev.gen == x.gen && x.ev.idx == inLane {
			e.waiting--
			return x.ev
		}
	}
	l.q, l.head = l.q[:0], 0
	l.top = false
	return nil
}

// dropStale removes the stale entries at the front of lane l's waiting
// ones, so that the lane holds the span of its live timers rather than
// every timer stopped since its head was armed: timers are mostly stopped
// in the order they were armed, and a lane whose head waits for a timeout
// of seconds would otherwise stream through megabytes of stale entries.
func (e *Engine) dropStale(l *Lane) {
	for l.head < len(l.q) {
		x := l.q[l.head]
		if x.ev.gen == x.gen && x.ev.idx == inLane {
			return
		}
		l.q[l.head] = laneEntry{}
		l.head++
	}
	l.q, l.head = l.q[:0], 0
}

// popLane removes top, the heap's root and a lane's head, putting the
// lane's next event in its place when it has one.
func (e *Engine) popLane(top *event) {
	if nx := e.promote(top.lane); nx != nil {
		e.down(0, nx)
		return
	}
	e.popHeap()
}

// popHeap removes the heap's root.
func (e *Engine) popHeap() {
	last := len(e.heap) - 1
	moved := e.heap[last]
	// The vacated slot keeps its pointer: the record is on the free
	// list or in the heap anyway, so clearing it would free nothing.
	e.heap = e.heap[:last]
	if last > 0 {
		e.down(0, moved)
	}
}

// After schedules fn(e, arg) d after now; d < 0 panics like At.
func (e *Engine) After(d time.Duration, fn Handler, arg any) Timer {
	return e.At(e.now+d, fn, arg)
}

// Stop cancels the timer's event if it has not run yet, in O(log n), and
// reports whether it did.
func (e *Engine) Stop(t Timer) bool {
	if t.ev == nil { // the zero Timer: cheap enough to inline at every call
		return false
	}
	return e.stop1(t)
}

func (e *Engine) stop1(t Timer) bool {
	ev := t.ev
	if ev.gen != t.gen || ev.idx == notQueued || ev.fn == nil {
		return false
	}
	if ev.idx == inLane {
		e.waiting--
		l := ev.lane
		// Only a long lane is worth the walk (an M/M/1 queue's is short).
		front := len(l.q)-l.head > 256 && l.q[l.head].ev == ev
		e.recycle(ev) // its lane entry goes stale
		if front {
			e.dropStale(l)
		}
		return true
	}
	if ev.idx == inRing {
		e.ring.remove(int(ev.at>>ringShift)&ringMask, ev)
		e.recycle(ev)
		return true
	}
	if ev.lane != nil {
		// A lane head: leave it in the heap as a tombstone, so that the
		// lane's stopped timers cost no heap work until it reaches the top.
		e.tombs++
		ev.gen++
		ev.fn, ev.arg = nil, nil
		return true
	}
	i := ev.idx
	last := len(e.heap) - 1
	moved := e.heap[last]
	e.heap = e.heap[:last] // the vacated slot may keep its pointer, as in RunUntil
	if i != last {
		// Put the last record in the hole: it may belong above or below.
		if i > 0 && moved.before(e.heap[(i-1)/2]) {
			e.up(i, moved)
		} else {
			e.down(i, moved)
		}
	}
	e.recycle(ev)
	return true
}

// Halt makes Run or RunUntil return after the current event.
func (e *Engine) Halt() { e.stop = true }

// Run runs events until none is left or Halt is called.
func (e *Engine) Run() { e.RunUntil(1<<63 - 1) }

// RunUntil runs events whose time is ≤ end, then sets the clock to end if
// the queue ran dry earlier or later events remain. It returns early on Halt.
func (e *Engine) RunUntil(end time.Duration) {
	e.stop = false
	ran := e.events
	for !e.stop {
		if e.ring != nil && e.ring.n > 0 {
			// The ring's first event runs if it is earlier than the heap's
			// top and the AtNext event.
			rb := e.ring.firstBucket(e.now)
			top := e.ring.front(rb)
			if (len(e.heap) == 0 || top.before(e.heap[0])) && (!e.hasNext || top.before(&e.next)) {
				if top.at > end {
					break
				}
				// Take top, the front of bucket rb, out: remove for
				// the front, written out, as this is the loop's hot path.
				n := int(e.ring.cnt[rb]) - 1
				if n > 0 {
					q := e.ring.slot[rb*bucketMax : rb*bucketMax+bucketMax]
					for k := 0; k < n; k++ {
						q[k] = q[k+1]
					}
				}
				e.ring.shrink(rb, n)
				e.now = top.at
				fn, arg := top.fn, top.arg
				e.recycle(top)
				e.events++
				if e.ring.n > 0 {
					// Touch the ring's next record now: the load is
					// served while this event runs, not when the next
					// one starts.
					e.touch ^= e.ring.front(e.ring.firstBucket(e.now)).seq
				}
				fn(e, arg)
				continue
			}
		}
		if e.hasNext && (len(e.heap) == 0 || e.next.before(e.heap[0])) {
			if e.next.at > end {
				break
			}
			e.hasNext = false
			e.now = e.next.at
			e.events++
			e.next.fn(e, e.next.arg) // it may schedule the next one
			continue
		}
		if len(e.heap) == 0 {
			break
		}
		top := e.heap[0]
		if top.at > end {
			break
		}
		if top.lane == nil {
			// popHeap, written out: this is the loop's hot path.
			last := len(e.heap) - 1
			moved := e.heap[last]
			e.heap = e.heap[:last]
			if last > 1 {
				e.down(0, moved)
			} else if last == 1 {
				// One record left, the root: no call to down. An M/M/1
				// queue's heap holds two (a service time, a timeout).
				e.heap[0] = moved
				moved.idx = 0
			}
		} else {
			e.popLane(top)
			if top.fn == nil { // a stopped lane head
				e.tombs--
				e.recycle(top)
				continue
			}
		}
		e.now = top.at
		fn, arg := top.fn, top.arg
		e.recycle(top)
		e.events++
		fn(e, arg)
	}
	if e.events != ran {
		// e.now is the time of the last event run: LastAt's, kept here
		// rather than stored on every event.
		e.last = e.now
	}
	if !e.stop && end > e.now && end != 1<<63-1 {
		e.now = end
	}
}

// recycle puts ev on the free list. Its fn, arg and lane are left as
// they were: the new generation makes any Timer on it stale, alloc and its
// callers set them anew, and what arg points to (an attempt, a call) is
// pooled by the model, so keeping the pointer holds nothing alive.
func (e *Engine) recycle(ev *event) {
	ev.idx = notQueued
	ev.gen++
	if e.spare == nil {
		e.spare = ev
		return
	}
	e.free = append(e.free, ev)
}

// up moves x from the hole at j toward the root to its place.
func (e *Engine) up(j int, x *event) {
	h := e.heap
	for j > 0 {
		i := (j - 1) / 2
		p := h[i]
		if !x.before(p) {
			break
		}
		h[j] = p
		p.idx = j
		j = i
	}
	h[j] = x
	x.idx = j
}

// down moves x from the hole at i toward the leaves to its place.
func (e *Engine) down(i int, x *event) {
	h := e.heap
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		c := h[l]
		if r := l + 1; r < n && h[r].before(c) {
			l, c = r, h[r]
		}
		if !c.before(x) {
			break
		}
		h[i] = c
		c.idx = i
		i = l
	}
	h[i] = x
	x.idx = i
}
