// Package loadtest holds the test helpers that the tests of load/driver
// and load/serve share. Tests built on them run whole runs — driver, services and
// the HTTP between them — as time scripts: inside a testing/synctest bubble
// (so that net/http's own timers are fake too), on an in-memory network
// (memnet, whose waits the bubble sees), with the run's clock either the
// bubble's (Real reads it) or a clock.Fake the test advances. No real time
// passes: a latency is exactly the service times and waits on its path, so
// expectations are exact where the process is deterministic, and a machine
// busy with other work changes nothing.
package loadtest

import (
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stormsim/stormsim/internal/memnet"
	"github.com/stormsim/stormsim/load/internal/clock"
	"github.com/stormsim/stormsim/model"
	"github.com/stormsim/stormsim/topology"
)

// MemTarget serves h on an in-memory listener of nw until the test (the
// bubble) ends; it returns the target's URL.
func MemTarget(t *testing.T, nw *memnet.Network, h http.HandlerFunc) string {
	t.Helper()
	ln, err := nw.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String() + "/"
}

// RunScripted calls run in its own goroutine and moves clk from one timer
// to the next whenever everything else in the bubble waits, until run
// returns: a run on a fake clock, every event at its exact time. Call it
// inside synctest.Test.
func RunScripted(t *testing.T, clk *clock.Fake, run func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		run()
	}()
	for {
		synctest.Wait()
		select {
		case <-done:
			return
		default:
		}
		if !clk.Step() {
			t.Fatalf("at %v the run waits for nothing the clock can bring", clk.Now())
		}
	}
}

// Constant is the constant arrivals of a target run at rate over d (seed 1).
func Constant(rate float64, d time.Duration) *model.Arrivals { return ConstantWrites(rate, 0, d) }

// ConstantWrites is Constant with a share writes of writes.
func ConstantWrites(rate, writes float64, d time.Duration) *model.Arrivals {
	return model.ArrivalsFor(&topology.Workload{Arrival: topology.ArrivalConstant, Rate: rate, WriteFraction: writes}, d, 1)
}
