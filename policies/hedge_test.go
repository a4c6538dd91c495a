package policies

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func TestHedgerFixed(t *testing.T) {
	h, err := NewHedger(HedgeConfig{Delay: 20 * milli})
	if err != nil {
		t.Fatal(err)
	}
	h.Observe(time.Second)
	if h.Delay() != 20*milli || h.MaxAttempts() != 2 {
		t.Fatalf("Delay %v MaxAttempts %d, want 20ms and 2", h.Delay(), h.MaxAttempts())
	}
}

func TestHedgerPercentile(t *testing.T) {
	h, err := NewHedger(HedgeConfig{Delay: 7 * milli, Percentile: 0.95, MinSamples: 1000, MaxAttempts: 3})
	if err != nil {
		t.Fatal(err)
	}
	// Latencies 1..1000 ms in a shuffled order.
	r := rand.New(rand.NewPCG(5, 5))
	lat := r.Perm(1000)
	for i, l := range lat {
		if i == 999 && h.Delay() != 7*milli {
			t.Fatalf("before MinSamples: Delay = %v, want the fixed 7ms", h.Delay())
		}
		h.Observe(time.Duration(l+1) * milli)
	}
	// The 95th percentile of 1..1000 ms is 950 ms; the histogram keeps 3
	// significant digits, so within 0.1 %.
	got := h.Delay()
	if got < 949*milli || got > 951*milli {
		t.Fatalf("Delay = %v, want 950ms ± 1ms", got)
	}
	if h.MaxAttempts() != 3 {
		t.Fatalf("MaxAttempts = %d, want 3", h.MaxAttempts())
	}
}

func TestHedgerValidate(t *testing.T) {
	for _, tt := range []struct {
		cfg  HedgeConfig
		want string
	}{
		{HedgeConfig{Delay: -1}, "hedge.delay"},
		{HedgeConfig{Percentile: 95}, "hedge.percentile: must be a quantile in [0, 1), got 95"},
		{HedgeConfig{Percentile: 0.95}, "hedge.delay: must be > 0 with hedge.percentile"},
		{HedgeConfig{MinSamples: -1}, "hedge.min_samples"},
		{HedgeConfig{MaxAttempts: 1}, "hedge.max_attempts"},
	} {
		if _, err := NewHedger(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: error %v, want it to contain %q", tt.cfg, err, tt.want)
		}
	}
}
