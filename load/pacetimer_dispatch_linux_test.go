package load

import (
	"context"
	"testing"
	"time"

	"github.com/stormsim/stormsim/topology"
)

// TestDriverDispatchesOnTime checks that the driver hands each request to a
// sender within half a millisecond of its intended time at a low rate, when
// the process is idle between requests: the case where the Go runtime, which
// sleeps in epoll_wait with millisecond granularity, wakes a plain
// time.Timer up to 1 ms late.
//
// The tolerance comes from that failure's statistics, not from tuning: with
// a 1 ms-granular wake-up, a Poisson schedule's lateness is spread evenly
// over [0, 1 ms) (plus any scheduling noise, which only adds), so at least
// half of the requests are later than 500 µs: of n = 1000, a count
// Binomial(1000, ≥ 0.5), mean ≥ 500 and standard deviation ≤ 16. Allowing a
// quarter (250) is more than 15 standard deviations below that, and leaves
// a precise wake-up (tens of µs late) room for a busy machine to delay one
// request in four by half a millisecond.
func TestDriverDispatchesOnTime(t *testing.T) {
	target := rawEcho(t)
	const n = 1000
	arrivals, err := TargetArrivals(topology.ArrivalPoisson, 1000, 0, time.Hour, 7)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), Options{
		Target: target, Arrivals: arrivals, Duration: time.Hour, MaxRequests: n,
		Workers: 16, LateThreshold: 500 * time.Microsecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	lr := res.Summary.Load
	if ok := res.Summary.Requests.Succeeded; ok != n {
		t.Fatalf("%d of %d requests succeeded", ok, n)
	}
	if lr.Late > n/4 {
		t.Errorf("%d of %d requests dispatched more than 500µs after their intended time; want at most %d", lr.Late, n, n/4)
	}
	t.Logf("late (> 500µs): %d of %d; p50 %.3f ms, p99 %.3f ms from the intended send time",
		lr.Late, n, res.Summary.LatencyMs.P50, res.Summary.LatencyMs.P99)
}
