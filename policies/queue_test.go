package policies

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// queueOp is one step of a queue time script: offer v at at (want admitted),
// or next at at (want served value, or -1 for none, and the shed values).
type queueOp struct {
	at      time.Duration
	offer   bool
	v       int
	inServ  int
	want    int
	wantShd []int
}

func offer(at time.Duration, v int) queueOp { return queueOp{at: at, offer: true, v: v, want: 1} }
func refuse(at time.Duration, v, inService int) queueOp {
	return queueOp{at: at, offer: true, v: v, inServ: inService, want: 0}
}
func next(at time.Duration, want int, shed ...int) queueOp {
	return queueOp{at: at, want: want, wantShd: shed}
}

func runQueueScript(t *testing.T, q *Queue[int], ops []queueOp) {
	t.Helper()
	for i, op := range ops {
		if op.offer {
			got := q.Offer(op.at, op.v, op.inServ)
			if got != (op.want == 1) {
				t.Fatalf("op %d (t=%v): Offer(%d) = %v, want %v", i, op.at, op.v, got, op.want == 1)
			}
			continue
		}
		var shed []int
		v, ok := q.Next(op.at, func(x int) { shed = append(shed, x) })
		if !ok {
			v = -1
		}
		if v != op.want || !slices.Equal(shed, op.wantShd) {
			t.Fatalf("op %d (t=%v): Next = %d shedding %v, want %d shedding %v", i, op.at, v, shed, op.want, op.wantShd)
		}
	}
}

func TestQueueScripts(t *testing.T) {
	tests := []struct {
		name  string
		limit int
		cfg   OverloadConfig
		ops   []queueOp
	}{
		{"fifo", -1, OverloadConfig{}, []queueOp{
			offer(0, 1), offer(0, 2), offer(0, 3), next(0, 1), offer(0, 4), next(0, 2), next(0, 3), next(0, 4), next(0, -1)}},
		{"lifo", -1, OverloadConfig{Discipline: "lifo"}, []queueOp{
			offer(0, 1), offer(0, 2), offer(0, 3), next(0, 3), offer(0, 4), next(0, 4), next(0, 2), next(0, 1), next(0, -1)}},
		{"adaptive lifo: fifo while transient", -1, OverloadConfig{Discipline: "adaptive_lifo"}, []queueOp{
			offer(0, 1), offer(10*milli, 2), offer(20*milli, 3), next(100*milli, 1), next(100*milli, 2)}},
		{"adaptive lifo: lifo under a standing queue", -1, OverloadConfig{Discipline: "adaptive_lifo"}, []queueOp{
			offer(0, 1), offer(10*milli, 2), offer(20*milli, 3), offer(30*milli, 4),
			next(101*milli, 4), next(102*milli, 3),
			// Emptied: the next burst is transient again, served in order.
			next(103*milli, 2), next(104*milli, 1), next(104*milli, -1),
			offer(110*milli, 5), offer(111*milli, 6), next(120*milli, 5)}},
		{"codel: no drops under a transient queue", -1, OverloadConfig{CoDel: &CoDelConfig{}}, []queueOp{
			offer(0, 1), offer(0, 2), offer(0, 3), next(60*milli, 1), next(90*milli, 2), next(100*milli, 3)}},
		{"codel: drops under a standing queue", -1, OverloadConfig{CoDel: &CoDelConfig{Target: 5 * milli, Interval: 100 * milli}}, []queueOp{
			offer(0, 1), offer(50*milli, 2), offer(97*milli, 3), offer(99*milli, 4),
			// At 101 ms the queue has not been empty for > 100 ms: items that
			// waited over 5 ms go (1, 2, 3 waited 101, 51, 4 ms: 3 stays).
			next(101*milli, 3, 1, 2), next(102*milli, 4)}},
		{"codel: interval bounds the wait when not standing", -1, OverloadConfig{CoDel: &CoDelConfig{Target: time.Millisecond, Interval: 50 * milli}}, []queueOp{
			offer(0, 1), next(10*milli, 1), offer(20*milli, 2), offer(40*milli, 3), next(60*milli, 2), next(61*milli, 3)}},
		{"max queue time", -1, OverloadConfig{MaxQueueTime: 30 * milli}, []queueOp{
			offer(0, 1), offer(10*milli, 2), offer(20*milli, 3),
			next(30*milli, 1), next(41*milli, 3, 2), next(41*milli, -1)}},
		{"max queue time with lifo sheds the old first", -1, OverloadConfig{Discipline: "lifo", MaxQueueTime: 30 * milli}, []queueOp{
			offer(0, 1), offer(10*milli, 2), offer(35*milli, 3), next(40*milli, 3, 1), next(50*milli, -1, 2)}},
		{"bounded: full queue refuses", 2, OverloadConfig{}, []queueOp{
			offer(0, 1), offer(0, 2), refuse(0, 3, 0), next(0, 1), offer(0, 3), next(0, 2), next(0, 3)}},
		{"no waiting room", 0, OverloadConfig{}, []queueOp{refuse(0, 1, 0), next(0, -1)}},
		{"concurrency limit counts in service plus queued", -1, OverloadConfig{ConcurrencyLimit: 4}, []queueOp{
			{offer: true, v: 1, inServ: 2, want: 1}, refuse(0, 2, 3), {offer: true, v: 3, inServ: 2, want: 1},
			refuse(0, 4, 2), refuse(0, 4, 0+3)}},
		{"ring wraps and grows", -1, OverloadConfig{}, wrapOps()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := NewQueue[int](tt.limit, tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			runQueueScript(t, q, tt.ops)
		})
	}
}

