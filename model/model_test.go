package model

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stormsim/stormsim/idempotency"
	"github.com/stormsim/stormsim/policies"
	"github.com/stormsim/stormsim/topology"
)

func fp(v float64) *float64 { return &v }

func TestCombine(t *testing.T) {
	for _, tc := range []struct {
		name   string
		faults []*topology.Fault
		want   FaultState
	}{
		{"none", nil, FaultState{Capacity: 1}},
		{"drops are independent", []*topology.Fault{{DropResponse: 0.5}, {DropResponse: 0.5}}, FaultState{Capacity: 1, Drop: 0.75}},
		{"capacities multiply, latencies add", []*topology.Fault{{Capacity: fp(0.5), LatencyAdd: time.Millisecond}, {Capacity: fp(0.5), LatencyAdd: 2 * time.Millisecond}},
			FaultState{Capacity: 0.25, LatencyAdd: 3 * time.Millisecond}},
		{"the last error rate wins", []*topology.Fault{{ErrorRate: fp(0.2)}, {ErrorRate: fp(0.7)}, {}}, FaultState{Capacity: 1, ErrorRate: 0.7, HasErrorRate: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Combine(tc.faults); got != tc.want {
				t.Errorf("Combine = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestEdgeStreamsSeparateRepeatedCalls(t *testing.T) {
	u := EdgeStreams{}
	got := []string{u.Name("gw", "b"), u.Name("gw", "b"), u.Name("gw", "c"), u.Name("x", "b")}
	want := []string{"edge/gw->b", "edge/gw->b#1", "edge/gw->c", "edge/x->b"}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("name %d = %q, want %q", i, got[i], want[i])
		}
	}
}

func service(t *testing.T, cfg topology.Service, commits, keyed bool) *Callee[int] {
	t.Helper()
	if cfg.Name == "" {
		cfg.Name = "s"
	}
	if cfg.ServiceTime.Dist == "" {
		cfg.ServiceTime = topology.Dist{Dist: "constant", Value: 10 * time.Millisecond}
	}
	c, err := NewCallee[int](&cfg, rand.New(rand.NewPCG(1, 1)), commits, keyed)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCalleeAdmission(t *testing.T) {
	q := 1
	c := service(t, topology.Service{Workers: 1, Queue: &q, Overload: policies.OverloadConfig{Pushback: &policies.PushbackConfig{RetryAfter: 50 * time.Millisecond}}}, false, false)
	for i, want := range []Admission{Started, Queued, Rejected} {
		adm, ans := c.Arrive(0, i, false)
		if adm != want {
			t.Fatalf("arrival %d: %v, want %v", i, adm, want)
		}
		if adm == Rejected && (ans.Outcome != policies.Unavailable || ans.RetryAfter <= 0) {
			t.Errorf("full queue answers %+v, want unavailable with a retry-after", ans)
		}
	}
	if adm, ans := c.Arrive(0, 9, true); adm != Rejected || ans.Outcome != policies.Timeout {
		t.Errorf("expired arrival: %v %+v, want rejected as timeout", adm, ans)
	}
}

// TestCalleeSlowdownCountsQueued: with one attempt working and two queued,
// the next to start is slowed by the two others still in flight.
func TestCalleeSlowdownCountsQueued(t *testing.T) {
	c := service(t, topology.Service{Workers: 1, SlowdownPerInflight: time.Millisecond}, false, false)
	for i := range 3 {
		c.Arrive(0, i, false)
	}
	if d, _, _ := c.Begin(0, false, "", 0); d != 12*time.Millisecond {
		t.Errorf("first start with 3 in flight: %v, want 10 ms + 2 × 1 ms", d)
	}
	c.Finish(10*time.Millisecond, Ending{Outcome: policies.OK, Worked: true})
	c.Release()
	if _, ok := c.Next(10*time.Millisecond, nil); !ok {
		t.Fatal("nothing queued to start")
	}
	c.Start()
	if d, _, _ := c.Begin(10*time.Millisecond, false, "", 0); d != 11*time.Millisecond {
		t.Errorf("second start with 2 in flight: %v, want 11 ms", d)
	}
}

// TestCalleeIdempotency: the store's decisions become answers: execute
// once, replay, in progress with the store's retry-after, expired as a
// retryable error.
func TestCalleeIdempotency(t *testing.T) {
	cfg := topology.Service{Workers: 4, Idempotency: &topology.Idempotency{Retention: time.Second, Lease: 100 * time.Millisecond, InProgressRetryAfter: 30 * time.Millisecond}}
	c := service(t, cfg, true, true)
	type work struct {
		fence  uint64
		preset bool
		answer Answer
	}
	begin := func(now time.Duration) work {
		c.Arrive(now, 0, false)
		_, fence, preset := c.Begin(now, true, "k", 1)
		return work{fence, preset, c.PresetAnswer()}
	}
	first := begin(0)
	if first.preset || first.fence == 0 {
		t.Fatalf("first arrival: %+v, want to execute owning the key", first)
	}
	if w := begin(time.Millisecond); !w.preset || w.answer.Outcome != policies.InProgress || w.answer.RetryAfter != 30*time.Millisecond {
		t.Errorf("while working: %+v, want in_progress after 30 ms", w)
	}
	if !c.Finish(10*time.Millisecond, Ending{Outcome: policies.OK, Worked: true, Write: true, Key: "k", Fence: first.fence}) {
		t.Error("the owner's success did not execute the write")
	}
	if w := begin(20 * time.Millisecond); !w.preset || w.answer.Outcome != policies.OK {
		t.Errorf("after the commit: %+v, want a replayed ok", w)
	}
	if w := begin(1500 * time.Millisecond); !w.preset || w.answer.Outcome != policies.Error {
		t.Errorf("after retention: %+v, want error (expired)", w)
	}
}

func TestCalleeErrorClassTimeout(t *testing.T) {
	c := service(t, topology.Service{Workers: 1, ErrorRate: 1, ErrorClass: "timeout"}, false, false)
	if o, ok := c.WorkDone(); ok || o != policies.Timeout {
		t.Errorf("WorkDone = %v, %v; want timeout", o, ok)
	}
}

// TestArrivalsRateStepRestartsThePhase: constant arrivals at 3/s then
// 2/s from 500 ms: the step restarts the process at 500 ms.
func TestArrivalsRateStepRestartsThePhase(t *testing.T) {
	w := &topology.Workload{Arrival: "constant", Rate: 3, Schedule: []topology.RateStep{{At: 500 * time.Millisecond, Rate: 2}}}
	a := NewArrivals(w, 2*time.Second, rand.New(rand.NewPCG(1, 1)))
	var got []time.Duration
	for {
		at, _, ok := a.Next()
		if !ok {
			break
		}
		got = append(got, at)
	}
	want := []time.Duration{0, 333333333, 500 * time.Millisecond, time.Second, 1500 * time.Millisecond}
	if len(got) != len(want) {
		t.Fatalf("arrivals %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("arrival %d at %v, want %v", i, got[i], want[i])
		}
	}
}

// TestArrivalsAtMatchesNext: indexing the process gives the same times
// and writes as iterating it.
func TestArrivalsAtMatchesNext(t *testing.T) {
	w := &topology.Workload{Arrival: "poisson", Rate: 100, WriteFraction: 0.3}
	it := NewArrivals(w, time.Second, rand.New(rand.NewPCG(4, 4)))
	ix := NewArrivals(w, time.Second, rand.New(rand.NewPCG(4, 4)))
	writes := 0
	for n := uint64(0); ; n++ {
		at, write, ok := it.Next()
		at2, ok2 := ix.At(n)
		if ok != ok2 || at != at2 || (ok && ix.Write(n) != write) {
			t.Fatalf("request %d: Next %v %v %v, At %v %v write %v", n, at, write, ok, at2, ok2, ix.Write(n))
		}
		if !ok {
			// 100/s for 1 s: 100 ± 4σ (σ = 10); writes 30 % of them.
			if n < 60 || n > 140 || writes == 0 || writes == int(n) {
				t.Errorf("%d requests, %d writes", n, writes)
			}
			return
		}
		if write {
			writes++
		}
	}
}

// TestCalleeStoreFullIsUnavailableWithoutRetryAfter: a store with no room
// for a new key answers unavailable, with no retry-after (the store is
// full, not busy with this key). No scenario key bounds the store, so the
// machine's store is swapped for a one-record one.
func TestCalleeStoreFullIsUnavailableWithoutRetryAfter(t *testing.T) {
	c := service(t, topology.Service{Workers: 4}, true, true)
	var err error
	if c.store, err = idempotency.NewStore(idempotency.Config{MaxRecords: 1}); err != nil {
		t.Fatal(err)
	}
	c.Arrive(0, 0, false)
	if _, _, preset := c.Begin(0, true, "first", 1); preset {
		t.Fatal("the first key did not execute")
	}
	c.Arrive(0, 1, false)
	if _, _, preset := c.Begin(0, true, "second", 1); !preset {
		t.Fatal("a second key found room in a one-record store")
	}
	if a := c.PresetAnswer(); a != (Answer{Outcome: policies.Unavailable}) {
		t.Errorf("store full: %+v, want unavailable without retry-after", a)
	}
}

// TestRoundNs checks roundNs against math.Round at the edges of its fast
// range and at halves, where truncating x+0.5 could go wrong.
func TestRoundNs(t *testing.T) {
	xs := []float64{0, 0.25, 0.49999999999999994, 0.5, 0.5000000000000001, 1, 1.4999999999999998, 1.5, 2.5,
		1e6 + 0.5, 1e6 + 0.49999999999999, math.Nextafter(1<<52, 0), 1 << 52, 1<<52 + 1, 1 << 60, -0.5, -1.5,
		math.Nextafter(3.5, 0), math.Nextafter(1<<40+0.5, 0), 1<<40 + 0.5}
	r := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		xs = append(xs, r.ExpFloat64()*float64(time.Second)/1000, math.Floor(r.Float64()*1e12)+0.5)
	}
	for _, x := range xs {
		if got, want := roundNs(x), time.Duration(math.Round(x)); got != want {
			t.Fatalf("roundNs(%v) = %d, math.Round gives %d", x, got, want)
		}
	}
}

// TestCalleePopMatchesNext: a callee that serves by Pop where it can, and
// by Next otherwise, hands out the same attempts in the same order as one
// served by Next alone, and Pop declines a queue that is not a plain fifo
// or that holds a cancelled attempt.
func TestCalleePopMatchesNext(t *testing.T) {
	for _, tc := range []struct {
		name     string
		overload policies.OverloadConfig
		cancel   bool // cancel the second queued attempt
		pops     int  // of the 4 queued attempts, those Pop hands out
	}{
		{"plain fifo", policies.OverloadConfig{}, false, 4},
		// Next hands out 1, then drops 2 and hands out 3; 4 is Pop's.
		{"plain fifo with a cancelled attempt", policies.OverloadConfig{}, true, 1},
		{"lifo", policies.OverloadConfig{Discipline: policies.LIFO}, false, 0},
		{"max queue time", policies.OverloadConfig{MaxQueueTime: time.Second}, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := topology.Service{Workers: 1, Overload: tc.overload}
			popped, nexted := service(t, cfg, false, false), service(t, cfg, false, false)
			cancelled := func(v int) bool { return tc.cancel && v == 2 }
			for _, c := range []*Callee[int]{popped, nexted} {
				c.TrackCancelled(cancelled, func(int) {})
				for v := range 5 {
					c.Arrive(0, v, false)
				}
				if tc.cancel {
					c.CancelQueued(0)
				}
			}
			pops := 0
			for step := 0; ; step++ {
				popped.Release()
				nexted.Release()
				if popped.CanStart() != nexted.CanStart() {
					t.Fatalf("step %d: CanStart %v after Pops, %v after Nexts", step, popped.CanStart(), nexted.CanStart())
				}
				if !popped.CanStart() {
					break
				}
				v, ok := popped.Pop()
				if ok {
					pops++
				} else {
					v, ok = popped.Next(0, nil)
				}
				w, okW := nexted.Next(0, nil)
				if v != w || ok != okW {
					t.Fatalf("step %d: %d, %v by Pop or Next, %d, %v by Next", step, v, ok, w, okW)
				}
				if popped.QueueLen() != nexted.QueueLen() {
					t.Fatalf("step %d: QueueLen %d after Pop, %d after Next", step, popped.QueueLen(), nexted.QueueLen())
				}
				if !ok {
					break
				}
				popped.Start()
				nexted.Start()
			}
			if pops != tc.pops {
				t.Errorf("Pop handed out %d attempts, want %d", pops, tc.pops)
			}
		})
	}
}

// TestCalleeEnqueueMatchesArrive: a callee admitting attempts as the
// simulator does (ArriveIdle, then Enqueue where Open holds, then Arrive)
// ends every step in the state of one admitting them by Arrive alone, its
// queue outgrowing its first ring; Open holds only without a queue limit,
// a concurrency limit or a rate limit.
func TestCalleeEnqueueMatchesArrive(t *testing.T) {
	limit := 3
	for _, tc := range []struct {
		name string
		cfg  topology.Service
		open bool
	}{
		{"unbounded fifo", topology.Service{Workers: 2}, true},
		{"lifo", topology.Service{Workers: 2, Overload: policies.OverloadConfig{Discipline: policies.LIFO}}, true},
		{"queue limit", topology.Service{Workers: 2, Queue: &limit}, false},
		{"concurrency limit", topology.Service{Workers: 2, Overload: policies.OverloadConfig{ConcurrencyLimit: 4}}, false},
		{"rate limit", topology.Service{Workers: 2, Overload: policies.OverloadConfig{RateLimit: &policies.RateLimitConfig{MaxTokens: 1000, FillInterval: time.Millisecond}}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fast, slow := service(t, tc.cfg, false, false), service(t, tc.cfg, false, false)
			if fast.Open() != tc.open {
				t.Fatalf("Open = %v, want %v", fast.Open(), tc.open)
			}
			enqueued := 0
			now := time.Duration(0)
			for i := range 60 {
				now += time.Millisecond
				expired := i%11 == 5
				// The simulator's sequence, as in sim's arrive.
				adm := Queued
				switch {
				case fast.ArriveIdle(now, expired):
					adm = Started
				case !expired && fast.Open() && func() bool { fast.Advance(now); return fast.Enqueue(now, i) }():
					enqueued++
				default:
					adm, _ = fast.Arrive(now, i, expired)
				}
				want, _ := slow.Arrive(now, i, expired)
				if adm != want {
					t.Fatalf("arrival %d: %v, want %v", i, adm, want)
				}
				// Serve one every third arrival, so that the queue grows.
				if i%3 == 2 {
					fast.Release()
					slow.Release()
					v, ok := fast.Next(now, nil)
					w, okW := slow.Next(now, nil)
					if v != w || ok != okW {
						t.Fatalf("arrival %d: Next %d, %v, want %d, %v", i, v, ok, w, okW)
					}
					if ok {
						fast.Start()
						slow.Start()
					}
				}
				fb, fq := fast.Areas()
				sb, sq := slow.Areas()
				if fast.QueueLen() != slow.QueueLen() || fast.Busy() != slow.Busy() || fast.Inflight() != slow.Inflight() || fb != sb || fq != sq {
					t.Fatalf("arrival %d: queue %d busy %d inflight %d areas %v %v, want %d %d %d %v %v", i,
						fast.QueueLen(), fast.Busy(), fast.Inflight(), fb, fq, slow.QueueLen(), slow.Busy(), slow.Inflight(), sb, sq)
				}
			}
			if (enqueued > 0) != tc.open {
				t.Errorf("Enqueue queued %d attempts; want some: %v", enqueued, tc.open)
			}
		})
	}
}

// TestCalleeReply: the fate of an answer. Under drop_response 1 every
// answer after work someone waits for is lost — a stored answer too, which
// is an answer after work — and nothing is drawn for a rejection or a
// caller gone.
func TestCalleeReply(t *testing.T) {
	c := service(t, topology.Service{Workers: 1}, false, false)
	if got := c.Reply(true, false); got != Delivered {
		t.Errorf("no fault: %v, want delivered", got)
	}
	c.SetFaults(0, []*topology.Fault{{Service: "s", For: time.Second, DropResponse: 1}})
	for _, tc := range []struct {
		worked, gone bool
		want         Fate
	}{
		{true, false, Lost},
		{false, false, Delivered},
		{true, true, Wasted},
		{false, true, Gone},
	} {
		if got := c.Reply(tc.worked, tc.gone); got != tc.want {
			t.Errorf("Reply(worked %v, gone %v) = %v, want %v", tc.worked, tc.gone, got, tc.want)
		}
	}
}
