package policies

import (
	"math"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Hedge defaults.
const (
	// DefaultHedgeAttempts is MaxAttempts when a hedge block names none.
	DefaultHedgeAttempts = 2
	// DefaultHedgeMinSamples is MinSamples for a percentile delay.
	DefaultHedgeMinSamples = 100
	// hedgeMaxLatency bounds the latencies the histogram can hold; longer
	// ones are recorded as this value.
	hedgeMaxLatency = time.Hour
)

// Validate reports a field that cannot describe hedging.
func (c HedgeConfig) Validate() error {
	switch {
	case c.Delay < 0:
		return fieldErrorf("hedge.delay", "must be ≥ 0, got %v", c.Delay)
	case !(c.Percentile >= 0 && c.Percentile < 1):
		return fieldErrorf("hedge.percentile", "must be a quantile in [0, 1), got %v", c.Percentile)
	case c.Percentile > 0 && c.Delay == 0:
		// Until MinSamples latencies are seen the fixed delay applies, and 0
		// would send every hedge of those first calls at once.
		return fieldErrorf("hedge.delay", "must be > 0 with hedge.percentile (it applies until min_samples latencies are seen)")
	case c.MinSamples < 0:
		return fieldErrorf("hedge.min_samples", "must be ≥ 0, got %d", c.MinSamples)
	case c.MaxAttempts < 0 || c.MaxAttempts == 1:
		return fieldErrorf("hedge.max_attempts", "must be ≥ 2 (the first attempt counts), got %d", c.MaxAttempts)
	}
	return nil
}

// Hedger decides when to send the next hedged attempt of a call: after a
// fixed Delay, or after the edge's observed latency at Percentile once
// MinSamples latencies have been observed (Delay until then). Latencies are
// kept in an HDR histogram (1 µs resolution, 3 significant digits, up to an
// hour) over the whole run. Not safe for concurrent use.
type Hedger struct {
	delay       time.Duration
	percentile  float64
	minSamples  int64
	maxAttempts int
	hist        *hdrhistogram.Histogram
}

// NewHedger builds a hedger, applying the defaults MaxAttempts 2 and
// MinSamples 100.
func NewHedger(c HedgeConfig) (*Hedger, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	h := &Hedger{delay: c.Delay, percentile: c.Percentile, minSamples: int64(c.MinSamples), maxAttempts: c.MaxAttempts}
	if h.maxAttempts == 0 {
		h.maxAttempts = DefaultHedgeAttempts
	}
	if h.percentile > 0 {
		if h.minSamples == 0 {
			h.minSamples = DefaultHedgeMinSamples
		}
		h.hist = hdrhistogram.New(1, int64(hedgeMaxLatency/time.Microsecond), 3)
	}
	return h, nil
}

// MaxAttempts is the number of attempts a hedged call may send, the first
// included.
func (h *Hedger) MaxAttempts() int { return h.maxAttempts }

// Delay returns the wait between one attempt and the next.
func (h *Hedger) Delay() time.Duration {
	if h.hist == nil || h.hist.TotalCount() < h.minSamples {
		return h.delay
	}
	us := h.hist.ValueAtQuantile(h.percentile * 100)
	return time.Duration(us) * time.Microsecond
}

// Observe records a completed attempt's latency; only a percentile hedger
// keeps it.
func (h *Hedger) Observe(latency time.Duration) {
	if h.hist == nil {
		return
	}
	us := int64(math.Ceil(float64(latency) / float64(time.Microsecond)))
	us = min(max(us, 1), int64(hedgeMaxLatency/time.Microsecond))
	_ = h.hist.RecordValue(us) // in range by construction
}