// wrapOps interleaves offers and nexts so the ring's head wraps, then grows
// the ring past its initial size with items in flight.
func wrapOps() []queueOp {
	var ops []queueOp
	for k := range 10 {
		ops = append(ops, offer(0, 2*k), offer(0, 2*k+1), next(0, k))
	}
	// The queue holds 10..19; 40 more outgrow the initial ring.
	for i := range 40 {
		ops = append(ops, offer(0, 100+i))
	}
	for i := 10; i < 20; i++ {
		ops = append(ops, next(0, i))
	}
	for i := range 40 {
		ops = append(ops, next(0, 100+i))
	}
	return append(ops, next(0, -1))
}

func TestQueueLenAndAdmits(t *testing.T) {
	q, err := NewQueue[string](3, OverloadConfig{ConcurrencyLimit: 5})
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range []string{"a", "b"} {
		if !q.Offer(0, s, 0) {
			t.Fatalf("offer %d refused", i)
		}
	}
	if q.Len() != 2 || !q.Admits(2) || q.Admits(3) {
		t.Fatalf("Len %d, Admits(2) %v, Admits(3) %v; want 2, true, false", q.Len(), q.Admits(2), q.Admits(3))
	}
}

func TestQueueValidate(t *testing.T) {
	tests := []struct {
		cfg  OverloadConfig
		want string
	}{
		{OverloadConfig{Discipline: "random"}, "overload.discipline"},
		{OverloadConfig{ConcurrencyLimit: -1}, "overload.concurrency_limit"},
		{OverloadConfig{MaxQueueTime: -1}, "overload.max_queue_time"},
		{OverloadConfig{CoDel: &CoDelConfig{Target: -1}}, "overload.codel.target"},
		{OverloadConfig{CoDel: &CoDelConfig{Target: time.Second}}, "codel.target: must be below codel.interval"},
		{OverloadConfig{Pushback: &PushbackConfig{PerQueued: -1}}, "overload.pushback.per_queued"},
	}
	for _, tt := range tests {
		_, err := NewQueue[int](-1, tt.cfg)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: error %v, want it to contain %q", tt.cfg, err, tt.want)
		}
	}
}

