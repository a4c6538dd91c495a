// Package floor holds the hand-specialized loops the simulator's speed is
// measured against: no engine, no policies, a heap of typed events and a
// FIFO. The M/M/1 loops are written for that one queue (issue 14's
// reference, and with a timer per customer issue 24's); the sim benchmarks
// run them in process (floor-ratio), and mm1floor runs them as a program of
// its own, so that a whole `stormsim run` process can be compared with a
// whole floor process. The chain loops (Chain) are issue 24's ten-hop
// chain, run on one core and split over two.
package floor

import "math/rand/v2"

// Event is the hand-specialized M/M/1 loop's event: an arrival or a
// departure. Heap is a binary min-heap of them by value, written out
// (no container/heap interface boxing), so the floor allocates nothing.
type Event struct {
	at     float64
	arrive bool
}

// Heap is the floors' event queue (a heap of Events); its zero value is
// empty, and a run reuses its storage.
type Heap []Event

func (h *Heap) push(ev Event) {
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

func (h *Heap) pop() Event {
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

// MM1Timeouts is MM1 where each customer's caller also gives up
// after timeout seconds (0: never), as a hand-specialized loop would do it:
// the timers all have one duration, so they expire in arrival order, that of
// the FIFO itself; the next one to fire is the oldest customer's whose timer
// neither fired nor was cancelled by its departure, checked against the
// heap's top before each event. A customer whose timer fired is still served
// (the server does not cancel) but not counted as served. It returns the
// customers served in time, their mean sojourn, and those timed out. Its
// arrival case repeats MM1's on purpose: a helper the compiler does
// not inline would slow the floors, and MM1 is issue 14's reference.
func MM1Timeouts(lambda, mu, d, timeout float64, r *rand.Rand, h *Heap, fifo []float64) (int, float64, int) {
	if timeout <= 0 {
		n, w := MM1(lambda, mu, d, r, h, fifo)
		return n, w, 0
	}
	*h = (*h)[:0]
	fifo = fifo[:0]
	head, armed := 0, 0 // fifo[armed:] have their timers running
	h.push(Event{at: r.ExpFloat64() / lambda, arrive: true})
	served, timedOut, sum, busy := 0, 0, 0.0, false
	for len(*h) > 0 {
		if armed < len(fifo) && fifo[armed]+timeout < (*h)[0].at {
			timedOut++
			armed++
			continue
		}
		ev := h.pop()
		switch {
		case ev.arrive:
			if next := ev.at + r.ExpFloat64()/lambda; next < d {
				h.push(Event{at: next, arrive: true})
			}
			fifo = append(fifo, ev.at)
			if !busy {
				busy = true
				h.push(Event{at: ev.at + r.ExpFloat64()/mu})
			}
		default:
			if head < armed { // its timer fired: the caller has gone
			} else {
				sum += ev.at - fifo[head]
				served++
				armed = head + 1 // cancel its timer
			}
			head++
			if head == len(fifo) {
				fifo, head, armed = fifo[:0], 0, 0
			}
			if head < len(fifo) {
				h.push(Event{at: ev.at + r.ExpFloat64()/mu})
			} else {
				busy = false
			}
		}
	}
	return served, sum / float64(served), timedOut
}

// MM1 simulates an M/M/1 queue for d seconds with no engine and no
// policies — a heap of typed events and a switch — and returns the number
// of customers served and their mean sojourn time.
func MM1(lambda, mu, d float64, r *rand.Rand, h *Heap, fifo []float64) (int, float64) {
	*h = (*h)[:0]
	fifo = fifo[:0]
	head := 0
	h.push(Event{at: r.ExpFloat64() / lambda, arrive: true})
	served, sum, busy := 0, 0.0, false
	for len(*h) > 0 {
		ev := h.pop()
		switch {
		case ev.arrive:
			if next := ev.at + r.ExpFloat64()/lambda; next < d {
				h.push(Event{at: next, arrive: true})
			}
			fifo = append(fifo, ev.at)
			if !busy {
				busy = true
				h.push(Event{at: ev.at + r.ExpFloat64()/mu})
			}
		default:
			sum += ev.at - fifo[head]
			head++
			if head == len(fifo) {
				fifo, head = fifo[:0], 0
			}
			served++
			if head < len(fifo) {
				h.push(Event{at: ev.at + r.ExpFloat64()/mu})
			} else {
				busy = false
			}
		}
	}
	return served, sum / float64(served)
}
