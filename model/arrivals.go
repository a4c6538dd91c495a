package model

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/stormsim/stormsim/topology"
)

// Arrivals is the open-loop arrival process of a workload, the one both
// modes use: the simulator schedules its logical requests with it, and the
// load driver sends them at the same intended times. It draws from one
// stream ("arrivals"), in one order: arrival n's time, then whether it is a
// write (always drawn, so write_fraction does not shift the other draws).
//
// A rate step restarts the process at the step: exact for Poisson
// (memoryless), a phase reset for constant arrivals, whose n-th arrival
// after a step at s falls at s + n/rate (no rounding drift). Times are
// rounded to the nanosecond.
//
// Arrivals is sequential: request n is known once n-1 is. At and Write
// give the n-th request for drivers that index them (n must not go back).
// Not safe for concurrent use.
type Arrivals struct {
	w        *topology.Workload
	duration time.Duration
	r        *rand.Rand
	constant bool

	phase  time.Duration // constant arrivals: start of the current phase
	phaseN int64         // arrivals since it
	// the schedule segment [segFrom, segUntil) at segRate, cached by rateAt
	segOK             bool
	segFrom, segUntil time.Duration
	segRate           float64

	// poisson: a Poisson process at one rate with no schedule, whose next
	// arrival Next draws without the general search (rate, writes: the
	// workload's rate and write fraction)
	poisson     bool
	rate, wfrac float64

	n       uint64 // index of the current request, valid when has
	at      time.Duration
	write   bool
	has     bool
	started bool
	done    bool
}

// NewArrivals returns the arrivals of workload w (poisson or constant)
// over [0, duration), drawing from r.
func NewArrivals(w *topology.Workload, duration time.Duration, r *rand.Rand) *Arrivals {
	a := &Arrivals{w: w, duration: duration, r: r, constant: w.Arrival == "constant"}
	a.poisson = !a.constant && len(w.Schedule) == 0 && w.Rate > 0
	a.rate, a.wfrac = w.Rate, w.WriteFraction
	return a
}

// Next returns the next request's arrival time and whether it is a write;
// ok is false once the process has no more requests before the duration.
//
// The search for the next arrival is written out here rather than in a
// helper: Next runs once per request, and one call is cheaper than two.
func (a *Arrivals) Next() (at time.Duration, write, ok bool) {
	if a.done {
		return 0, false, false
	}
	if a.poisson {
		// The loop below for a single segment: the same draws, in the
		// same order, with the same arithmetic.
		if a.at >= a.duration {
			a.done = true
			return 0, false, false
		}
		x := a.r.ExpFloat64() * float64(time.Second) / a.rate
		if !(x < float64(a.duration-a.at)) { // also a gap past any Duration (a tiny rate)
			a.done = true
			return 0, false, false
		}
		at = a.at + roundNs(x)
		if at >= a.duration {
			a.done = true
			return 0, false, false
		}
		write = a.r.Float64() < a.wfrac
		if a.has {
			a.n++
		}
		a.at, a.write, a.has = at, write, true
		return at, write, true
	}
	// The first arrival after t (at t itself for a constant process's
	// first arrival, or the first after a rate step).
	t, first := a.at, !a.started
	a.started = true
	for {
		if t >= a.duration {
			a.done = true
			return 0, false, false
		}
		rate, until := a.rateAt(t)
		if !(rate > 0) {
			t, first = until, true
			continue
		}
		// base + x is the arrival, x in ns; an x at or past until − base
		// is past the segment, however far (a tiny rate's x overflows a
		// Duration, so it is compared before the conversion).
		var base time.Duration
		var x float64
		switch {
		case a.constant && first:
			a.phase, a.phaseN, base = t, 0, t
		case a.constant:
			a.phaseN++
			base, x = a.phase, float64(a.phaseN)*float64(time.Second)/rate
		default:
			base, x = t, a.r.ExpFloat64()*float64(time.Second)/rate
		}
		if x < float64(until-base) {
			if at = base + roundNs(x); at < until {
				break
			}
		}
		t, first = until, true
	}
	write = a.r.Float64() < a.w.WriteFraction
	if a.has {
		a.n++
	}
	a.at, a.write, a.has = at, write, true
	return at, write, true
}

// At returns request n's arrival time, drawing the requests up to it.
// n must not go back (it may repeat the last n).
func (a *Arrivals) At(n uint64) (time.Duration, bool) {
	if a.has && n < a.n {
		panic("model: Arrivals.At going back")
	}
	for !a.has || a.n < n {
		if _, _, ok := a.Next(); !ok {
			return 0, false
		}
	}
	return a.at, true
}

// Write reports whether request n, the last At asked for, is a write.
func (a *Arrivals) Write(n uint64) bool { return a.has && a.n == n && a.write }

// rateAt returns the offered rate at t and when it next changes. The
// schedule segment found last is kept, since arrivals ask about the same one
// over and over.
func (a *Arrivals) rateAt(t time.Duration) (rate float64, until time.Duration) {
	if a.segOK && t >= a.segFrom && t < a.segUntil {
		return a.segRate, a.segUntil
	}
	rate, until = a.w.Rate, a.duration
	from := time.Duration(0)
	for _, s := range a.w.Schedule {
		if s.At <= t {
			rate, from = s.Rate, s.At
		} else if s.At < until {
			until = s.At
			break
		}
	}
	a.segOK, a.segFrom, a.segUntil, a.segRate = true, from, until, rate
	return rate, until
}

// roundNs is time.Duration(math.Round(x)) for a time x in ns, without
// math.Round's bit manipulation on the path every arrival takes. For x in
// [0.5, 2^52), x+0.5 is exact (x's ulp is at most 0.5 and the sum stays in
// x's binade when it is below the next integer), so truncating it rounds
// half away from zero as math.Round does; other x go to math.Round.
func roundNs(x float64) time.Duration {
	if x >= 0.5 && x < 1<<52 {
		return time.Duration(x + 0.5)
	}
	return time.Duration(math.Round(x))
}

// ArrivalsFor returns the arrivals of workload w over duration in a run of
// seed: NewArrivals on the stream the simulator derives for them, so that
// every driver of the workload — the simulator, a scenario run through
// serve, load --target — offers the same requests at the same times, the
// same ones writes.
func ArrivalsFor(w *topology.Workload, duration time.Duration, seed uint64) *Arrivals {
	return NewArrivals(w, duration, Stream(seed, ArrivalsStream))
}
