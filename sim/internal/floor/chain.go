package floor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
)

// Chain describes the hand-specialized loop of a synchronous call chain,
// client → s1 → … → sH: Poisson arrivals; at each hop an exponential
// network delay to the service, an exponential service time, then the call
// to the next hop, and an exponential delay for each reply; every caller
// arms a per-attempt timer when it calls and cancels it on the reply.
// Services have as many workers as they need (the ten-hop benchmark's 512
// are never all busy), and nothing fails, so nothing is retried.
//
// It is the floor of BenchmarkTenHopChain, and the measure of what a
// second core could give a simulation that a conservative parallel run
// keeps exactly: ChainParallel runs hops 1..H/2 and H/2+1..H on two
// goroutines and gives the same results, bit for bit, as ChainSequential.
// For that, the random values of a request's half of the chain are drawn
// when it enters the half (from the half's own stream), so each half
// knows, as soon as a request enters it, when that request will cross to
// the other half: that is the lookahead a conservative run needs, and
// what the simulator's streams, drawn at each event, do not give.
type Chain struct {
	Hops     int
	Rate     float64 // requests per second
	Net      float64 // mean network delay each way, seconds
	Service  float64 // mean service time, seconds
	Timeout  float64 // per-attempt timeout, seconds
	Duration float64 // arrivals stop after this, seconds
	Seed     uint64
}

// ChainResult is what a chain run counts.
type ChainResult struct {
	Requests int     // requests answered in time
	TimedOut int     // requests one of whose calls answered after its timeout
	Latency  float64 // sum of the answered requests' latencies, seconds
	Events   int     // events run, both halves together
}

// chainReq is a request's record: its start and, per hop (1-based), the
// values drawn for it and its call's timer.
type chainReq struct {
	start float64
	late  bool
	hop   []chainHop
}

// chainHop is a request's part at one hop, a cache line of its own: the
// halves write their hops' parts from two cores.
type chainHop struct {
	svc      float64 // service time at the hop
	down     float64 // network delay from the caller to the hop
	up       float64 // network delay of the hop's reply
	sentAt   float64 // when the call to the hop was sent (its timer's start)
	answered bool    // the hop's reply came (its timer is cancelled)
	_        [31]byte
}

// chainEvent is an event of the chain: a request arriving at hop k's
// service, its service there ending, or hop k's reply reaching its caller.
type chainEvent struct {
	at   float64
	kind uint8
	hop  int32
	req  *chainReq
}

const (
	evArrive uint8 = iota
	evDone
	evReply
	evNewRequest
)

// chainHeap is a binary min-heap of chainEvents by time, written out as
// Heap is for its Events: a generic heap would reach the times through a
// method call per comparison, which the floors cannot afford.
type chainHeap []chainEvent

func (h *chainHeap) push(ev chainEvent) {
	*h = append(*h, ev)
	a := *h
	for j := len(a) - 1; j > 0; {
		i := (j - 1) / 2
		if a[i].at <= a[j].at {
			break
		}
		a[i], a[j] = a[j], a[i]
		j = i
	}
}

func (h *chainHeap) pop() chainEvent {
	a := *h
	top := a[0]
	n := len(a) - 1
	a[0] = a[n]
	a = a[:n]
	for i := 0; ; {
		l := 2*i + 1
		if l >= n {
			break
		}
		j := l
		if r := l + 1; r < n && a[r].at < a[l].at {
			j = r
		}
		if a[i].at <= a[j].at {
			break
		}
		a[i], a[j] = a[j], a[i]
		i = j
	}
	*h = a
	return top
}

// floatHeap is a binary min-heap of times: a half's known crossings.
type floatHeap []float64

func (h *floatHeap) push(x float64) {
	*h = append(*h, x)
	a := *h
	for j := len(a) - 1; j > 0; {
		i := (j - 1) / 2
		if a[i] <= a[j] {
			break
		}
		a[i], a[j] = a[j], a[i]
		j = i
	}
}

