package sim

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

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
	a1, a2, b := Stream(1, "svc/a"), Stream(1, "svc/a"), Stream(1, "svc/b")
	x, y, z := a1.Uint64(), a2.Uint64(), b.Uint64()
	require.Equal(t, x, y)
	require.NotEqual(t, x, z)
	require.NotEqual(t, x, Stream(2, "svc/a").Uint64())
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
		e.RunUntil(e.heap[0].at)
	}
}
