package live

import (
	"context"
	"math"
	"testing"
	"time"
)

func TestParseSpeed(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
		bad  bool
	}{
		{in: "10x", want: 10},
		{in: "10", want: 10},
		{in: "0.5x", want: 0.5},
		{in: " 2x ", want: 2},
		{in: "0x", bad: true},
		{in: "-3x", bad: true},
		{in: "x", bad: true},
		{in: "fast", bad: true},
		{in: "NaNx", bad: true},
		{in: "Infx", bad: true},
	} {
		got, err := ParseSpeed(tc.in)
		if tc.bad != (err != nil) || got != tc.want {
			t.Errorf("ParseSpeed(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.bad)
		}
	}
}

// A time script: at 10x, simulated second s is due at wall time s/10
// after the first Wait; Wait sleeps only for what is left.
func TestPacerScript(t *testing.T) {
	wall := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var slept []time.Duration
	p := &Pacer{Speed: 10,
		now: func() time.Time { return wall },
		sleep: func(_ context.Context, d time.Duration) {
			slept = append(slept, d)
			wall = wall.Add(d)
		}}
	ctx := context.Background()
	p.Wait(ctx, time.Second) // starts the clock: sim 1 s is now
	wall = wall.Add(30 * time.Millisecond)
	p.Wait(ctx, 2*time.Second) // due 100 ms after the start: 70 ms left
	wall = wall.Add(250 * time.Millisecond)
	p.Wait(ctx, 3*time.Second) // due at 200 ms, now 350 ms: late, no sleep
	p.Wait(ctx, 5*time.Second) // due at 400 ms: 50 ms left
	want := []time.Duration{70 * time.Millisecond, 50 * time.Millisecond}
	if len(slept) != len(want) || slept[0] != want[0] || slept[1] != want[1] {
		t.Errorf("slept %v, want %v", slept, want)
	}
	var off *Pacer
	off.Wait(ctx, time.Hour) // nil: no pacing, no panic
	(&Pacer{}).Wait(ctx, time.Hour)
}

// Wait returns when its context is done.
func TestPacerCancelled(t *testing.T) {
	p := &Pacer{Speed: 1e-6}
	ctx, cancel := context.WithCancel(context.Background())
	p.Wait(ctx, 0)
	cancel()
	done := make(chan struct{})
	go func() { p.Wait(ctx, time.Second); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Wait ignored its cancelled context")
	}
}

// Whatever it is given, ParseSpeed returns a usable speed or an error.
func FuzzParseSpeed(f *testing.F) {
	for _, s := range []string{"10x", "0.5x", "1e3", "-1x", "x", "NaN", "1e400x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseSpeed(s)
		if err == nil && !(v > 0 && !math.IsInf(v, 0)) {
			t.Errorf("ParseSpeed(%q) = %v without an error", s, v)
		}
	})
}

// TestAttackLiveSpeedTinyStillPaces: at 1e-10x (a simulated second in
// 317 years) the wait overflowed a Duration, went negative, and pacing
// silently stopped; it must keep holding the simulation back (for 50
// years at least, past which a Duration is held to its quarter).
func TestAttackLiveSpeedTinyStillPaces(t *testing.T) {
	for _, speed := range []float64{1e-9, 1e-10, 1e-300} {
		wall := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		var slept []time.Duration
		p := &Pacer{Speed: speed, now: func() time.Time { return wall },
			sleep: func(_ context.Context, d time.Duration) { slept = append(slept, d) }}
		p.Wait(context.Background(), 0)
		p.Wait(context.Background(), time.Second)
		want := time.Duration(min(float64(time.Second)/speed, float64(50*365*24*time.Hour)))
		if len(slept) != 1 || slept[0] < want {
			t.Errorf("speed %g: slept %v, want at least %v", speed, slept, want)
		}
	}
}
