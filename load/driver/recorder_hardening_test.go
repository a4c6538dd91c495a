package driver

import (
	"math"
	"testing"
	"time"

	"github.com/stormsim/stormsim/policies"
)

// TestRecorderMemoryIsBoundedByConcurrency records an hour of one-second
// intervals: per-interval histograms must be folded as completions move
// on, so only a few are alive at once, and every interval must keep its own
// quantiles.
func TestRecorderMemoryIsBoundedByConcurrency(t *testing.T) {
	const n = 3600
	r := newRecorder(0, time.Second, n*time.Second)
	for i := range n {
		// Interval i's completions all took (i%50 + 1) ms.
		lat := time.Duration(i%50+1) * time.Millisecond
		for k := range 10 {
			end := time.Duration(i)*time.Second + time.Duration(k)*50*time.Millisecond + lat
			r.record(end-lat, end, policies.Succeeded, true)
		}
		live := 0
		for _, w := range r.rows {
			if w.lat != nil {
				live++
			}
		}
		if live > 3 {
			t.Fatalf("after interval %d: %d histograms alive", i, live)
		}
	}
	if got := len(r.spare); got > 3 {
		t.Fatalf("%d spare histograms; reuse should keep a handful", got)
	}
	ts := r.series()
	p50, p99 := ts.Values("latency_p50_ms"), ts.Values("latency_p99_ms")
	for i := range n {
		want := float64(i%50 + 1)
		// Two significant digits: quantiles within 1 % of the value.
		if math.Abs(p50[i]-want) > 0.01*want || math.Abs(p99[i]-want) > 0.01*want {
			t.Fatalf("interval %d: p50 %g, p99 %g ms, want %g", i, p50[i], p99[i], want)
		}
	}
}

// TestRecorderLateCompletion checks that a completion recorded after its
// interval was folded is still counted, without disturbing the quantiles.
func TestRecorderLateCompletion(t *testing.T) {
	r := newRecorder(0, time.Second, 10*time.Second)
	r.record(0, 100*time.Millisecond, policies.Succeeded, true)
	r.record(4*time.Second, 4*time.Second+time.Millisecond, policies.Succeeded, true)
	// A goroutine that stalled: its completion at 0.9 s arrives now.
	r.record(800*time.Millisecond, 900*time.Millisecond, policies.Succeeded, true)
	ts := r.series()
	if got := ts.Values("succeeded")[0]; got != 2 {
		t.Fatalf("interval 0 counts %g successes, want 2", got)
	}
	if got := ts.Values("latency_p50_ms")[0]; math.Abs(got-100) > 1 {
		t.Fatalf("interval 0 p50 %g ms, want 100 (the late one is not in it)", got)
	}
	if r.req.Succeeded != 3 {
		t.Fatalf("%d successes in total, want 3", r.req.Succeeded)
	}
}
