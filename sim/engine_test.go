package sim

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/stormsim/stormsim/model"
	"github.com/stretchr/testify/require"
)

func record(e *Engine, arg any) {
	l := arg.(*[]int)
	*l = append(*l, int(e.Now()))
}

func TestEngineOrdersByTimeThenSequence(t *testing.T) {
	e := NewEngine()
	var got []string
	add := func(at time.Duration, name string) {
		e.At(at, func(*Engine, any) { got = append(got, name) }, nil)
	}
	add(3, "c")
	add(1, "a1")
	add(2, "b")
	add(1, "a2")
	add(1, "a3")
	e.Run()
	require.Equal(t, []string{"a1", "a2", "a3", "b", "c"}, got)
	require.Equal(t, time.Duration(3), e.Now())
	require.EqualValues(t, 5, e.Events())
}

// TestEngineRandomScheduleAndCancel checks the heap against a sorted
// reference under random scheduling and cancellation.
func TestEngineRandomScheduleAndCancel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 50; trial++ {
		e := NewEngine()
		var got []int
		type sched struct {
			at    int
			timer Timer
			live  bool
		}
		var all []*sched
		for i := 0; i < 500; i++ {
			at := r.IntN(1000)
			s := &sched{at: at, live: true}
			s.timer = e.At(time.Duration(at), record, &got)
			all = append(all, s)
			if r.IntN(3) == 0 {
				v := all[r.IntN(len(all))]
				stopped := e.Stop(v.timer)
				require.Equal(t, v.live, stopped)
				v.live = false
			}
		}
		var want []int
		for _, s := range all {
			if s.live {
				want = append(want, s.at)
			}
		}
		slices.Sort(want)
		e.Run()
		require.Equal(t, want, got)
		for _, s := range all {
			require.False(t, e.Stop(s.timer), "stop after run must be a no-op")
		}
	}
}

func TestEngineStaleTimerDoesNotCancelReusedRecord(t *testing.T) {
	e := NewEngine()
	var got []int
	t1 := e.At(1, record, &got)
	e.Run()
	t2 := e.At(2, record, &got) // reuses t1's record
	require.False(t, e.Stop(t1))
	e.Run()
	require.Equal(t, []int{1, 2}, got)
	require.False(t, e.Stop(t2))
}

func TestEngineRunUntilAdvancesClock(t *testing.T) {
	e := NewEngine()
	var got []int
	e.At(5, record, &got)
	e.At(15, record, &got)
	e.RunUntil(10)
	require.Equal(t, []int{5}, got)
	require.Equal(t, time.Duration(10), e.Now())
	require.Equal(t, 1, e.Pending())
	e.Run()
	require.Equal(t, []int{5, 15}, got)
}

func TestEngineSchedulingInThePastPanics(t *testing.T) {
	e := NewEngine()
	e.At(10, func(*Engine, any) {}, nil)
	e.Run()
	require.Panics(t, func() { e.At(5, record, nil) })
}

func TestEngineHalt(t *testing.T) {
	e := NewEngine()
	n := 0
	var tick Handler
	tick = func(e *Engine, _ any) {
		n++
		if n == 3 {
			e.Halt()
		}
		e.After(1, tick, nil)
	}
	e.At(0, tick, nil)
	e.Run()
	require.Equal(t, 3, n)
}

func TestStreamsAreIndependentAndReproducible(t *testing.T) {
	a1, a2, b := model.Stream(1, "svc/a"), model.Stream(1, "svc/a"), model.Stream(1, "svc/b")
	x, y, z := a1.Uint64(), a2.Uint64(), b.Uint64()
	require.Equal(t, x, y)
	require.NotEqual(t, x, z)
	require.NotEqual(t, x, model.Stream(2, "svc/a").Uint64())
}