// TestQueueCancelFreesPlaceAtOnce: a cancelled item stops counting against
// the limit and the concurrency limit immediately, is never served, and
// reaches the drop function exactly once.
func TestQueueCancelFreesPlaceAtOnce(t *testing.T) {
	q, err := NewQueue[int](2, OverloadConfig{ConcurrencyLimit: 3})
	if err != nil {
		t.Fatal(err)
	}
	dead := map[int]bool{}
	var dropped []int
	q.TrackCancelled(func(v int) bool { return dead[v] }, func(v int) { dropped = append(dropped, v) })
	steps := []struct {
		name string
		do   func() bool
		want bool
	}{
		{"offer 1", func() bool { return q.Offer(0, 1, 0) }, true},
		{"offer 2", func() bool { return q.Offer(0, 2, 0) }, true},
		{"offer 3 to a full queue", func() bool { return q.Offer(0, 3, 0) }, false},
		{"cancel 1", func() bool { dead[1] = true; q.Cancel(1); return q.Len() == 1 }, true},
		{"admits with one in service", func() bool { return q.Admits(1) }, true},
		{"offer 3 into the freed place", func() bool { return q.Offer(2, 3, 0) }, true},
		{"offer 4 to a full queue", func() bool { return q.Offer(2, 4, 0) }, false},
		{"serve 2, dropping 1", func() bool { v, ok := q.Next(3, nil); return ok && v == 2 && slices.Equal(dropped, []int{1}) }, true},
		{"cancel 3 empties the queue", func() bool { dead[3] = true; q.Cancel(4); return q.Len() == 0 }, true},
		{"nothing to serve", func() bool { _, ok := q.Next(5, nil); return ok }, false},
		{"3 dropped once", func() bool { return slices.Equal(dropped, []int{1, 3}) }, true},
	}
	for _, st := range steps {
		if got := st.do(); got != st.want {
			t.Fatalf("%s: got %v, want %v", st.name, got, st.want)
		}
	}
}

func TestQueueCancelWithoutTrackingPanics(t *testing.T) {
	q, _ := NewQueue[int](-1, OverloadConfig{})
	q.Offer(0, 1, 0)
	defer func() {
		if recover() == nil {
			t.Fatal("Cancel without TrackCancelled did not panic")
		}
	}()
	q.Cancel(0)
}

// TestQueueCancelledItemsAreShedSilently: a cancelled item that waited too
// long goes to drop, not to shed, and does not hold the queue standing.
func TestQueueCancelledItemsAreShedSilently(t *testing.T) {
	q, _ := NewQueue[int](-1, OverloadConfig{MaxQueueTime: 10 * milli})
	dead := map[int]bool{1: true}
	var dropped, shed []int
	q.TrackCancelled(func(v int) bool { return dead[v] }, func(v int) { dropped = append(dropped, v) })
	q.Offer(0, 1, 0)
	q.Offer(0, 2, 0)
	q.Offer(15*milli, 3, 0)
	q.Cancel(1 * milli)
	v, ok := q.Next(20*milli, func(v int) { shed = append(shed, v) })
	if !ok || v != 3 || !slices.Equal(dropped, []int{1}) || !slices.Equal(shed, []int{2}) {
		t.Fatalf("Next = %d, %v; dropped %v, shed %v; want 3, true, [1], [2]", v, ok, dropped, shed)
	}
}

// TestQueueCancelKeepsRingBounded: under LIFO the oldest items are never
// reached, so cancelled ones there leave only by compaction; the ring must
// stay within a small multiple of the live items.
func TestQueueCancelKeepsRingBounded(t *testing.T) {
	q, _ := NewQueue[int](-1, OverloadConfig{Discipline: LIFO})
	dead := map[int]bool{}
	drops := map[int]int{}
	q.TrackCancelled(func(v int) bool { return dead[v] }, func(v int) { drops[v]++ })
	const live = 100
	for i := range live {
		q.Offer(0, i, 0)
	}
	// Each round queues a newcomer and cancels the oldest live item.
	for i := live; i < 100*live; i++ {
		q.Offer(0, i, 0)
		dead[i-live] = true
		q.Cancel(0)
		if q.Len() != live {
			t.Fatalf("round %d: Len = %d, want %d", i, q.Len(), live)
		}
	}
	if len(q.items) > 4*live {
		t.Fatalf("ring holds %d slots for %d live items", len(q.items), live)
	}
	for v, n := range drops {
		if n != 1 || !dead[v] {
			t.Fatalf("item %d dropped %d times (cancelled: %v)", v, n, dead[v])
		}
	}
	for want := 100*live - 1; want >= 100*live-live; want-- {
		if v, ok := q.Next(0, nil); !ok || v != want {
			t.Fatalf("Next = %d, %v; want %d", v, ok, want)
		}
	}
	if _, ok := q.Next(0, nil); ok || len(drops) != 100*live-live {
		t.Fatalf("after draining: served more, or %d drops, want %d", len(drops), 100*live-live)
	}
}