// remove takes x, which the heap holds, out of it.
func (h *floatHeap) remove(x float64) {
	a := *h
	i := 0
	for i < len(a) && a[i] != x {
		i++
	}
	if i == len(a) {
		panic(fmt.Sprintf("floor: crossing %v not among %v", x, a))
	}
	n := len(a) - 1
	a[i] = a[n]
	a = a[:n]
	*h = a
	if i == n {
		return
	}
	// x's place may hold a smaller or larger value than its neighbours.
	for j := i; j > 0; {
		p := (j - 1) / 2
		if a[p] <= a[j] {
			break
		}
		a[p], a[j] = a[j], a[p]
		j = p
	}
	for j := i; ; {
		l := 2*j + 1
		if l >= n {
			break
		}
		c := l
		if r := l + 1; r < n && a[r] < a[l] {
			c = r
		}
		if a[j] <= a[c] {
			break
		}
		a[j], a[c] = a[c], a[j]
		j = c
	}
}

// mailbox is a single-producer single-consumer queue of events between the
// halves. promise is the sender's bound: it will send no event earlier.
type mailbox struct {
	buf     [1 << 12]chainEvent
	_       [64]byte
	tail    atomic.Uint64 // written by the sender
	_       [56]byte
	head    atomic.Uint64 // written by the receiver
	_       [56]byte
	promise atomic.Uint64 // math.Float64bits of the sender's bound
	_       [56]byte
}

func (m *mailbox) send(ev chainEvent) {
	t := m.tail.Load()
	for t-m.head.Load() == uint64(len(m.buf)) {
		runtime.Gosched() // full: the receiver is behind
	}
	m.buf[t&uint64(len(m.buf)-1)] = ev
	m.tail.Store(t + 1)
}

func (m *mailbox) setPromise(x float64) { m.promise.Store(math.Float64bits(x)) }
func (m *mailbox) bound() float64       { return math.Float64frombits(m.promise.Load()) }

// half runs hops lo..hi of the chain. The first half also runs the
// arrivals and ends the requests; out (nil when one half runs the whole
// chain) carries events to the other half, in its events to this one.
type half struct {
	c      *Chain
	lo, hi int
	// first draws hops 1..H/2 when a request is created, second hops
	// H/2+1..H when it reaches hop H/2+1: the halves' own streams. A half
	// that runs both has both.
	first, second *drawer
	arr           *rand.Rand // arrivals (first half only)
	heap          chainHeap
	timers        [][]*chainReq // per edge: calls in the order they were sent
	thead         []int
	// cross holds the times at which requests now in this half will send
	// an event to the other half (promise adds the bounds for requests
	// not yet in it).
	cross       floatHeap
	entering    floatHeap // second half: arrivals at hop lo taken from the mail, not yet run
	in, out     *mailbox
	inHead      uint64
	res         ChainResult
	pool        []*chainReq
	inFlight    int     // first half: requests started and not ended
	arriving    bool    // first half: arrivals are not over
	nextArrival float64 // first half: the next request's creation
	limit       float64 // the other half's promise, as last read
}

func newHalf(c *Chain, lo, hi int) *half {
	h := &half{c: c, lo: lo, hi: hi,
		timers: make([][]*chainReq, c.Hops+2), thead: make([]int, c.Hops+2)}
	m := c.Hops / 2
	if lo == 1 {
		h.arr = rand.New(rand.NewPCG(c.Seed, 0))
		h.first = &drawer{c: c, lo: 1, hi: m, rnd: rand.New(rand.NewPCG(c.Seed, 1))}
	}
	if hi == c.Hops {
		h.second = &drawer{c: c, lo: m + 1, hi: c.Hops, rnd: rand.New(rand.NewPCG(c.Seed, 2))}
	}
	return h
}

// drawer draws the values of hops lo..hi of a request.
type drawer struct {
	c      *Chain
	lo, hi int
	rnd    *rand.Rand
}

