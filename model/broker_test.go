package model

import (
	"testing"
	"time"

	"github.com/stormsim/stormsim/topology"
)

func newTestGroup(t *testing.T, ack string, ordered, check bool, keys int) *Group {
	t.Helper()
	g, err := NewGroup(&topology.Consume{Topic: "t", Concurrency: 2, MaxDeliveries: 2, Ack: ack, Ordered: ordered, VersionCheck: check}, keys)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// publish commits and publishes one intent, as a dual-write producer does.
func publish(g *Group, key int, seq uint64) *Intent {
	in := NewIntent(key, seq, true)
	g.Publish(in)
	g.Release(in)
	return in
}

// TestGroupDeliveryCycle walks a message through the machine's
// transitions, one table row per path, checking the stats after each.
func TestGroupDeliveryCycle(t *testing.T) {
	for _, tc := range []struct {
		name string
		ack  string
		run  func(g *Group)
		want GroupStats
	}{
		{"ack after effect", "after_effect", func(g *Group) {
			d, _, _ := g.Next()
			g.Finish(d, false)
		}, GroupStats{Published: 1, Deliveries: 1, Intents: 1, Effects: 1}},
		{"crash, redelivered, acked", "after_effect", func(g *Group) {
			d, _, _ := g.Next()
			g.Finish(d, true)
			g.Expire(d)
			d, _, _ = g.Next()
			g.Finish(d, false)
		}, GroupStats{Published: 1, Deliveries: 2, Redeliveries: 1, Intents: 1, Effects: 2, DuplicateEffects: 1}},
		{"late ack ignored, dead-lettered", "after_effect", func(g *Group) {
			d1, _, _ := g.Next()
			g.Expire(d1)
			d2, _, _ := g.Next()
			g.Finish(d1, false) // too late: d2 is the awaited delivery
			g.Expire(d2)        // second deadline: max_deliveries reached
			g.Finish(d2, false)
		}, GroupStats{Published: 1, Deliveries: 2, Redeliveries: 1, DeadLettered: 1, Intents: 1, Effects: 2, DuplicateEffects: 1}},
		{"dedup", "transactional_dedup", func(g *Group) {
			d, _, _ := g.Next()
			g.Finish(d, true)
			g.Expire(d)
			d, _, _ = g.Next()
			g.Finish(d, false)
		}, GroupStats{Published: 1, Deliveries: 2, Redeliveries: 1, Intents: 1, Effects: 1}},
		{"ack before effect, crash", "before_effect", func(g *Group) {
			d, acked, _ := g.Next()
			if !acked {
				panic("before_effect: not acked on receipt")
			}
			g.Finish(d, true)
			if g.Expire(d) {
				panic("an acked delivery was redelivered")
			}
		}, GroupStats{Published: 1, Deliveries: 1, Intents: 1, LostEffects: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newTestGroup(t, tc.ack, false, false, 0)
			publish(g, -1, 1)
			tc.run(g)
			// every intent is after warm-up: the raw counts are the counted ones
			tc.want.RawDeliveries, tc.want.RawRedeliveries = tc.want.Deliveries, tc.want.Redeliveries
			if g.Stats != tc.want {
				t.Errorf("stats %+v, want %+v", g.Stats, tc.want)
			}
			if g.Busy() != 0 || g.Backlog() != 0 {
				t.Errorf("busy %d, backlog %d, want 0 and 0", g.Busy(), g.Backlog())
			}
		})
	}
}

// TestGroupWarmup: an intent committed in the warm-up counts in the raw
// delivery counts only.
func TestGroupWarmup(t *testing.T) {
	g := newTestGroup(t, "after_effect", false, false, 0)
	in := NewIntent(-1, 1, false)
	g.Publish(in)
	g.Release(in)
	d, _, _ := g.Next()
	g.Finish(d, true)
	g.Expire(d)
	d, _, _ = g.Next()
	g.Finish(d, false)
	if want := (GroupStats{RawDeliveries: 2, RawRedeliveries: 1}); g.Stats != want {
		t.Errorf("stats %+v, want %+v", g.Stats, want)
	}
}

// TestGroupOrder: two events of one key finishing in reverse order are
// out of order unless the group is ordered (the second waits) or checks
// versions (the older is rejected).
func TestGroupOrder(t *testing.T) {
	for _, tc := range []struct {
		name           string
		ordered, check bool
		outOfOrder     int64
		stale          int64
	}{
		{"unordered", false, false, 1, 0},
		{"ordered", true, false, 0, 0},
		{"version check", false, true, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newTestGroup(t, "after_effect", tc.ordered, tc.check, 1)
			publish(g, 0, 1)
			publish(g, 0, 2)
			d1, _, _ := g.Next()
			d2, _, ok := g.Next()
			if ok == tc.ordered {
				t.Fatalf("second delivery handed out: %v, want %v", ok, !tc.ordered)
			}
			if ok {
				g.Finish(d2, false)
				g.Finish(d1, false)
			} else {
				g.Finish(d1, false)
				d2, _, _ = g.Next()
				g.Finish(d2, false)
			}
			if g.Stats.OutOfOrderEffects != tc.outOfOrder || g.Stats.StaleRejected != tc.stale || g.Stats.LostEffects != 0 {
				t.Errorf("stats %+v, want %d out of order, %d stale, none lost", g.Stats, tc.outOfOrder, tc.stale)
			}
		})
	}
}

