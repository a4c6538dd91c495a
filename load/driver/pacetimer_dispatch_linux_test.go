package driver

import (
	"context"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stormsim/stormsim/model"
	"github.com/stormsim/stormsim/topology"
)

// TestDriverDispatchesOnTimeReal checks, on real sockets and the wall
// clock, that the driver hands each request to a sender as soon as the
// operating system lets a thread run at the request's time: at a low rate,
// with the process idle between requests, the Go runtime sleeps in
// epoll_wait with millisecond granularity and would wake a plain
// time.Timer up to 1 ms late (pacerTimer exists to prevent it). The logic
// of the schedule — every request dispatched at its instant — is
// TestDriverDispatchesOnTime's, on a scripted clock; this test is about
// the wake-ups alone, so its tolerance comes from what the scheduler
// delivers while it runs.
//
// What the OS can promise is measured, not assumed, over the same second
// as the run: beside the driver, a thread of its own sleeps with
// clock_nanosleep (absolute CLOCK_MONOTONIC times, the kernel's
// high-resolution timers) until each due time of another Poisson schedule
// of the same rate (another seed, so that the two seldom wake at the same
// instant) and hands off to a goroutine, as the driver's scheduler hands
// off to a sender; a wake-up handed off more than 500 µs late is late. Of
// its n = 1000 wake-ups, ref are late so. A precise driver is late about
// as often: ≈ ref. One waking at the runtime's millisecond granularity
// adds to every request that the scheduler would have run on time a delay
// uniform on [0, 1 ms), so at least half of them are late too: ≥ ref +
// (n − ref)/2. Both are binomial counts with standard deviation ≤ √n/2 ≈
// 16. The test allows halfway between, ref + (n − ref)/4: for ref up to
// 0.6 n that is more than 3 standard deviations of their difference (≤ 23)
// from either case. On an idle machine ref is about 0 and the bound n/4;
// under CPU burners the bound follows what the scheduler gives any thread
// at that moment.
func TestDriverDispatchesOnTimeReal(t *testing.T) {
	target := rawEcho(t)
	const n, late = 1000, 500 * time.Microsecond
	arrivals := func(seed uint64) *model.Arrivals {
		a, err := TargetArrivals(topology.ArrivalPoisson, 1000, 0, time.Hour, seed)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	refLate := make(chan int, 1)
	go func() { refLate <- schedulerLate(t, arrivals(8), n, late) }()
	res, err := Run(context.Background(), Options{
		Target: target, Arrivals: arrivals(7), Duration: time.Hour, MaxRequests: n,
		Workers: 16, LateThreshold: late,
	})
	ref := <-refLate
	if err != nil {
		t.Fatal(err)
	}
	lr := res.Summary.Load
	if ok := res.Summary.Requests.Succeeded; ok != n {
		t.Fatalf("%d of %d requests succeeded", ok, n)
	}
	if bound := int64(ref + (n-ref)/4); lr.Late > bound {
		t.Errorf("%d of %d requests dispatched more than %v after their intended time; the scheduler alone made %d of %d wake-ups that late meanwhile, so want at most %d",
			lr.Late, n, late, ref, n, bound)
	}
	t.Logf("late (> %v): driver %d of %d, scheduler %d of %d; p50 %.3f ms, p99 %.3f ms from the intended send time",
		late, lr.Late, n, ref, n, res.Summary.LatencyMs.P50, res.Summary.LatencyMs.P99)
}

// schedulerLate follows the first n due times of arrivals with a thread of
// its own sleeping in clock_nanosleep until each one, handing each wake-up
// to a goroutine over a channel, and returns how many were handed off more
// than late after their due time: the best the operating system (and the
// Go scheduler's hand-off) does for a waiting thread right now.
func schedulerLate(t *testing.T, arrivals *model.Arrivals, n int, late time.Duration) int {
	t.Helper()
	var mono unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &mono); err != nil {
		t.Error(err) // from the measuring goroutine: no Fatal
		return 0
	}
	t0 := time.Now() // after mono: a due time on it is no earlier than on mono
	mono0 := mono.Nano()
	woke := make(chan time.Duration, n)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		defer close(woke)
		for i := range n {
			at, ok := arrivals.At(uint64(i))
			if !ok {
				return
			}
			ts := unix.NsecToTimespec(mono0 + int64(at))
			for unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &ts, nil) == unix.EINTR {
			}
			woke <- at
		}
	}()
	count := 0
	for at := range woke {
		if time.Since(t0)-at > late {
			count++
		}
	}
	return count
}
