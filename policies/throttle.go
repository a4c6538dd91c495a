package policies

import (
	"math"
	"math/rand/v2"
	"time"
)

// Throttle defaults (Google SRE book, "Handling Overload").
const (
	DefaultThrottleK      = 2
	DefaultThrottleWindow = 2 * time.Minute
)

// Validate reports a field that cannot describe a throttle. Zero fields take
// their defaults.
func (c ThrottleConfig) Validate() error {
	switch {
	case c.K < 0 || math.IsNaN(c.K) || math.IsInf(c.K, 0):
		return fieldErrorf("throttle.k", "must be > 0, got %v", c.K)
	case c.K != 0 && c.K < 1:
		return fieldErrorf("throttle.k", "must be ≥ 1 (below 1 it rejects healthy traffic), got %v", c.K)
	case c.Window < 0:
		return fieldErrorf("throttle.window", "must be > 0, got %v", c.Window)
	}
	return nil
}

// Throttle is Google SRE client-side adaptive throttling. Over the last
// Window it counts requests (every call the application asked for, rejected
// locally or not) and accepts (calls the backend accepted), and rejects a new
// request locally with probability
//
//	p = max(0, (requests − K·accepts) / (requests + 1)).
//
// Counts live in ten time buckets, so memory is constant. Not safe for
// concurrent use.
type Throttle struct {
	k   float64
	win slidingCount
}

const (
	seriesAccepts = 1
)

// NewThrottle builds a throttle, applying the defaults K 2 and Window 2m.
func NewThrottle(c ThrottleConfig) (*Throttle, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if c.K == 0 {
		c.K = DefaultThrottleK
	}
	if c.Window == 0 {
		c.Window = DefaultThrottleWindow
	}
	return &Throttle{k: c.K, win: newSlidingCount(c.Window)}, nil
}

// Probability returns the current local rejection probability.
func (t *Throttle) Probability(now time.Duration) float64 {
	req := float64(t.win.total(now, seriesRequests))
	acc := float64(t.win.total(now, seriesAccepts))
	return max(0, (req-t.k*acc)/(req+1))
}

// Allow counts a request and decides whether to send it: false means reject
// it locally (outcome Throttled). It draws one number from r.
func (t *Throttle) Allow(now time.Duration, r *rand.Rand) bool {
	p := t.Probability(now)
	t.win.add(now, seriesRequests, 1)
	return r.Float64() >= p
}

// Record reports a sent request's fate: accepted means the backend took it
// (any answer but an overload rejection).
func (t *Throttle) Record(now time.Duration, accepted bool) {
	if accepted {
		t.win.add(now, seriesAccepts, 1)
	} else {
		t.win.advance(now)
	}
}
