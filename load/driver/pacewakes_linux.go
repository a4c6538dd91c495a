package driver

import "time"

// When the pacer's precise wake-up is worth its cost (pacerWakes).
const (
	// pacerLateWake: a wait without it that ends later than this after its
	// instant shows the runtime slept past the timer. Its millisecond
	// sleeps make three waits in four later than this.
	pacerLateWake = 250 * time.Microsecond
	// pacerProbeFirst and pacerProbeMax bound the waits with a precise
	// wake-up between two probes without one.
	pacerProbeFirst = 64
	pacerProbeMax   = 1 << 16
)

// pacerWakes decides which of the pacer's waits arm a precise wake-up (the
// timerfd of pacerTimer). It is needed when the process would otherwise
// sleep through the due time — at low rates, when nothing else wakes it —
// and wasted at high rates, where the answers arriving keep the runtime's
// timers on time. So it is armed for a run of waits, then one wait probes
// without it: on time, the waits go on without it until one is late; late
// (costing that one request up to 1 ms), another run follows, twice as
// long, up to pacerProbeMax waits. A pure state machine: the lateness is
// the caller's measurement.
type pacerWakes struct {
	precise int // waits left to arm it for; 0: the next wait goes without
	run     int // the length of the last run (0: the last probe was on time)
}

// newPacerWakes starts with a run of pacerProbeFirst waits with the
// precise wake-up: nothing is known yet of the waits without it.
func newPacerWakes() pacerWakes {
	return pacerWakes{precise: pacerProbeFirst, run: pacerProbeFirst}
}

// arm reports whether the next wait arms the precise wake-up, and counts it.
func (w *pacerWakes) arm() bool {
	if w.precise == 0 {
		return false
	}
	w.precise--
	return true
}

// woke records how late a wait ended; armed says it armed the wake-up.
func (w *pacerWakes) woke(late time.Duration, armed bool) {
	switch {
	case armed:
		// Nothing learnt about waits without it.
	case late > pacerLateWake:
		w.run = min(max(2*w.run, pacerProbeFirst), pacerProbeMax)
		w.precise = w.run
	default:
		w.run = 0
	}
}
