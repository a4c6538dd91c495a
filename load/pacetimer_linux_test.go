package load

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestPacerTimerArmsTimerfd checks the pacer timer's timerfd: after Reset(d)
// it expires no earlier than the Go timer (which would wake the runtime too
// soon, to sleep a whole millisecond more) and at most a grain of the grid
// later; Resets due within one grid step arm it once.
func TestPacerTimerArmsTimerfd(t *testing.T) {
	pt := newPacerTimer()
	defer pt.close()
	if pt.fd < 0 {
		t.Fatal("no timerfd: the pacer would wake up to 1 ms late when idle")
	}
	for _, d := range []time.Duration{0, 30 * time.Microsecond, 400 * time.Microsecond, 7 * time.Millisecond, 2 * time.Second} {
		before := time.Now()
		pt.Reset(d)
		var cur unix.ItimerSpec
		if err := unix.TimerfdGettime(pt.fd, &cur); err != nil {
			t.Fatal(err)
		}
		elapsed := time.Since(before) // the Go timer is due at most d after before
		left := time.Duration(cur.Value.Nano())
		if left < d-elapsed || left > d+pacerWakeGrain+time.Microsecond {
			t.Errorf("Reset(%v): the timerfd expires in %v, want in [%v, %v]", d, left, d-elapsed, d+pacerWakeGrain+time.Microsecond)
		}
	}
	// Resets due at one instant (give or take the microseconds between
	// clock readings) arm the timerfd once, or twice if those microseconds
	// straddle a grid point; never once per Reset.
	target := time.Since(pt.t0) + 5*time.Millisecond
	arms, armed := 0, pt.armed
	for range 200 {
		pt.Reset(target - time.Since(pt.t0))
		if pt.armed != armed {
			arms, armed = arms+1, pt.armed
		}
	}
	if arms > 2 {
		t.Errorf("200 Resets due at one instant armed the timerfd %d times, want at most 2", arms)
	}
	pt.Stop()
}
