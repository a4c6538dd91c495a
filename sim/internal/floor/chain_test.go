package floor

import (
	"math"
	"testing"
)

func tenHop(d float64) Chain {
	return Chain{Hops: 10, Rate: 100000, Net: 20e-6, Service: 20e-6, Timeout: 0.37, Duration: d, Seed: 1}
}

// TestChainMatchesTheory checks the sequential chain floor against the
// sum of its hops: with services that never queue, a request's latency is
// the sum of 3H independent exponentials (H services, 2H network delays),
// of mean H(2·Net + Service) = 600µs here and variance H(2·Net² +
// Service²); the tolerance is 5 standard errors of the mean over the n
// requests, and each request costs 3H+1 events.
func TestChainMatchesTheory(t *testing.T) {
	c := tenHop(0.5)
	r := ChainSequential(c)
	n := float64(r.Requests)
	if want := c.Rate * c.Duration; math.Abs(n-want) > 5*math.Sqrt(want) {
		t.Fatalf("%d requests, want %v ± 5σ", r.Requests, want)
	}
	if r.TimedOut != 0 {
		t.Fatalf("%d timed out with a %vs timeout", r.TimedOut, c.Timeout)
	}
	h := float64(c.Hops)
	mean := h * (2*c.Net + c.Service)
	se := math.Sqrt(h*(2*c.Net*c.Net+c.Service*c.Service)) / math.Sqrt(n)
	if got := r.Latency / n; math.Abs(got-mean) > 5*se {
		t.Fatalf("mean latency %v, want %v ± %v", got, mean, 5*se)
	}
	if r.Events != r.Requests*(3*c.Hops+1) {
		t.Fatalf("%d events for %d requests, want %d each", r.Events, r.Requests, 3*c.Hops+1)
	}
}

// TestChainParallelMatchesSequential checks that the two halves on two
// goroutines give the sequential run's results bit for bit, over seeds,
// chain lengths and a timeout short enough that some calls are late.
func TestChainParallelMatchesSequential(t *testing.T) {
	for _, c := range []Chain{
		tenHop(0.05),
		{Hops: 2, Rate: 50000, Net: 50e-6, Service: 10e-6, Timeout: 1, Duration: 0.05, Seed: 7},
		{Hops: 5, Rate: 200000, Net: 5e-6, Service: 30e-6, Timeout: 100e-6, Duration: 0.02, Seed: 3},
		{Hops: 10, Rate: 1000, Net: 20e-6, Service: 20e-6, Timeout: 0.37, Duration: 0.2, Seed: 9},
	} {
		seq, par := ChainSequential(c), ChainParallel(c)
		if seq != par {
			t.Errorf("%+v:\nsequential %+v\nparallel   %+v", c, seq, par)
		}
		if seq.Requests == 0 {
			t.Errorf("%+v: no request answered in time", c)
		}
		if late := c.Timeout < 1e-3; late != (seq.TimedOut > 0) {
			t.Errorf("%+v: %d late, want some: %v", c, seq.TimedOut, late)
		}
	}
}

// BenchmarkChain runs the ten-hop chain floor (issue 24's chain at 100k
// req/s, 1 simulated second per op) on one goroutine and on two, and
// reports the seconds per simulated second, the minutes one simulated hour
// would take, and the events per second.
func BenchmarkChain(b *testing.B) {
	for _, run := range []struct {
		name string
		fn   func(Chain) ChainResult
	}{{"sequential", ChainSequential}, {"parallel", ChainParallel}} {
		b.Run(run.name, func(b *testing.B) {
			c := tenHop(1)
			events := 0
			for i := 0; b.Loop(); i++ {
				c.Seed = uint64(i + 1)
				events += run.fn(c).Events
			}
			s := b.Elapsed().Seconds() / float64(b.N)
			b.ReportMetric(s, "s/sim_s")
			b.ReportMetric(s*60, "min/sim_h")
			b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
