package sim

import (
	"context"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/policies"
	"github.com/stormsim/stormsim/topology"
)

// benchMM1 is the M/M/1 queue the benchmarks compare: λ = 900/s, μ = 1000/s.
func benchMM1(d time.Duration) *topology.Scenario {
	return &topology.Scenario{
		Name: "bench-mm1", Seed: 1, Duration: d, Interval: time.Second,
		Workload: topology.Workload{Entry: "s", Arrival: "poisson", Rate: 900},
		Services: []topology.Service{{Name: "s", Workers: 1, ServiceTime: exp(time.Millisecond)}},
	}
}

// BenchmarkMM1 runs the full model (engine, call state machine, metrics)
// on an M/M/1 queue and reports simulated customers per second of CPU,
// allocations per event (setup included: steady state adds none, as
// TestMemoryIsFlatInDuration shows), and floor-ratio: customers/s over those
// of floorMM1 simulating the same queue as long. The floor runs after each
// model run, outside the timer, so both see the same machine load.
func BenchmarkMM1(b *testing.B) { benchAgainstFloor(b, benchMM1(100*time.Second)) }

// BenchmarkMM1Timeouts is BenchmarkMM1 with a per-attempt client timeout
// and a workload deadline, as every retry-storm scenario has: each attempt
// schedules a timer that is almost always cancelled (at ρ = 0.9 a sojourn
// exceeds 100ms with probability e^-10). Its floor, floorMM1Timeouts, arms
// and cancels a timer per customer too, the way a hand-specialized loop
// would: issue 24 asks for this benchmark within 2× of it (floor-ratio
// ≥ 0.5).
func BenchmarkMM1Timeouts(b *testing.B) { benchAgainstFloor(b, benchMM1Timeouts(100*time.Second)) }

// benchMM1Timeouts is benchMM1 with a 100ms client timeout per attempt and
// a 1s deadline per request.
func benchMM1Timeouts(d time.Duration) *topology.Scenario {
	sc := benchMM1(d)
	sc.Workload.Deadline = time.Second
	sc.Workload.Client.Timeout = 100 * time.Millisecond
	return sc
}

// benchAgainstFloor runs sc, an M/M/1 queue at λ = 900/s, μ = 1000/s
// simulated for 100s, and reports its speed against floorMM1's.
func benchAgainstFloor(b *testing.B, sc *topology.Scenario) {
	r := rand.New(rand.NewPCG(1, 1))
	h := &floorHeap{}
	fifo := make([]float64, 0, 1024)
	b.ReportAllocs()
	var customers, floorCustomers int64
	var events uint64
	var floorTime time.Duration
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for b.Loop() {
		m, res := runOnce(b, sc)
		customers += res.Summary.Requests.Succeeded
		events += m.eng.Events()

		b.StopTimer()
		start := time.Now()
		n, _, _ := floorMM1Timeouts(900, 1000, sc.Duration.Seconds(), floorTimeout(sc), r, h, fifo)
		floorTime += time.Since(start)
		floorCustomers += int64(n)
		b.StartTimer()
	}
	runtime.ReadMemStats(&after)
	rate := float64(customers) / b.Elapsed().Seconds()
	b.ReportMetric(rate, "customers/s")
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(events), "allocs/event")
	b.ReportMetric(rate/(float64(floorCustomers)/floorTime.Seconds()), "floor-ratio")
}

// runOnce builds and runs sc, returning the run (for its engine's
// counters) and its result.
func runOnce(b *testing.B, sc *topology.Scenario) (*run, *metrics.Result) {
	m, err := build(sc)
	if err != nil {
		b.Fatal(err)
	}
	return m, m.run(context.Background(), Options{})
}

// BenchmarkFiveHopChain runs a five-service chain where every hop retries
// timeouts, with network delays: a storm-shaped workload.
func BenchmarkFiveHopChain(b *testing.B) {
	retry := policies.RetryConfig{MaxAttempts: 3, Backoff: policies.BackoffConfig{Initial: time.Millisecond, Jitter: "full"}}
	net := exp(100 * time.Microsecond)
	sc := &topology.Scenario{
		Name: "bench-chain", Seed: 1, Duration: 20 * time.Second, Interval: time.Second,
		Workload: topology.Workload{Entry: "s1", Rate: 500, Deadline: time.Second, Client: topology.Call{Timeout: 200 * time.Millisecond, Retry: retry}},
	}
	names := []string{"s1", "s2", "s3", "s4", "s5"}
	for i, n := range names {
		s := topology.Service{Name: n, Workers: 16, Queue: intp(100), ServiceTime: exp(time.Millisecond), ErrorRate: 0.01}
		if i+1 < len(names) {
			s.Calls = []topology.Call{{To: names[i+1], Timeout: 50 * time.Millisecond, Retry: retry, Network: &net, PropagateDeadline: true}}
		}
		sc.Services = append(sc.Services, s)
	}
	b.ReportAllocs()
	var customers, events uint64
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for b.Loop() {
		m, res := runOnce(b, sc)
		customers += uint64(res.Summary.Requests.Offered)
		events += m.eng.Events()
	}
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(customers)/b.Elapsed().Seconds(), "requests/s")
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(events), "allocs/event")
}

