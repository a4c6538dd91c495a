package load

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

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
// It costs one timerfd_settime per wait. When the process is busy the
// runtime checks its timers between goroutines and the timerfd is
// redundant.
type pacerTimer struct {
	*time.Timer
	fd int      // the timerfd, or -1 (time.Timer's precision alone)
	f  *os.File // holds fd registered with the runtime's poller
}

func newPacerTimer() *pacerTimer {
	t := &pacerTimer{Timer: time.NewTimer(time.Hour), fd: -1}
	t.Timer.Stop()
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return t // no timerfd (a sandbox): millisecond wake-ups when idle
	}
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
	// Armed after the Go timer, relative to a later now: the poller wakes
	// no earlier than the Go timer is due. A zero value would disarm.
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(max(int64(d), 1))}
	if unix.TimerfdSettime(t.fd, 0, &spec, nil) != nil {
		t.close() // cannot arm it: time.Timer's precision from now on
	}
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