// FuzzQueue drives a queue without shedding with arbitrary operations —
// offer, serve, cancel the k-th queued item — and compares it with a slice.
func FuzzQueue(f *testing.F) {
	f.Add([]byte{0, 0, 1, 0, 1, 1}, uint8(0), int8(3))
	f.Add([]byte{0, 0, 0, 0, 1, 1, 1, 1, 0}, uint8(1), int8(-1))
	f.Add([]byte{0, 0, 0, 2, 0, 6, 1, 0, 0, 10, 1, 1}, uint8(0), int8(2))
	f.Fuzz(func(t *testing.T, ops []byte, disc uint8, limit int8) {
		lifo := disc%2 == 1
		cfg := OverloadConfig{Discipline: map[bool]Discipline{false: "fifo", true: "lifo"}[lifo]}
		q, err := NewQueue[int](int(limit), cfg)
		if err != nil {
			t.Fatal(err)
		}
		dead := map[int]bool{}
		dropped := map[int]int{}
		q.TrackCancelled(func(v int) bool { return dead[v] }, func(v int) { dropped[v]++ })
		var model []int
		for i, op := range ops {
			switch op % 3 {
			case 0:
				ok := q.Offer(0, i, 0)
				want := limit < 0 || len(model) < int(limit)
				if ok != want {
					t.Fatalf("op %d: Offer = %v, want %v", i, ok, want)
				}
				if ok {
					model = append(model, i)
				}
			case 1:
				v, ok := q.Next(0, nil)
				if len(model) == 0 {
					if ok {
						t.Fatalf("op %d: Next served %d from an empty queue", i, v)
					}
					continue
				}
				var want int
				if lifo {
					want, model = model[len(model)-1], model[:len(model)-1]
				} else {
					want, model = model[0], model[1:]
				}
				if !ok || v != want {
					t.Fatalf("op %d: Next = %d, %v, want %d", i, v, ok, want)
				}
			case 2:
				if len(model) == 0 {
					continue
				}
				k := int(op/3) % len(model)
				dead[model[k]] = true
				q.Cancel(0)
				model = slices.Delete(model, k, k+1)
			}
			if q.Len() != len(model) {
				t.Fatalf("op %d: Len = %d, want %d", i, q.Len(), len(model))
			}
		}
		for v, n := range dropped {
			if n != 1 || !dead[v] {
				t.Fatalf("item %d dropped %d times (cancelled: %v)", v, n, dead[v])
			}
		}
	})
}

func BenchmarkQueue(b *testing.B) {
	for _, d := range []Discipline{"fifo", "lifo", "adaptive_lifo"} {
		b.Run(string(d), func(b *testing.B) {
			q, err := NewQueue[int](1000, OverloadConfig{Discipline: d, CoDel: &CoDelConfig{}, MaxQueueTime: time.Second})
			if err != nil {
				b.Fatal(err)
			}
			shed := func(int) {}
			// Warm the ring to its working size.
			for i := range 64 {
				q.Offer(0, i, 0)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				now := time.Duration(i) * time.Microsecond
				q.Offer(now, i, 0)
				if i%2 == 0 {
					q.Offer(now, i, 0)
				}
				q.Next(now, shed)
				if q.Len() > 32 {
					q.Next(now, shed)
				}
			}
		})
	}
}

func ExampleQueue() {
	q, _ := NewQueue[string](-1, OverloadConfig{Discipline: "adaptive_lifo", CoDel: &CoDelConfig{}})
	for i, name := range []string{"a", "b", "c", "d"} {
		q.Offer(time.Duration(i)*time.Millisecond, name, 0)
	}
	// 150 ms later the queue has been standing for over 100 ms: requests that
	// waited over 5 ms are shed, and what is left is served newest first.
	q.Offer(148*time.Millisecond, "e", 0)
	q.Offer(149*time.Millisecond, "f", 0)
	v, _ := q.Next(150*time.Millisecond, func(s string) { fmt.Print("shed ", s, "; ") })
	fmt.Println("serve", v)
	// Output: shed a; shed b; shed c; shed d; serve f
}

func ExampleQueue_Cancel() {
	q, _ := NewQueue[string](2, OverloadConfig{})
	gone := map[string]bool{}
	q.TrackCancelled(func(s string) bool { return gone[s] }, func(s string) { fmt.Println("dropped", s) })
	q.Offer(0, "a", 0)
	q.Offer(0, "b", 0)
	fmt.Println("c admitted:", q.Offer(0, "c", 0))
	// a's caller gives up: its place is free at once. (The full ring, half
	// cancelled, is compacted to make room for c, which drops a.)
	gone["a"] = true
	q.Cancel(time.Millisecond)
	fmt.Println("c admitted:", q.Offer(time.Millisecond, "c", 0), "len", q.Len())
	v, _ := q.Next(2*time.Millisecond, nil)
	fmt.Println("serve", v)
	// Output:
	// c admitted: false
	// dropped a
	// c admitted: true len 2
	// serve b
}