// floorEvent is the hand-specialized M/M/1 loop's event: an arrival or a
// departure. floorHeap is a binary min-heap of them by value, written out
// (no container/heap interface boxing), so the floor allocates nothing.
type floorEvent struct {
	at     float64
	arrive bool
}

type floorHeap []floorEvent

func (h *floorHeap) push(ev floorEvent) {
	*h = append(*h, ev)
	a := *h
	for j := len(a) - 1; j > 0; {
		i := (j - 1) / 2
		if a[i].at <= a[j].at {
			break
		}
		a[i], a[j] = a[j], a[i]
		j = i
	}
}

func (h *floorHeap) pop() floorEvent {
	a := *h
	top := a[0]
	n := len(a) - 1
	a[0] = a[n]
	a = a[:n]
	for i := 0; ; {
		l := 2*i + 1
		if l >= n {
			break
		}
		j := l
		if r := l + 1; r < n && a[r].at < a[l].at {
			j = r
		}
		if a[i].at <= a[j].at {
			break
		}
		a[i], a[j] = a[j], a[i]
		i = j
	}
	*h = a
	return top
}

// floorTimeout is the per-customer timeout, in seconds, of benchmark
// scenario sc's single attempt (the client timeout cut to the deadline), or
// 0 for none.
func floorTimeout(sc *topology.Scenario) float64 {
	t := sc.Workload.Client.Timeout
	if dl := sc.Workload.Deadline; dl > 0 && (t == 0 || dl < t) {
		t = dl
	}
	return t.Seconds()
}

// floorMM1Timeouts is floorMM1 where each customer's caller also gives up
// after timeout seconds (0: never), as a hand-specialized loop would do it:
// the timers all have one duration, so they expire in arrival order, that of
// the FIFO itself; the next one to fire is the oldest customer's whose timer
// neither fired nor was cancelled by its departure, checked against the
// heap's top before each event. A customer whose timer fired is still served
// (the server does not cancel) but not counted as served. It returns the
// customers served in time, their mean sojourn, and those timed out. Its
// arrival case repeats floorMM1's on purpose: a helper the compiler does
// not inline would slow the floors, and floorMM1 is issue 14's reference.
func floorMM1Timeouts(lambda, mu, d, timeout float64, r *rand.Rand, h *floorHeap, fifo []float64) (int, float64, int) {
	if timeout <= 0 {
		n, w := floorMM1(lambda, mu, d, r, h, fifo)
		return n, w, 0
	}
	*h = (*h)[:0]
	fifo = fifo[:0]
	head, armed := 0, 0 // fifo[armed:] have their timers running
	h.push(floorEvent{at: r.ExpFloat64() / lambda, arrive: true})
	served, timedOut, sum, busy := 0, 0, 0.0, false
	for len(*h) > 0 {
		if armed < len(fifo) && fifo[armed]+timeout < (*h)[0].at {
			timedOut++
			armed++
			continue
		}
		ev := h.pop()
		switch {
		case ev.arrive:
			if next := ev.at + r.ExpFloat64()/lambda; next < d {
				h.push(floorEvent{at: next, arrive: true})
			}
			fifo = append(fifo, ev.at)
			if !busy {
				busy = true
				h.push(floorEvent{at: ev.at + r.ExpFloat64()/mu})
			}
		default:
			if head < armed { // its timer fired: the caller has gone
			} else {
				sum += ev.at - fifo[head]
				served++
				armed = head + 1 // cancel its timer
			}
			head++
			if head == len(fifo) {
				fifo, head, armed = fifo[:0], 0, 0
			}
			if head < len(fifo) {
				h.push(floorEvent{at: ev.at + r.ExpFloat64()/mu})
			} else {
				busy = false
			}
		}
	}
	return served, sum / float64(served), timedOut
}

// floorMM1 simulates an M/M/1 queue for d seconds with no engine and no
// policies — a heap of typed events and a switch — and returns the number
// of customers served and their mean sojourn time.
func floorMM1(lambda, mu, d float64, r *rand.Rand, h *floorHeap, fifo []float64) (int, float64) {
	*h = (*h)[:0]
	fifo = fifo[:0]
	head := 0
	h.push(floorEvent{at: r.ExpFloat64() / lambda, arrive: true})
	served, sum, busy := 0, 0.0, false
	for len(*h) > 0 {
		ev := h.pop()
		switch {
		case ev.arrive:
			if next := ev.at + r.ExpFloat64()/lambda; next < d {
				h.push(floorEvent{at: next, arrive: true})
			}
			fifo = append(fifo, ev.at)
			if !busy {
				busy = true
				h.push(floorEvent{at: ev.at + r.ExpFloat64()/mu})
			}
		default:
			sum += ev.at - fifo[head]
			head++
			if head == len(fifo) {
				fifo, head = fifo[:0], 0
			}
			served++
			if head < len(fifo) {
				h.push(floorEvent{at: ev.at + r.ExpFloat64()/mu})
			} else {
				busy = false
			}
		}
	}
	return served, sum / float64(served)
}

