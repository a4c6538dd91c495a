// Package clock is the one time source of load mode: the offset since a
// run's start and timers, read by the emulated services (serve), the edge
// client and the open-loop driver. Policies never read a clock (they are
// passed Now()); the code that waits for them does, through a Clock.
//
// Real is the wall clock, used in production. Fake is a scripted clock for
// tests: time moves only when the test advances it, and its timers fire in
// (time, creation) order, so a test states exactly what happens when. Tests
// that also need the standard library's own timers (net/http's) to be fake
// run inside a testing/synctest bubble, where Real reads the bubble's clock.
package clock

import (
	"context"
	"time"
)

// Clock is a run's time: Now is the offset since the run's start (its
// epoch), and timers are set in durations from now.
type Clock interface {
	// Now returns the time since the run's start.
	Now() time.Duration
	// NewTimer returns a timer that sends the current time on its channel
	// once d has passed, as time.NewTimer does.
	NewTimer(d time.Duration) (Timer, <-chan time.Time)
	// AfterFunc calls f in its own goroutine once d has passed, as
	// time.AfterFunc does (Fake calls it on the goroutine advancing it).
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending timer of a Clock; *time.Timer is one. Stop and Reset
// mean what they mean for a time.Timer.
type Timer interface {
	Stop() bool
	Reset(d time.Duration) bool
}

// Real is the wall clock, with Now counted from its epoch. Its timers are
// time.Timers, so it costs no allocation beyond theirs. Safe for concurrent
// use; the zero value counts from the year 1 and is not useful.
type Real struct{ epoch time.Time }

// NewReal returns the wall clock counting from epoch.
func NewReal(epoch time.Time) Real { return Real{epoch: epoch} }

// Epoch returns the instant Now counts from.
func (r Real) Epoch() time.Time { return r.epoch }

// Now returns time.Since(epoch).
func (r Real) Now() time.Duration { return time.Since(r.epoch) }

// NewTimer returns time.NewTimer(d) and its channel.
func (Real) NewTimer(d time.Duration) (Timer, <-chan time.Time) {
	t := time.NewTimer(d)
	return t, t.C
}

// AfterFunc returns time.AfterFunc(d, f).
func (Real) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// Instant returns the instant of offset d on c: the wall-clock time for
// Real, and for any other clock d after the Unix epoch (the time a Fake's
// timers send).
func Instant(c Clock, d time.Duration) time.Time {
	if r, ok := c.(Real); ok {
		return r.epoch.Add(d)
	}
	return time.Unix(0, 0).Add(d)
}

// Or returns c, or the wall clock from epoch when c is nil.
func Or(c Clock, epoch time.Time) Clock {
	if c == nil {
		return NewReal(epoch)
	}
	return c
}

// Sleep waits d on c, or until ctx ends; it reports whether d elapsed.
func Sleep(c Clock, ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t, ch := c.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-ctx.Done():
		return false
	}
}

// WithTimeout is context.WithTimeout on c: the context ends d from now on
// c, its Err then context.DeadlineExceeded. On the wall clock it is
// context.WithTimeout itself.
func WithTimeout(c Clock, ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := c.(Real); ok {
		return context.WithTimeout(ctx, d)
	}
	cctx, cancel := context.WithCancelCause(ctx)
	tc := &timeoutCtx{Context: cctx}
	t := c.AfterFunc(d, func() { tc.expired.Store(true); cancel(context.DeadlineExceeded) })
	return tc, func() { t.Stop(); cancel(context.Canceled) }
}