// enter draws the values of req's path through hops lo..hi and returns
// when it will leave them: for the first half, the arrival of its call at
// hop hi+1; for the second, the arrival of hop lo's reply at hop lo-1. t
// is when req enters: its creation, or its arrival at hop lo.
func (d *drawer) enter(req *chainReq, t float64) float64 {
	c := d.c
	for k := d.lo; k <= d.hi; k++ {
		if k > d.lo || d.lo == 1 {
			req.hop[k].down = d.rnd.ExpFloat64() * c.Net
		}
		req.hop[k].svc = d.rnd.ExpFloat64() * c.Service
		req.hop[k].up = d.rnd.ExpFloat64() * c.Net
	}
	if d.hi < c.Hops {
		req.hop[d.hi+1].down = d.rnd.ExpFloat64() * c.Net
	}
	// When the request leaves, with services that never queue.
	if d.lo == 1 {
		x := t
		for k := 1; k <= d.hi; k++ {
			x += req.hop[k].down // summed as the events sum them
			x += req.hop[k].svc
		}
		return x + req.hop[d.hi+1].down
	}
	x := t
	for k := d.lo; k <= d.hi; k++ {
		x += req.hop[k].svc
		if k < d.hi {
			x += req.hop[k+1].down
		}
	}
	for k := d.hi; k >= d.lo; k-- {
		x += req.hop[k].up
	}
	return x
}

func (h *half) newReq() *chainReq {
	if n := len(h.pool); n > 0 {
		r := h.pool[n-1]
		h.pool = h.pool[:n-1]
		return r
	}
	return &chainReq{hop: make([]chainHop, h.c.Hops+2)}
}

// call sends req's call to hop k at t: the caller's timer starts.
func (h *half) call(req *chainReq, k int, t float64) {
	req.hop[k].sentAt = t
	req.hop[k].answered = false
	h.timers[k] = append(h.timers[k], req)
	at := t + req.hop[k].down
	if k > h.hi { // to the other half
		h.cross.remove(at)
		h.out.send(chainEvent{at: at, kind: evArrive, hop: int32(k), req: req})
		h.out.setPromise(h.promise())
		return
	}
	h.heap.push(chainEvent{at: at, kind: evArrive, hop: int32(k), req: req})
}

// answer takes hop k's reply to req at t: the caller's timer stops.
func (h *half) answer(req *chainReq, k int, t float64) {
	if t-req.hop[k].sentAt > h.c.Timeout {
		req.late = true // its timer would have fired first
	}
	req.hop[k].answered = true
	// Cancelled timers leave their edge's FIFO once they reach its head.
	q, i := h.timers[k], h.thead[k]
	for i < len(q) && q[i].hop[k].answered {
		i++
	}
	if i == len(q) {
		h.timers[k], i = q[:0], 0
	}
	h.thead[k] = i
}

// step runs ev.
func (h *half) step(ev chainEvent) {
	c, req, k := h.c, ev.req, int(ev.hop)
	h.res.Events++
	switch ev.kind {
	case evNewRequest:
		if next := ev.at + h.arr.ExpFloat64()/c.Rate; next < c.Duration {
			h.heap.push(chainEvent{at: next, kind: evNewRequest})
			h.nextArrival = next
		} else {
			h.arriving = false
		}
		req = h.newReq()
		req.start, req.late = ev.at, false
		h.inFlight++
		if x := h.first.enter(req, ev.at); h.hi < c.Hops {
			h.cross.push(x)
		}
		h.call(req, 1, ev.at)
	case evArrive:
		if h.second != nil && k == h.second.lo {
			if x := h.second.enter(req, ev.at); h.lo > 1 {
				h.cross.push(x)
				h.entering.remove(ev.at) // the earliest: events run in time order
			}
		}
		h.heap.push(chainEvent{at: ev.at + req.hop[k].svc, kind: evDone, hop: int32(k), req: req})
	case evDone:
		if k < c.Hops {
			h.call(req, k+1, ev.at)
			return
		}
		h.reply(req, k, ev.at)
	case evReply:
		h.answer(req, k, ev.at)
		if k > 1 {
			h.reply(req, k-1, ev.at)
			return
		}
		if req.late {
			h.res.TimedOut++
		} else {
			h.res.Requests++
			h.res.Latency += ev.at - req.start
		}
		h.inFlight--
		h.pool = append(h.pool, req)
	}
}

