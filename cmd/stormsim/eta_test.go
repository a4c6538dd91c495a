package main

import (
	"testing"
	"time"
)

// TestETA: the estimate follows the recent rate, so a run that slows
// down (a storm makes each simulated second cost more) is not promised an
// end at its early pace; before any progress there is no estimate.
func TestETA(t *testing.T) {
	t0 := time.Unix(0, 0)
	var e eta
	if got := e.estimate(t0, 0, 100); got != "-" {
		t.Errorf("no progress yet: %q, want -", got)
	}
	// 1 unit/s for 20 s, then 0.5 units/s for 20 s: 30 done, 70 left.
	for s := 0; s <= 20; s++ {
		e.estimate(t0.Add(time.Duration(s)*time.Second), int64(s), 100)
	}
	if got := e.estimate(t0.Add(20*time.Second), 20, 100); got != "1m20s" {
		t.Errorf("at 1/s with 80 left: ETA %q, want 1m20s", got)
	}
	var got string
	for s := 1; s <= 20; s++ {
		got = e.estimate(t0.Add(time.Duration(20+s)*time.Second), 20+int64(s)/2, 100)
	}
	// The window holds the last 10 s: 5 units, so 0.5/s and 70 left.
	if got != "2m20s" {
		t.Errorf("slowed to 0.5/s with 70 left: ETA %q, want 2m20s (the average since the start would say 1m33s)", got)
	}
	if got := e.estimate(t0.Add(50*time.Second), 100, 100); got != "0s" {
		t.Errorf("done: %q, want 0s", got)
	}
}