func BenchmarkEngineScheduleRun(b *testing.B) {
	e := NewEngine()
	fn := Handler(func(e *Engine, arg any) {})
	r := rand.New(rand.NewPCG(1, 1))
	for i := 0; i < 1000; i++ {
		e.At(time.Duration(r.IntN(1000)), fn, nil)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e.At(e.Now()+time.Duration(r.IntN(1000)), fn, nil)
		at, _ := e.NextAt()
		e.RunUntil(at)
	}
}

// TestEngineLanesKeepTheHeapOrder drives two engines with the same random
// operations, one scheduling on lanes (fixed delays, deadlines that may go
// back, so some fall back to the heap) and one with At only: the events
// must run in the same order at the same times, and Stop, Pending and
// NextAt must agree, whatever was stopped (lane heads, entries behind them,
// already-run and stale timers).
func TestEngineLanesKeepTheHeapOrder(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3, 4, 5} {
		r := rand.New(rand.NewPCG(seed, 7))
		lanes := make([]Lane, 3)
		delays := []time.Duration{50, 200, 0} // lane 2: random times
		eng := [2]*Engine{NewEngine(), NewEngine()}
		var got [2][]int
		var timers [2][]Timer
		fire := [2]Handler{
			func(e *Engine, a any) { got[0] = append(got[0], a.(int), int(e.Now())) },
			func(e *Engine, a any) { got[1] = append(got[1], a.(int), int(e.Now())) },
		}
		id := 0
		for step := 0; step < 3000; step++ {
			switch op := r.IntN(10); {
			case op < 6: // schedule
				l := r.IntN(len(lanes))
				at := eng[0].Now() + delays[l]
				if delays[l] == 0 {
					at = eng[0].Now() + time.Duration(r.IntN(300))
				}
				id++
				timers[0] = append(timers[0], eng[0].AtLane(&lanes[l], at, fire[0], id))
				timers[1] = append(timers[1], eng[1].At(at, fire[1], id))
			case op < 9 && len(timers[0]) > 0: // stop any timer, live or not
				i := r.IntN(len(timers[0]))
				require.Equal(t, eng[1].Stop(timers[1][i]), eng[0].Stop(timers[0][i]), "seed %d step %d: Stop", seed, step)
			default:
				end := eng[0].Now() + time.Duration(r.IntN(100))
				eng[0].RunUntil(end)
				eng[1].RunUntil(end)
			}
			require.Equal(t, eng[1].Pending(), eng[0].Pending(), "seed %d step %d: Pending", seed, step)
			n1, ok1 := eng[1].NextAt()
			n0, ok0 := eng[0].NextAt()
			require.Equal(t, ok1, ok0)
			require.Equal(t, n1, n0, "seed %d step %d: NextAt", seed, step)
		}
		eng[0].Run()
		eng[1].Run()
		require.Equal(t, got[1], got[0], "seed %d: order of events", seed)
		require.Equal(t, eng[1].Events(), eng[0].Events())
		require.Greater(t, len(got[0]), 1000, "seed %d: too few events ran to compare", seed)
		require.Equal(t, 0, eng[0].Pending())
	}
}

// TestEngineLaneHoldsOneHeapEntry: however many timers wait on a lane, and
// however many of them were stopped, only its head is in the heap, and the
// stopped ones never run.
func TestEngineLaneHoldsOneHeapEntry(t *testing.T) {
	e := NewEngine()
	var l Lane
	var got []int
	var ts []Timer
	for i := range 1000 {
		e.At(time.Duration(i), func(*Engine, any) {}, nil) // time moves on
		e.RunUntil(time.Duration(i))
		ts = append(ts, e.AtLane(&l, time.Duration(i)+10000, record, &got))
		require.Len(t, e.heap, 1, "after %d lane timers", i+1)
	}
	for i, tm := range ts {
		if i%10 != 9 {
			require.True(t, e.Stop(tm))
		}
	}
	require.Len(t, e.heap, 1, "stopped lane timers stay out of the heap")
	require.Equal(t, 100, e.Pending())
	e.Run()
	require.Len(t, got, 100)
	for i, at := range got {
		require.Equal(t, 10000+10*i+9, at)
	}
}

