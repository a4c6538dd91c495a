package driver

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// pacerWakeGrain is how much later than its timer an idle process may wake:
// the pacer's timerfd expires on a grid of this step, so that the requests
// due within one step share one arming of it.
const pacerWakeGrain = 50 * time.Microsecond

// pacerTimer is the schedule's timer: a time.Timer whose expiry the Go
// runtime notices on time even when the process has nothing else to do.
//
// An idle Go process sleeps in epoll_wait, whose timeout is in whole
// milliseconds, so a plain timer due in 0.3 ms fires after 1 ms: at a low
// rate, every request would be dispatched up to 1 ms late (and that
// lateness, charged to the request, dominated the driver's p99). Armed
// beside the timer, a timerfd — registered with the runtime's poller,
// never read — makes epoll_wait return at the timer's instant, with the
// kernel's high-resolution timers; the runtime then runs the due timer.
//
// Arming a timerfd is a costly system call on a virtual machine (it
// reprograms the CPU's timer, and its expiry interrupts), so it is armed
// only while it is needed (pacerWakes: at high rates the answers arriving
// keep the runtime awake and its timers on time), and then on a grid of
// pacerWakeGrain: the requests due within one step share one arming.
type pacerTimer struct {
	*time.Timer
	fd int      // the timerfd, or -1 (time.Timer's precision alone)
	f  *os.File // holds fd registered with the runtime's poller
	// t0 and mono0 are one instant as a time.Time and as CLOCK_MONOTONIC
	// nanoseconds (the timerfd's clock), mono0 read second so that
	// expiries computed from it err late, never before the Go timer.
	t0    time.Time
	mono0 int64
	armed int64 // the grid point the timerfd is armed for (0: none)
	wakes pacerWakes
	// precise says the current wait armed the timerfd.
	precise bool
	// meanWait is a moving average of the waits (over about 16).
	meanWait time.Duration
}

// newPacerTimer returns a stopped pacer timer; close releases it.
func newPacerTimer() *pacerTimer {
	t := &pacerTimer{Timer: time.NewTimer(time.Hour), fd: -1, wakes: newPacerWakes(), meanWait: time.Millisecond}
	t.Timer.Stop()
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return t // no timerfd (a sandbox): millisecond wake-ups when idle
	}
	// t0 between two readings of CLOCK_MONOTONIC a few µs apart: mono0,
	// the second, is at most that much after t0.
	for try := 0; try < 10; try++ {
		var m1, m2 unix.Timespec
		if unix.ClockGettime(unix.CLOCK_MONOTONIC, &m1) != nil {
			unix.Close(fd)
			return t
		}
		t.t0 = time.Now()
		unix.ClockGettime(unix.CLOCK_MONOTONIC, &m2)
		if t.mono0 = m2.Nano(); t.mono0-m1.Nano() < int64(5*time.Microsecond) {
			break
		}
	}
	// A non-blocking descriptor given to os.NewFile is added to the
	// runtime's poller, which is what wakes epoll_wait.
	t.fd, t.f = fd, os.NewFile(uintptr(fd), "pacer-timerfd")
	return t
}

// Wait makes the timer fire after d, a wait for the next request, whose
// lateness the caller reports with Woke. (Other waits use Timer.Reset.)
func (t *pacerTimer) Wait(d time.Duration) {
	t.Timer.Reset(d)
	// Waits shorter than the grid's step on average are those of a rate
	// above 20 000/s, whose answers keep the runtime awake: the average,
	// not this wait, so that the short gaps of Poisson arrivals at a low
	// rate still wake on time.
	t.meanWait += (d - t.meanWait) / 16
	t.precise = t.fd >= 0 && t.meanWait >= pacerWakeGrain && t.wakes.arm()
	if !t.precise {
		return
	}
	// 1 µs past the timer's instant, for the rounding of the two clocks'
	// readings.
	t.armAt(time.Since(t.t0) + max(d, 0) + time.Microsecond)
}

// armAt arms the timerfd for the grid point at or after due (since t0),
// unless it is armed for that point already.
func (t *pacerTimer) armAt(due time.Duration) {
	point := int64((due + pacerWakeGrain - 1) / pacerWakeGrain)
	if point == t.armed {
		return
	}
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(t.mono0 + point*int64(pacerWakeGrain))}
	if unix.TimerfdSettime(t.fd, unix.TFD_TIMER_ABSTIME, &spec, nil) != nil {
		t.close() // cannot arm it: time.Timer's precision from now on
		return
	}
	t.armed = point
}

// Woke reports that the wait started by Wait ended late after its instant.
func (t *pacerTimer) Woke(late time.Duration) { t.wakes.woke(late, t.precise) }

// Stop stops the Go timer. The timerfd stays armed: its expiry only
// wakes the poller once for nothing, which costs less than a system call
// to disarm it on every stop.
func (t *pacerTimer) Stop() bool { return t.Timer.Stop() }

// close releases the timerfd.
func (t *pacerTimer) close() {
	t.Timer.Stop()
	if t.f != nil {
		t.f.Close()
		t.f, t.fd = nil, -1
	}
}
