package load

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
// When the process is busy, the runtime checks its timers between
// goroutines and the timerfd is redundant.
//
// Arming a timerfd is a costly system call on a virtual machine (it
// reprograms the CPU's timer), so the timerfd expires at the first point
// of a pacerWakeGrain grid at or after the timer, and is armed only when
// that point changes: at most once per grain, however high the rate.
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
}

func newPacerTimer() *pacerTimer {
	t := &pacerTimer{Timer: time.NewTimer(time.Hour), fd: -1}
	t.Timer.Stop()
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return t // no timerfd (a sandbox): millisecond wake-ups when idle
	}
	t.t0 = time.Now()
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) != nil {
		unix.Close(fd)
		return t
	}
	t.mono0 = ts.Nano()
	// A non-blocking descriptor given to os.NewFile is added to the
	// runtime's poller, which is what wakes epoll_wait.
	t.fd, t.f = fd, os.NewFile(uintptr(fd), "pacer-timerfd")
	return t
}

// Reset makes the timer fire after d.
func (t *pacerTimer) Reset(d time.Duration) {
	t.Timer.Reset(d)
	if t.fd < 0 {
		return
	}
	// The grid point at or after the timer's instant (1 µs past it, for
	// the rounding of the two clocks' readings).
	due := time.Since(t.t0) + max(d, 0) + time.Microsecond
	point := int64((due + pacerWakeGrain - 1) / pacerWakeGrain)
	if point == t.armed {
		return // armed for this point already
	}
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(t.mono0 + point*int64(pacerWakeGrain))}
	if unix.TimerfdSettime(t.fd, unix.TFD_TIMER_ABSTIME, &spec, nil) != nil {
		t.close() // cannot arm it: time.Timer's precision from now on
		return
	}
	t.armed = point
}

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