// TestEventRecordFillsOneCacheLine pins the event record at 64 bytes: every
// event reads and writes its record, and a field more would put it on two
// cache lines.
func TestEventRecordFillsOneCacheLine(t *testing.T) {
	require.Equal(t, uintptr(64), unsafe.Sizeof(event{}))
}

// TestAtNextRunsInAtOrder drives a source of events that schedules its
// next one as each runs (AtNext), beside events with At that each schedule
// one more at a random later time, some at the same instants: the order of
// what runs, and NextAt and Pending along the way, must be those of the
// same schedule made with At alone.
func TestAtNextRunsInAtOrder(t *testing.T) {
	for trial := range 30 {
		type entry struct {
			at   time.Duration
			name string
		}
		run := func(useNext bool) (got []entry, nexts []time.Duration, pend []int) {
			r := rand.New(rand.NewPCG(uint64(trial), 3))
			e := NewEngine()
			var src func(*Engine, any)
			n := 0
			src = func(e *Engine, _ any) {
				got = append(got, entry{e.Now(), "src"})
				if n++; n < 200 {
					at := e.Now() + time.Duration(r.IntN(4)) // ties with the others
					if useNext {
						e.AtNext(at, src, nil)
					} else {
						e.At(at, src, nil)
					}
				}
			}
			var other func(*Engine, any)
			other = func(e *Engine, arg any) {
				k := arg.(int)
				got = append(got, entry{e.Now(), "other"})
				if k < 300 {
					e.At(e.Now()+time.Duration(r.IntN(6)), other, k+10)
				}
			}
			if useNext {
				e.AtNext(0, src, nil)
			} else {
				e.At(0, src, nil)
			}
			for k := range 10 {
				e.At(time.Duration(k), other, k)
			}
			for {
				at, ok := e.NextAt()
				if !ok {
					break
				}
				nexts, pend = append(nexts, at), append(pend, e.Pending())
				e.RunUntil(at)
			}
			return got, nexts, pend
		}
		got, nexts, pend := run(true)
		want, wantNexts, wantPend := run(false)
		require.Equal(t, want, got, "trial %d", trial)
		require.Equal(t, wantNexts, nexts, "trial %d", trial)
		require.Equal(t, wantPend, pend, "trial %d", trial)
	}
	e := NewEngine()
	e.AtNext(5, func(*Engine, any) {}, nil)
	require.Panics(t, func() { e.AtNext(6, func(*Engine, any) {}, nil) }, "one pending at a time")
}