// TestPlainFifoMatchesTheGeneralPath drives a plain fifo (which takes
// Next's short path) and a fifo whose MaxQueueTime is never reached (which
// takes the general one) through the same script of offers, serves and
// cancellations: served items, Len, Cancelled and Standing must agree.
func TestPlainFifoMatchesTheGeneralPath(t *testing.T) {
	plain, err := NewQueue[int](-1, OverloadConfig{})
	if err != nil {
		t.Fatal(err)
	}
	general, err := NewQueue[int](-1, OverloadConfig{MaxQueueTime: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	// shifted is a plain queue served by Shift whenever it holds live
	// items and no cancelled one, as model.Callee.Pop serves it.
	shifted, err := NewQueue[int](-1, OverloadConfig{})
	if err != nil {
		t.Fatal(err)
	}
	dead := map[int]bool{}
	var dropsP, dropsG, dropsS []int
	plain.TrackCancelled(func(v int) bool { return dead[v] }, func(v int) { dropsP = append(dropsP, v) })
	general.TrackCancelled(func(v int) bool { return dead[v] }, func(v int) { dropsG = append(dropsG, v) })
	shifted.TrackCancelled(func(v int) bool { return dead[v] }, func(v int) { dropsS = append(dropsS, v) })
	var queued []int
	now := time.Duration(0)
	for i := range 2000 {
		now += time.Duration(i%7) * 30 * time.Millisecond
		switch op := (i * 7919) % 10; {
		case op < 5:
			plain.Offer(now, i, 0)
			general.Offer(now, i, 0)
			shifted.Offer(now, i, 0)
			queued = append(queued, i)
		case op < 8:
			vp, okP := plain.Next(now, nil)
			vg, okG := general.Next(now, nil)
			if vp != vg || okP != okG {
				t.Fatalf("step %d: Next = %d, %v on the plain queue, %d, %v on the general one", i, vp, okP, vg, okG)
			}
			var vs int
			okS := shifted.Len() > 0 && shifted.Cancelled() == 0
			if okS {
				vs = shifted.Shift()
			} else {
				vs, okS = shifted.Next(now, nil)
			}
			if vs != vp || okS != okP {
				t.Fatalf("step %d: Shift or Next = %d, %v, Next = %d, %v", i, vs, okS, vp, okP)
			}
			if okP {
				queued = slices.DeleteFunc(queued, func(v int) bool { return v == vp })
			}
		default:
			// Cancel a live queued item, the newest or one in the middle.
			if len(queued) > 0 {
				k := len(queued) - 1
				if i%3 == 0 {
					k /= 2
				}
				dead[queued[k]] = true
				plain.Cancel(now)
				general.Cancel(now)
				shifted.Cancel(now)
				queued = slices.Delete(queued, k, k+1)
			}
		}
		if plain.Len() != general.Len() || plain.Cancelled() != general.Cancelled() || plain.Standing(now) != general.Standing(now) {
			t.Fatalf("step %d: plain Len %d Cancelled %d Standing %v, general %d %d %v", i,
				plain.Len(), plain.Cancelled(), plain.Standing(now), general.Len(), general.Cancelled(), general.Standing(now))
		}
		if shifted.Len() != plain.Len() || shifted.Cancelled() != plain.Cancelled() || shifted.Standing(now) != plain.Standing(now) {
			t.Fatalf("step %d: shifted Len %d Cancelled %d Standing %v, plain %d %d %v", i,
				shifted.Len(), shifted.Cancelled(), shifted.Standing(now), plain.Len(), plain.Cancelled(), plain.Standing(now))
		}
	}
	if !slices.Equal(dropsS, dropsP) {
		t.Fatalf("dropped %v on the shifted queue, %v on the plain one", dropsS, dropsP)
	}
	if !slices.Equal(dropsP, dropsG) {
		t.Fatalf("dropped %v on the plain queue, %v on the general one", dropsP, dropsG)
	}
}
