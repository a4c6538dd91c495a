package clock

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// timeoutCtx is a context that WithTimeout ended on a clock other than
// the wall clock: its Err says the deadline passed, as a context made by
// context.WithTimeout does, so callers telling timeouts from cancellations
// see the same either way.
type timeoutCtx struct {
	context.Context
	expired atomic.Bool
}

// Err returns context.DeadlineExceeded once the timeout fired.
func (c *timeoutCtx) Err() error {
	if err := c.Context.Err(); err != nil && c.expired.Load() {
		return context.DeadlineExceeded
	}
	return c.Context.Err()
}

// Fake is a scripted clock: Now stays where the test put it, and timers
// fire only when the test moves time past them (Advance, AdvanceTo, Step),
// in the order of their times, ties in the order they were set. An
// AfterFunc function runs on the goroutine that advances the clock, before
// the advance returns; a NewTimer channel receives the timer's time
// (buffered, never blocking the clock). Safe for concurrent use; the zero
// value is a clock at 0 with no timers.
type Fake struct {
	mu     sync.Mutex
	now    time.Duration
	seq    uint64
	timers []*fakeTimer
}

type fakeTimer struct {
	c   *Fake
	at  time.Duration
	seq uint64
	f   func()
	ch  chan time.Time
	on  bool
}

// Now returns the scripted time.
func (c *Fake) Now() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTimer returns a timer that receives on its channel at Now()+d.
func (c *Fake) NewTimer(d time.Duration) (Timer, <-chan time.Time) {
	t := &fakeTimer{c: c, ch: make(chan time.Time, 1)}
	t.Reset(d)
	return t, t.ch
}

// AfterFunc returns a timer that calls f at Now()+d.
func (c *Fake) AfterFunc(d time.Duration, f func()) Timer {
	t := &fakeTimer{c: c, f: f}
	t.Reset(d)
	return t
}

// Stop takes the timer off the clock; it reports whether it was pending.
func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.on
	t.unlink()
	return was
}

// Reset sets the timer to Now()+d; it reports whether it was pending.
func (t *fakeTimer) Reset(d time.Duration) bool {
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	was := t.on
	t.unlink()
	c.seq++
	t.at, t.seq, t.on = c.now+max(d, 0), c.seq, true
	c.timers = append(c.timers, t)
	return was
}

func (t *fakeTimer) unlink() {
	if t.on {
		t.c.timers = slices.DeleteFunc(t.c.timers, func(x *fakeTimer) bool { return x == t })
		t.on = false
	}
}

// Pending returns how many timers are set.
func (c *Fake) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// Sleepers returns how many NewTimer timers are set: with Sleep, how many
// goroutines wait on the clock.
func (c *Fake) Sleepers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.timers {
		if t.f == nil {
			n++
		}
	}
	return n
}

// Next returns the time of the earliest pending timer; ok is false when
// none is set.
func (c *Fake) Next() (at time.Duration, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t := c.earliest(); t != nil {
		return t.at, true
	}
	return 0, false
}

func (c *Fake) earliest() *fakeTimer {
	var first *fakeTimer
	for _, t := range c.timers {
		if first == nil || t.at < first.at || t.at == first.at && t.seq < first.seq {
			first = t
		}
	}
	return first
}

// Step moves the clock to the earliest pending timer and fires it alone;
// it reports false, leaving the clock, when no timer is set.
func (c *Fake) Step() bool {
	c.mu.Lock()
	t := c.earliest()
	if t == nil {
		c.mu.Unlock()
		return false
	}
	c.now = max(c.now, t.at)
	t.unlink()
	now := c.now
	c.mu.Unlock()
	t.fire(now)
	return true
}

// AdvanceTo fires, in order, every timer due by at (also those set by the
// timers fired), then leaves the clock at at. It never moves time back.
func (c *Fake) AdvanceTo(at time.Duration) {
	for {
		c.mu.Lock()
		t := c.earliest()
		if t == nil || t.at > at {
			c.now = max(c.now, at)
			c.mu.Unlock()
			return
		}
		c.now = max(c.now, t.at)
		t.unlink()
		now := c.now
		c.mu.Unlock()
		t.fire(now)
	}
}

// Advance is AdvanceTo(Now()+d).
func (c *Fake) Advance(d time.Duration) { c.AdvanceTo(c.Now() + d) }

func (t *fakeTimer) fire(now time.Duration) {
	if t.f != nil {
		t.f()
		return
	}
	select {
	case t.ch <- time.Unix(0, 0).Add(now):
	default:
	}
}
