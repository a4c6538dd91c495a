package clock

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestFakeScript: timers fire when the script moves time past them, in
// (time, creation) order, and not before; Stop and Reset take effect.
func TestFakeScript(t *testing.T) {
	var c Fake
	var fired []string
	c.AfterFunc(20*time.Millisecond, func() { fired = append(fired, "b") })
	c.AfterFunc(10*time.Millisecond, func() { fired = append(fired, "a") })
	c.AfterFunc(20*time.Millisecond, func() { fired = append(fired, "c") }) // ties: in order set
	stopped := c.AfterFunc(15*time.Millisecond, func() { fired = append(fired, "stopped") })
	moved := c.AfterFunc(5*time.Millisecond, func() { fired = append(fired, "moved") })
	tm, ch := c.NewTimer(30 * time.Millisecond)
	if !stopped.Stop() || stopped.Stop() {
		t.Fatal("Stop: want true for a pending timer, then false")
	}
	if !moved.Reset(25 * time.Millisecond) {
		t.Fatal("Reset of a pending timer reported it idle")
	}
	for _, step := range []struct {
		at   time.Duration
		want string
		recv bool
	}{
		{9 * time.Millisecond, "[]", false},
		{10 * time.Millisecond, "[a]", false},
		{24 * time.Millisecond, "[a b c]", false},
		{30 * time.Millisecond, "[a b c moved]", true},
	} {
		c.AdvanceTo(step.at)
		if got := fmt.Sprint(fired); got != step.want || c.Now() != step.at {
			t.Fatalf("at %v: fired %s (now %v), want %s", step.at, got, c.Now(), step.want)
		}
		select {
		case v := <-ch:
			if !step.recv {
				t.Fatalf("at %v: the 30 ms timer fired early (%v)", step.at, v)
			}
		default:
			if step.recv {
				t.Fatalf("at %v: the 30 ms timer did not fire", step.at)
			}
		}
	}
	if tm.Stop() || c.Pending() != 0 {
		t.Errorf("after its time the timer is still pending (%d pending)", c.Pending())
	}
}

// TestFakeStep: Step fires the earliest timer alone and moves the clock to
// it; with no timer it leaves the clock.
func TestFakeStep(t *testing.T) {
	var c Fake
	_, ch := c.NewTimer(7 * time.Millisecond)
	c.NewTimer(9 * time.Millisecond)
	if at, ok := c.Next(); !ok || at != 7*time.Millisecond || c.Sleepers() != 2 {
		t.Fatalf("Next = %v, %v with %d sleepers; want 7ms, true, 2", at, ok, c.Sleepers())
	}
	if !c.Step() || c.Now() != 7*time.Millisecond || len(ch) != 1 || c.Pending() != 1 {
		t.Fatalf("after Step: now %v, %d received, %d pending", c.Now(), len(ch), c.Pending())
	}
	c.Step()
	if c.Step() || c.Now() != 9*time.Millisecond {
		t.Errorf("Step with no timer: now %v", c.Now())
	}
}

// TestWithTimeout: on a fake clock the context ends when the script passes
// its timeout, with context.DeadlineExceeded as context.WithTimeout's does;
// cancelled first, it reports Canceled.
func TestWithTimeout(t *testing.T) {
	var c Fake
	ctx, cancel := WithTimeout(&c, context.Background(), 100*time.Millisecond)
	defer cancel()
	c.Advance(99 * time.Millisecond)
	if ctx.Err() != nil {
		t.Fatalf("ended at 99 ms: %v", ctx.Err())
	}
	c.Advance(time.Millisecond)
	<-ctx.Done()
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Errorf("Err = %v, want DeadlineExceeded", ctx.Err())
	}
	ctx2, cancel2 := WithTimeout(&c, context.Background(), time.Second)
	cancel2()
	if !errors.Is(ctx2.Err(), context.Canceled) || c.Pending() != 0 {
		t.Errorf("cancelled: Err = %v, %d timers pending; want Canceled and none", ctx2.Err(), c.Pending())
	}
	rctx, rcancel := WithTimeout(NewReal(time.Now()), context.Background(), time.Hour)
	defer rcancel()
	if _, ok := rctx.Deadline(); !ok {
		t.Error("on the wall clock WithTimeout is context.WithTimeout: want a deadline")
	}
}

// TestSleep: Sleep returns true when its time passes, false when the
// context ends first.
func TestSleep(t *testing.T) {
	var c Fake
	done := make(chan bool)
	go func() { done <- Sleep(&c, context.Background(), time.Second) }()
	for c.Sleepers() == 0 {
		time.Sleep(time.Millisecond) // the goroutine is yet to set its timer
	}
	c.Advance(time.Second)
	if !<-done {
		t.Error("Sleep returned false after its time")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if Sleep(&c, ctx, time.Second) {
		t.Error("Sleep returned true with its context ended")
	}
}

// A test scripts time: the service's timer fires exactly when the script
// moves past it.
func ExampleFake() {
	var c Fake
	c.AfterFunc(30*time.Millisecond, func() { fmt.Println("hedge sent at", c.Now()) })
	c.AdvanceTo(29 * time.Millisecond)
	fmt.Println("at", c.Now(), "nothing yet")
	c.Advance(time.Millisecond)
	// Output:
	// at 29ms nothing yet
	// hedge sent at 30ms
}
