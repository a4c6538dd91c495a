package policies

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func TestBackoffExpo(t *testing.T) {
	b, err := NewBackoff(BackoffConfig{Initial: 25 * milli, Max: 250 * milli})
	if err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{25 * milli, 25 * milli, 50 * milli, 100 * milli, 200 * milli, 250 * milli, 250 * milli}
	for n, w := range want {
		if got := b.Expo(n); got != w {
			t.Errorf("Expo(%d) = %v, want %v", n, got, w)
		}
	}
	// Huge retry numbers saturate instead of overflowing.
	if got := (Backoff{Initial: time.Second, Multiplier: 2}).Expo(10_000); got <= 0 {
		t.Errorf("uncapped Expo(10000) = %v, want a large positive delay", got)
	}
}

// TestBackoffJitterBounds draws many delays for random configs and checks
// each jitter kind's bounds.
func TestBackoffJitterBounds(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for trial := range 2000 {
		base := time.Duration(1+r.IntN(1000)) * milli
		c := BackoffConfig{Initial: base, Multiplier: 1 + 2*r.Float64(), Spread: r.Float64()}
		if r.IntN(4) > 0 {
			c.Max = base + time.Duration(r.Int64N(int64(20*time.Second)))
		}
		for _, j := range []JitterName{"none", "full", "equal", "decorrelated", "proportional"} {
			c.Jitter = j
			b, err := NewBackoff(c)
			if err != nil {
				t.Fatal(err)
			}
			prev := time.Duration(0)
			for n := 1; n <= 12; n++ {
				d := b.Delay(n, prev, r)
				e := b.Expo(n)
				var lo, hi time.Duration
				switch j {
				case "none":
					lo, hi = e, e
				case "full":
					lo, hi = 0, e
				case "equal":
					lo, hi = e/2, e
				case "proportional":
					lo = time.Duration(float64(e) * (1 - c.Spread))
					hi = time.Duration(math.Ceil(float64(e) * (1 + c.Spread)))
				case "decorrelated":
					lo, hi = base, time.Duration(3*float64(max(prev, base)))
					if c.Max > 0 {
						hi = min(hi, c.Max)
					}
				}
				if d < lo || d > hi {
					t.Fatalf("trial %d %s retry %d (%+v): delay %v outside [%v, %v]", trial, j, n, c, d, lo, hi)
				}
				if j == "full" && c.Max > 0 && d > c.Max {
					t.Fatalf("full jitter above the cap: %v > %v", d, c.Max)
				}
				prev = d
			}
		}
	}
}

// TestBackoffJitterMeans checks the distribution, not just the bounds: the
// sample mean of each kind against its expectation, within 5 standard errors.
func TestBackoffJitterMeans(t *testing.T) {
	const n = 20000
	e := float64(800 * milli)
	tests := []struct {
		jitter   JitterName
		mean, sd float64 // of one draw
	}{
		{"full", e / 2, e / math.Sqrt(12)},
		{"equal", 3 * e / 4, e / 2 / math.Sqrt(12)},
		{"proportional", e, 0.4 * e / math.Sqrt(12)},
	}
	for _, tt := range tests {
		b, err := NewBackoff(BackoffConfig{Initial: 100 * milli, Max: time.Second, Jitter: tt.jitter, Spread: 0.2})
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(21, 22))
		var sum float64
		for range n {
			sum += float64(b.Delay(4, 0, r)) // expo(4) = 800ms
		}
		mean := sum / n
		if tol := 5 * tt.sd / math.Sqrt(n); math.Abs(mean-tt.mean) > tol {
			t.Errorf("%s: mean %v, want %v ± %v", tt.jitter, time.Duration(mean), time.Duration(tt.mean), time.Duration(tol))
		}
	}
}

func TestBackoffValidate(t *testing.T) {
	for _, tt := range []struct {
		cfg  BackoffConfig
		want string
	}{
		{BackoffConfig{Initial: -1}, "backoff.initial"},
		{BackoffConfig{Max: -1}, "backoff.max: must be ≥ 0"},
		{BackoffConfig{Multiplier: 0.5}, "backoff.multiplier"},
		{BackoffConfig{Multiplier: math.NaN()}, "backoff.multiplier"},
		{BackoffConfig{Spread: 2}, "backoff.spread"},
		{BackoffConfig{Jitter: "wobbly"}, `unknown jitter "wobbly"`},
		{BackoffConfig{Initial: time.Second, Max: time.Millisecond}, "backoff.max: must be ≥ backoff.initial"},
	} {
		if err := tt.cfg.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: error %v, want it to contain %q", tt.cfg, err, tt.want)
		}
	}
}

func TestRetryValidate(t *testing.T) {
	for _, tt := range []struct {
		cfg  RetryConfig
		want string
	}{
		{RetryConfig{MaxAttempts: 3, On: []RetryClass{"timeout"}}, ""},
		{RetryConfig{Preset: "grpc", MaxAttempts: 5}, ""},
		{RetryConfig{Preset: "grpcc"}, `retry.preset: unknown retry preset "grpcc"`},
		{RetryConfig{MaxAttempts: -1}, "retry.max_attempts"},
		{RetryConfig{On: []RetryClass{"timeouts"}}, "retry.on"},
		{RetryConfig{On: []RetryClass{"conflict"}}, `retry.on: "conflict" cannot be retried`},
		{RetryConfig{Backoff: BackoffConfig{Jitter: "x"}}, "retry.backoff"},
	} {
		err := tt.cfg.Validate()
		if tt.want == "" {
			if err != nil {
				t.Errorf("%+v: unexpected error %v", tt.cfg, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: error %v, want it to contain %q", tt.cfg, err, tt.want)
		}
	}
}

func BenchmarkBackoffDelay(b *testing.B) {
	bo, _ := NewBackoff(BackoffConfig{Initial: 50 * milli, Max: 5 * time.Second, Jitter: "full"})
	r := rand.New(rand.NewPCG(1, 1))
	b.ReportAllocs()
	for i := range b.N {
		bo.Delay(1+i%8, 0, r)
	}
}

// Envoy's default retry backoff: full jitter over min(25ms·2^(n−1), 250ms).
func ExampleBackoff() {
	b, _ := NewBackoff(BackoffConfig{Initial: 25 * time.Millisecond, Multiplier: 2, Max: 250 * time.Millisecond, Jitter: "full"})
	r := rand.New(rand.NewPCG(1, 2))
	for n := 1; n <= 5; n++ {
		d := b.Delay(n, 0, r)
		fmt.Printf("retry %d: expo %v, delay %v\n", n, b.Expo(n), d.Round(time.Millisecond))
	}
	// Output:
	// retry 1: expo 25ms, delay 17ms
	// retry 2: expo 50ms, delay 23ms
	// retry 3: expo 100ms, delay 51ms
	// retry 4: expo 200ms, delay 86ms
	// retry 5: expo 250ms, delay 199ms
}

// A Finagle-style ratio budget: 20 % of requests may be retried, plus a
// reserve of 1 retry per second over the 10 s window.
func ExampleNewBudget() {
	b, _ := NewBudget(BudgetConfig{Kind: "ratio", Ratio: 0.2, MinPerSec: 1, Window: 10 * time.Second})
	for range 50 {
		b.OnRequest(0)
	}
	admitted := 0
	for b.TryRetry(time.Second, Unavailable) {
		admitted++
	}
	fmt.Println("retries admitted:", admitted)
	fmt.Println("after the window:", b.Level(12*time.Second))
	// Output:
	// retries admitted: 20
	// after the window: 10
}