// reply sends hop k's reply to req, from t, to its caller.
func (h *half) reply(req *chainReq, k int, t float64) {
	at := t + req.hop[k].up
	if k == h.lo && h.lo > 1 { // to the other half
		h.cross.remove(at)
		h.out.send(chainEvent{at: at, kind: evReply, hop: int32(k), req: req})
		h.out.setPromise(h.promise())
		return
	}
	h.heap.push(chainEvent{at: at, kind: evReply, hop: int32(k), req: req})
}

// ChainSequential runs the whole chain on one goroutine.
func ChainSequential(c Chain) ChainResult {
	h := newHalf(&c, 1, c.Hops)
	h.start()
	for len(h.heap) > 0 {
		h.step(h.heap.pop())
	}
	return h.res
}

// start schedules the first request.
func (h *half) start() {
	h.arriving = true
	h.nextArrival = h.arr.ExpFloat64() / h.c.Rate
	h.heap.push(chainEvent{at: h.nextArrival, kind: evNewRequest})
}

// ChainParallel runs hops 1..H/2 and H/2+1..H on two goroutines, each
// running its events up to the other's promise (conservative
// synchronization), and returns what ChainSequential returns.
func ChainParallel(c Chain) ChainResult {
	m := c.Hops / 2
	a := newHalf(&c, 1, m)
	b := newHalf(&c, m+1, c.Hops)
	ab, ba := new(mailbox), new(mailbox)
	a.out, b.in = ab, ab
	b.out, a.in = ba, ba
	a.start()
	ab.setPromise(a.nextArrival)
	ba.setPromise(a.nextArrival)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); a.run() }()
	go func() { defer wg.Done(); b.run() }()
	wg.Wait()
	a.res.Events += b.res.Events
	return a.res
}

// run runs this half's events until the chain is done: each event no
// later than the other half's promise, after taking in what it has sent.
// It publishes its own promise before each batch and after each event
// sent to the other half, so that the halves run at the same time.
func (h *half) run() {
	inf := math.Inf(1)
	for {
		h.limit = h.in.bound() // before the mail: all mail below it is in
		for t := h.in.tail.Load(); h.inHead < t; h.inHead++ {
			ev := h.in.buf[h.inHead&uint64(len(h.in.buf)-1)]
			if ev.kind == evArrive {
				h.entering.push(ev.at)
			}
			h.heap.push(ev)
		}
		h.in.head.Store(h.inHead)
		h.out.setPromise(h.promise())
		ran := false
		// At the promise itself too: the other half sends nothing earlier,
		// and two events at one instant happen with probability zero.
		for len(h.heap) > 0 && h.heap[0].at <= h.limit {
			h.step(h.heap.pop())
			ran = true
		}
		if h.lo == 1 && !h.arriving && h.inFlight == 0 && len(h.heap) == 0 ||
			h.lo > 1 && h.limit == inf && len(h.heap) == 0 && h.inHead == h.in.tail.Load() {
			h.out.setPromise(inf)
			return
		}
		h.out.setPromise(h.promise())
		if !ran {
			runtime.Gosched() // nothing to run until the other half moves
		}
	}
}

// promise bounds the times of the events this half will send: its next
// known crossing, and the first half's next arrival (a request not yet
// created crosses later) or, for the second half, the earliest request
// sent to it and not yet entered, and the first half's promise (a request
// not yet sent to it crosses back later).
func (h *half) promise() float64 {
	p := math.Inf(1)
	if len(h.cross) > 0 {
		p = h.cross[0]
	}
	if h.lo == 1 {
		if h.arriving {
			p = min(p, h.nextArrival)
		}
		return p
	}
	if len(h.entering) > 0 {
		p = min(p, h.entering[0])
	}
	return min(p, h.limit)
}
