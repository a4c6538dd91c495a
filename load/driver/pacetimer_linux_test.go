package driver

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestPacerTimerArmsTimerfd checks the pacer timer's timerfd: after Wait(d)
// it expires no earlier than the Go timer (which
// would wake the runtime too soon, to sleep a whole millisecond more) and at
// most a grain of the grid later; waits due within one grid step arm it
// once.
func TestPacerTimerArmsTimerfd(t *testing.T) {
	pt := newPacerTimer()
	defer pt.close()
	if pt.fd < 0 {
		t.Fatal("no timerfd: the pacer would wake up to 1 ms late when idle")
	}
	pt.wakes.precise = 1 << 30 // every wait arms it
	// A wait shorter than the grid's step arms it (Poisson arrivals at a
	// low rate have such gaps); a run of them, the waits of a rate above
	// 20 000/s, does not.
	if pt.Wait(10 * time.Microsecond); !pt.precise {
		t.Error("a short wait after long ones did not arm the timerfd")
	}
	// The average (1/16 of each new wait) falls from 1 ms below 50 µs
	// within 60 waits of 20 µs: ln(30/980)/ln(15/16) ≈ 54.
	for i := range 300 {
		if pt.Wait(20 * time.Microsecond); pt.precise && i >= 60 {
			t.Fatalf("wait %d of 20µs in a row armed the timerfd", i)
		}
	}
	pt.meanWait = time.Millisecond
	for _, d := range []time.Duration{0, 30 * time.Microsecond, 400 * time.Microsecond, 7 * time.Millisecond, 2 * time.Second} {
		before := time.Now()
		pt.Wait(d)
		var cur unix.ItimerSpec
		if err := unix.TimerfdGettime(pt.fd, &cur); err != nil {
			t.Fatal(err)
		}
		elapsed := time.Since(before) // the Go timer is due at most d after before
		left := time.Duration(cur.Value.Nano())
		// Late by at most a grain, the 1 µs margin and the ≤ 5 µs by which
		// mono0 trails t0.
		if hi := d + pacerWakeGrain + 6*time.Microsecond; left < d-elapsed || left > hi {
			t.Errorf("Wait(%v): the timerfd expires in %v, want in [%v, %v]", d, left, d-elapsed, hi)
		}
	}
	// Waits due within one grid step arm the timerfd once: 200 dues
	// spread over one step, then one in the next step.
	base := (time.Since(pt.t0)/pacerWakeGrain + 100) * pacerWakeGrain // a grid point 5 ms on
	arms, armed := 0, pt.armed
	for i := range 201 {
		due := base + 1 + time.Duration(i)*(pacerWakeGrain-1)/200 // in (base, base+grain]
		if i == 200 {
			due = base + pacerWakeGrain + 1 // the next step
		}
		pt.armAt(due)
		if pt.armed != armed {
			arms, armed = arms+1, pt.armed
		}
	}
	if arms != 2 {
		t.Errorf("200 waits due within one grid step and one in the next armed the timerfd %d times, want 2", arms)
	}
	pt.Stop()
}

// TestPacerWakes drives the choice of waits with a precise wake-up through
// runs of on-time and late waits.
func TestPacerWakes(t *testing.T) {
	const late, onTime = time.Millisecond, 10 * time.Microsecond
	// wakes feeds n waits, each late or on time when it goes without the
	// precise wake-up (those with it are on time), and returns how many
	// armed it.
	wakes := func(w *pacerWakes, n int, withoutIt time.Duration) int {
		armed := 0
		for range n {
			a := w.arm()
			l := withoutIt
			if a {
				armed, l = armed+1, onTime
			}
			w.woke(l, a)
		}
		return armed
	}
	for _, tc := range []struct {
		name      string
		withoutIt time.Duration
		n, armed  int
	}{
		// Starting precise: 64 waits armed, then a probe on time, and
		// none armed since.
		{"on time without it", onTime, 10000, pacerProbeFirst},
		// Probes keep failing: runs of 64, 128, 256, ... armed; of
		// 64+1+128+1+256+1 = 451 waits, 3 probes went without it.
		{"late without it", late, 451, 451 - 3},
		// Runs double up to pacerProbeMax: 11 runs of 64 to 65536 (131008
		// waits) and their 11 probes, then 13 runs of 65536 and their
		// probes (851981 waits), and 17000 waits into the next run.
		{"late for long", late, 1_000_000, 1_000_000 - 24},
	} {
		w := newPacerWakes()
		if got := wakes(&w, tc.n, tc.withoutIt); got != tc.armed {
			t.Errorf("%s: %d of %d waits armed the wake-up, want %d", tc.name, got, tc.n, tc.armed)
		}
	}
	// On time, then late: the first late wait starts a run of 64; a probe on
	// time after it ends the runs.
	w := pacerWakes{}
	if got := wakes(&w, 100, onTime); got != 0 {
		t.Errorf("on time: %d waits armed, want 0", got)
	}
	if got := wakes(&w, 1, late); got != 0 || w.precise != pacerProbeFirst {
		t.Errorf("a late wait: armed %d, next run %d; want 0 and %d", got, w.precise, pacerProbeFirst)
	}
	if got := wakes(&w, pacerProbeFirst+1+100, onTime); got != pacerProbeFirst {
		t.Errorf("on time again: %d armed, want the run of %d and no more", got, pacerProbeFirst)
	}
}