// TestEngineRingAndHeapKeepTheOrder schedules events both within the
// ring's window and beyond it, in bursts at one instant larger than a
// bucket holds, and in bucket-sized clusters, stopping some as it goes and
// moving the clock in steps: what runs, when, and NextAt and Pending along
// the way, must be those of a sorted reference list ordered by (time,
// scheduling order).
func TestEngineRingAndHeapKeepTheOrder(t *testing.T) {
	const window = ringSize << ringShift
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 11))
		e := NewEngine()
		type ref struct {
			at   time.Duration
			id   int
			tm   Timer
			live bool
		}
		var pending []*ref // scheduling order
		var got, want []int
		fire := func(e *Engine, a any) { got = append(got, a.(int), int(e.Now())) }
		id := 0
		schedule := func(at time.Duration) {
			id++
			pending = append(pending, &ref{at: at, id: id, tm: e.At(at, fire, id), live: true})
		}
		runRef := func(end time.Duration) {
			live := pending[:0]
			var due []*ref
			for _, p := range pending {
				if p.live && p.at <= end {
					due = append(due, p)
				} else if p.live {
					live = append(live, p)
				}
			}
			slices.SortStableFunc(due, func(a, b *ref) int { return int(a.at - b.at) })
			for _, p := range due {
				want = append(want, p.id, int(p.at))
			}
			pending = live
		}
		for step := 0; step < 1500; step++ {
			now := e.Now()
			switch op := r.IntN(10); {
			case op < 3: // near: within the ring's window
				schedule(now + time.Duration(r.Int64N(window)))
			case op < 4: // beyond the window
				schedule(now + window + time.Duration(r.Int64N(4*window)))
			case op < 5: // a burst at one instant, more than a bucket holds
				at := now + time.Duration(r.Int64N(window))
				for range bucketMax + 3 {
					schedule(at)
				}
			case op < 6: // a cluster within one bucket, in random order
				base := now + time.Duration(r.Int64N(window))&^(1<<ringShift-1)
				for range bucketMax + 2 {
					schedule(base + time.Duration(r.IntN(1<<ringShift)))
				}
			case op < 8 && len(pending) > 0: // stop one, live or not
				p := pending[r.IntN(len(pending))]
				require.Equal(t, p.live, e.Stop(p.tm), "seed %d step %d: Stop", seed, step)
				p.live = false
			default:
				end := now + time.Duration(r.Int64N(2*window))
				e.RunUntil(end)
				runRef(end)
				require.Equal(t, want, got, "seed %d step %d: what ran", seed, step)
			}
			n := 0
			next := time.Duration(-1)
			for _, p := range pending {
				if p.live {
					n++
					if next < 0 || p.at < next {
						next = p.at
					}
				}
			}
			require.Equal(t, n, e.Pending(), "seed %d step %d: Pending", seed, step)
			at, ok := e.NextAt()
			require.Equal(t, n > 0, ok)
			if ok {
				require.Equal(t, next, at, "seed %d step %d: NextAt", seed, step)
			}
		}
		e.Run()
		runRef(1<<63 - 1)
		require.Equal(t, want, got, "seed %d: what ran", seed)
		require.Greater(t, len(got), 2000, "seed %d: too few events ran to compare", seed)
	}
}

// TestEngineLaneDropsStaleFront: timers on a lane stopped in about the
// order they were armed, behind a head that waits far ahead, leave the lane
// holding about the span of its live timers, not every stopped one; and
// what runs is what the same schedule made with At runs.
func TestEngineLaneDropsStaleFront(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 9))
	var l Lane
	eng := [2]*Engine{NewEngine(), NewEngine()}
	var got [2][]int
	fire := [2]Handler{
		func(e *Engine, a any) { got[0] = append(got[0], a.(int), int(e.Now())) },
		func(e *Engine, a any) { got[1] = append(got[1], a.(int), int(e.Now())) },
	}
	tick := func(*Engine, any) {}
	type pair struct{ lane, heap Timer }
	var live []pair
	longest := 0
	for i := range 20000 {
		now := time.Duration(i * 10)
		for k := range eng {
			eng[k].At(now, tick, nil) // time moves on
			eng[k].RunUntil(now)
		}
		live = append(live, pair{eng[0].AtLane(&l, now+1_000_000, fire[0], i), eng[1].At(now+1_000_000, fire[1], i)})
		// Stop the oldest live timers, now and then a younger one first,
		// keeping 50 alive; the last ones run.
		for len(live) > 50 && i < 19900 {
			j := 0
			if r.IntN(4) == 0 {
				j = r.IntN(10)
			}
			p := live[j]
			live = append(live[:j], live[j+1:]...)
			require.Equal(t, eng[1].Stop(p.heap), eng[0].Stop(p.lane))
		}
		longest = max(longest, len(l.q)-l.head)
		require.Equal(t, eng[1].Pending(), eng[0].Pending(), "step %d", i)
	}
	for k := range eng {
		eng[k].Run()
	}
	require.Equal(t, got[1], got[0], "what ran, and when")
	require.Greater(t, len(got[0]), 2*100, "too few timers ran to compare")
	// Without dropping, the lane would hold every timer armed while its
	// head waited (all 20000); with it, the live ones (at most 150 at the
	// end) and the stale entries a lane may keep before a walk (256), plus
	// those behind a live front, stopped out of order (a few).
	require.Less(t, longest, 450, "the lane kept its stale entries")
}