// BenchmarkFloorMM1 is the speed limit BenchmarkMM1 is measured against.
func BenchmarkFloorMM1(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	h := &floorHeap{}
	fifo := make([]float64, 0, 1024)
	b.ReportAllocs()
	var customers int
	for b.Loop() {
		n, _ := floorMM1(900, 1000, 100, r, h, fifo)
		customers += n
	}
	b.ReportMetric(float64(customers)/b.Elapsed().Seconds(), "customers/s")
}

func TestFloorMM1MatchesTheory(t *testing.T) {
	_, w := floorMM1(500, 1000, 200, rand.New(rand.NewPCG(1, 1)), &floorHeap{}, nil)
	require.InDelta(t, 0.002, w, 0.0002) // W = 1/(μ−λ); a sanity check of the floor, not of the model
}

// TestFloorMM1TimeoutsMatchesTheory checks the timeout floor against the
// M/M/1 sojourn law: a sojourn is exponential with rate μ−λ, so a timeout τ
// is exceeded with probability e^{−(μ−λ)τ}. At λ = 900, μ = 1000, τ = 20ms
// that is e^{−2} = 0.1353 of the n ≈ 180k customers; customers are
// correlated through the queue, so the tolerance is 10 binomial standard
// deviations (√(n p(1−p)) ≈ 145), 0.008 in the fraction. Those served in
// time have a sojourn S < τ, of mean 1/(μ−λ) − τe^{−2}/(1−e^{−2}) = 6.87ms;
// over 20 seeds that mean's standard deviation is 0.13ms (the queue's
// autocorrelation at ρ = 0.9), so 0.5ms is about 4 of them.
// The same seed with no timeout must serve exactly floorMM1's customers.
func TestFloorMM1TimeoutsMatchesTheory(t *testing.T) {
	served, w, out := floorMM1Timeouts(900, 1000, 200, 0.02, rand.New(rand.NewPCG(1, 1)), &floorHeap{}, nil)
	n := served + out
	p := math.Exp(-2)
	require.InDelta(t, p, float64(out)/float64(n), 10*math.Sqrt(p*(1-p)/float64(n)))
	require.InDelta(t, 0.01-0.02*p/(1-p), w, 0.0005)
	all, _ := floorMM1(900, 1000, 200, rand.New(rand.NewPCG(1, 1)), &floorHeap{}, nil)
	require.Equal(t, all, n)
}

// TestMemoryIsFlatInDuration runs the same scenario for 10s and 100s of
// simulated time: the allocations made while simulating must not grow with
// the number of requests (pools are reused, results are streamed), only
// the per-interval rows of the time series do.
func TestMemoryIsFlatInDuration(t *testing.T) {
	for _, tt := range []struct {
		name     string
		scenario func(time.Duration) *topology.Scenario
	}{{"mm1", benchMM1}, {"mm1-timeouts", benchMM1Timeouts}} {
		t.Run(tt.name, func(t *testing.T) {
			measure := func(d time.Duration) (mallocs, bytes uint64, events uint64) {
				sc := tt.scenario(d)
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				res, err := Run(context.Background(), sc, Options{})
				require.NoError(t, err)
				runtime.ReadMemStats(&after)
				require.Positive(t, res.Summary.Requests.Succeeded)
				return after.Mallocs - before.Mallocs, after.TotalAlloc - before.TotalAlloc, uint64(res.Summary.Requests.Succeeded)
			}
			// A first run fills the pool of latency count arrays, so the two
			// measured runs both reuse them and compare like with like.
			measure(time.Second)
			m10, b10, n10 := measure(10 * time.Second)
			m100, b100, n100 := measure(100 * time.Second)
			t.Logf("10s: %d requests, %d mallocs, %d bytes; 100s: %d requests, %d mallocs, %d bytes", n10, m10, b10, n100, m100, b100)
			require.Greater(t, n100, 9*n10)
			// 90 more intervals add one row each (a few allocations); per request
			// there must be none.
			perReq := float64(m100-m10) / float64(n100-n10)
			require.Less(t, perReq, 0.01, "allocations per extra request")
			// Bytes: the extra 90 intervals' rows (and their slices' doubling) are
			// a few hundred KB at most; a record kept per request would cost at
			// least its size (the smallest, an attempt, is over 64 bytes) for every
			// one of the 81k extra requests. Allow well under one such record each.
			require.Greater(t, unsafe.Sizeof(attempt{}), uintptr(64))
			perReqBytes := float64(int64(b100)-int64(b10)) / float64(n100-n10)
			require.Less(t, perReqBytes, 16.0, "bytes allocated per extra request")
		})
	}
}