func TestOutboxPass(t *testing.T) {
	g := newTestGroup(t, "after_effect", false, false, 0)
	var ob Outbox
	for i := range 3 {
		in := NewIntent(-1, uint64(i+1), true)
		ob.Add(in)
		g.Release(in)
	}
	crashes := 0
	crash := func() bool { crashes++; return true }
	// every row crashes once: each pass publishes the head again (marked
	// sent now) and the next row, then crashes
	for pass := 0; ob.Len() > 0; pass++ {
		if pass > 3 {
			t.Fatal("outbox not drained after 4 passes")
		}
		ob.Pass(g, crash)
	}
	if g.Stats.Published != 6 || crashes != 3 {
		t.Errorf("published %d with %d crashes, want 6 and 3", g.Stats.Published, crashes)
	}
}

func TestCrashProb(t *testing.T) {
	fs := []*topology.Fault{
		{At: 0, For: 10 * time.Second, CrashBetweenEffectAndAck: 0.5},
		{At: 5 * time.Second, For: 10 * time.Second, CrashBetweenEffectAndAck: 0.5, CrashBetweenCommitAndPublish: 1},
	}
	for _, tc := range []struct {
		b    CrashBoundary
		at   time.Duration
		want float64
	}{
		{CrashEffectAck, 1 * time.Second, 0.5},
		{CrashEffectAck, 6 * time.Second, 0.75}, // independent: 1 - 0.5·0.5
		{CrashEffectAck, 15 * time.Second, 0},   // both windows over
		{CrashCommitPublish, 1 * time.Second, 0},
		{CrashCommitPublish, 6 * time.Second, 1},
		{CrashPublishMark, 6 * time.Second, 0},
	} {
		if got := CrashProb(fs, tc.b, tc.at); got != tc.want {
			t.Errorf("CrashProb(%d, %v) = %v, want %v", tc.b, tc.at, got, tc.want)
		}
	}
}

// TestCrashesDrawsOnlyInsideAFault: outside a crash fault's window the
// stream is left untouched (a scenario without crash faults keeps its
// draws), inside a fault of probability 1 it always crashes, and of 0.5
// about half the time (±4σ over 4000 draws).
func TestCrashesDrawsOnlyInsideAFault(t *testing.T) {
	faults := []*topology.Fault{{At: time.Second, For: time.Second, CrashBetweenEffectAndAck: 1}}
	rng, fresh := Stream(1, "c"), Stream(1, "c")
	if Crashes(rng, faults, CrashEffectAck, 0) || Crashes(rng, faults, CrashCommitPublish, 1500*time.Millisecond) {
		t.Fatal("crashed outside its fault")
	}
	if rng.Uint64() != fresh.Uint64() {
		t.Fatal("a draw without an active crash fault moved the stream")
	}
	if !Crashes(rng, faults, CrashEffectAck, 1500*time.Millisecond) {
		t.Fatal("a fault of probability 1 did not crash")
	}
	faults[0].CrashBetweenEffectAndAck = 0.5
	const n = 4000
	hits := 0
	for range n {
		if Crashes(rng, faults, CrashEffectAck, time.Second) {
			hits++
		}
	}
	if d := float64(hits) - n/2; d*d > 16*n/4 {
		t.Fatalf("%d of %d crashed at p = 0.5", hits, n)
	}
}
