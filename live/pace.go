package live

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ParseSpeed reads a pace as --live-speed spells it: a positive factor of
// simulated time over wall-clock time, with an optional "x" ("10x": ten
// simulated seconds per real second; "0.5x": half speed).
func ParseSpeed(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(s), "x"), 64)
	if err != nil || !(v > 0) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("want a positive speed like 10x or 0.5x, got %q", s)
	}
	return v, nil
}

// Pacer holds a simulation back so that simulated time advances at most
// Speed times as fast as the wall clock, from the first Wait on. A Pacer
// paces one simulation: it is not safe for concurrent use.
type Pacer struct {
	// Speed is simulated seconds per wall-clock second; ≤ 0 does not pace.
	Speed float64
	start time.Time
	// now and sleep stand in for the clock in tests; nil: the real one.
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration)
}

// Wait blocks until the wall clock has caught up with simNow, the
// simulated time reached, or ctx is done. The first call starts the
// clock.
func (p *Pacer) Wait(ctx context.Context, simNow time.Duration) {
	if p == nil || p.Speed <= 0 {
		return
	}
	now, sleep := p.now, p.sleep
	if now == nil {
		now, sleep = time.Now, sleepCtx
	}
	if p.start.IsZero() {
		p.start = now().Add(-p.wall(simNow))
		return
	}
	due := p.start.Add(p.wall(simNow))
	if d := due.Sub(now()); d > 0 {
		sleep(ctx, d)
	}
}

// wall is the wall-clock time simNow takes at Speed, held below what a
// Duration holds: at a speed of 1e-10x a simulated second is 317 years,
// which overflowed to a negative wait, and pacing silently stopped.
func (p *Pacer) wall(simNow time.Duration) time.Duration {
	const most = float64(math.MaxInt64 / 4)
	return time.Duration(min(float64(simNow)/p.Speed, most))
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
