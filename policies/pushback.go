package policies

import (
	"math"
	"time"
)

// Validate reports a field that cannot describe pushback.
func (p PushbackConfig) Validate() error {
	switch {
	case p.RetryAfter < 0:
		return fieldErrorf("pushback.retry_after", "must be ≥ 0, got %v", p.RetryAfter)
	case p.PerQueued < 0:
		return fieldErrorf("pushback.per_queued", "must be ≥ 0, got %v", p.PerQueued)
	case p.Max < 0:
		return fieldErrorf("pushback.max", "must be ≥ 0, got %v", p.Max)
	}
	return nil
}

// RetryAfter returns the pushback a service sends with an overload rejection
// while queueLen requests wait: RetryAfter + PerQueued·queueLen, capped at
// Max when Max > 0, or dontRetry when the config says so. A nil config sends
// no hint (0, false).
func RetryAfter(p *PushbackConfig, queueLen int) (d time.Duration, dontRetry bool) {
	if p == nil {
		return 0, false
	}
	if p.DontRetry {
		return 0, true
	}
	extra := float64(p.PerQueued) * float64(max(queueLen, 0))
	total := float64(p.RetryAfter) + extra
	d = math.MaxInt64 / 2 // saturate rather than overflow
	if total < float64(d) {
		d = time.Duration(total)
	}
	if p.Max > 0 && d > p.Max {
		d = p.Max
	}
	return d, false
}
