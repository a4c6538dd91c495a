package policies

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func TestThrottleProbability(t *testing.T) {
	tests := []struct {
		name              string
		k                 float64
		requests, accepts int
		want              float64
	}{
		{"no traffic", 2, 0, 0, 0},
		{"all accepted", 2, 100, 100, 0},
		{"half accepted, K 2", 2, 100, 50, 0},
		{"a third accepted, K 2", 2, 300, 100, 100.0 / 301},
		{"none accepted", 2, 10, 0, 10.0 / 11},
		{"K 1.1 is more aggressive", 1.1, 100, 50, (100 - 55.0) / 101},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			th, err := NewThrottle(ThrottleConfig{K: tt.k, Window: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(1, 1))
			for i := range tt.requests {
				th.Allow(0, r)
				th.Record(0, i < tt.accepts)
			}
			if got := th.Probability(0); math.Abs(got-tt.want) > 1e-12 {
				t.Fatalf("p = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestThrottleAllowDraws checks that Allow rejects exactly when its draw
// falls below the current probability, by replaying the same stream.
func TestThrottleAllowDraws(t *testing.T) {
	th, err := NewThrottle(ThrottleConfig{})
	if err != nil {
		t.Fatal(err)
	}
	r, replay := rand.New(rand.NewPCG(3, 4)), rand.New(rand.NewPCG(3, 4))
	rejected := 0
	for i := range 5000 {
		now := time.Duration(i) * 10 * milli
		p := th.Probability(now)
		want := replay.Float64() >= p
		got := th.Allow(now, r)
		if got != want {
			t.Fatalf("request %d: Allow = %v, want %v (p %v)", i, got, want, p)
		}
		if !got {
			rejected++
			continue
		}
		// The backend accepts a quarter of what it gets.
		th.Record(now, i%4 == 0)
	}
	if rejected == 0 {
		t.Fatal("a backend accepting 25 % never made the throttle reject")
	}
}

// TestThrottleWindow checks that old counts leave the window: a backend that
// failed two minutes ago no longer causes rejections.
func TestThrottleWindow(t *testing.T) {
	th, _ := NewThrottle(ThrottleConfig{K: 2, Window: 10 * time.Second})
	r := rand.New(rand.NewPCG(1, 2))
	for range 100 {
		th.Allow(0, r)
		th.Record(0, false)
	}
	if p := th.Probability(9 * time.Second); p < 0.9 {
		t.Fatalf("p inside the window = %v, want ≥ 0.9", p)
	}
	if p := th.Probability(10 * time.Second); p != 0 {
		t.Fatalf("p after the window = %v, want 0", p)
	}
}

func TestThrottleValidate(t *testing.T) {
	for _, tt := range []struct {
		cfg  ThrottleConfig
		want string
	}{
		{ThrottleConfig{K: -1}, "throttle.k"},
		{ThrottleConfig{K: 0.5}, "throttle.k: must be ≥ 1"},
		{ThrottleConfig{K: math.Inf(1)}, "throttle.k"},
		{ThrottleConfig{Window: -time.Second}, "throttle.window"},
	} {
		if _, err := NewThrottle(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: error %v, want it to contain %q", tt.cfg, err, tt.want)
		}
	}
}
