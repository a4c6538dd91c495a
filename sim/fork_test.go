package sim

import (
	"reflect"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/stormsim/stormsim/experiments"
	"github.com/stormsim/stormsim/topology"
)

// forkScenarios are the branch scenario and every canned experiment,
// shortened: between them they hold state in every part of the model
// (retries, budgets, breakers, hedges, pools, replicas, topics, faults).
func forkScenarios(t *testing.T) map[string]*topology.Scenario {
	t.Helper()
	out := map[string]*topology.Scenario{"branch": branchSc(t)}
	for _, name := range experiments.Names() {
		data, _ := experiments.Lookup(name)
		sc, err := topology.Parse(name+".yaml", data, []string{"duration=2s", "warmup=0s"})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = sc
	}
	return out
}

// ftrace steps t to end and records, after each instant, the time and
// what the level gauges read of every service.
func ftrace(t *Trajectory, end time.Duration) []int64 {
	var out []int64
	for t.Step(end) {
		out = append(out, fstate(t)...)
	}
	return out
}

// fsteps is ftrace over the next n instants at most.
func fsteps(t *Trajectory, end time.Duration, n int) []int64 {
	var out []int64
	for ; n > 0 && t.Step(end); n-- {
		out = append(out, fstate(t)...)
	}
	return out
}

func fstate(t *Trajectory) []int64 {
	out := []int64{int64(t.Now()), int64(t.Inflight()), int64(t.m.eng.Pending())}
	for i := range t.m.services {
		out = append(out, int64(t.System(i)), int64(t.Queue(i)), t.Attempts(i))
	}
	return out
}

// startedTo starts a trajectory of sc and steps it to d; the test closes it.
func startedTo(t *testing.T, sc *topology.Scenario, d time.Duration) *Trajectory {
	t.Helper()
	tr, err := Start(sc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Close)
	ftrace(tr, d)
	return tr
}

// TestForkMatchesResume checks, on every scenario, that a fork continues
// exactly as a resumption of the same state with the same seed (which
// replays the run and is exact by construction), that two forks share
// nothing (the second runs the same after the first has run to the end),
// and that forking leaves the original as it was.
func TestForkMatchesResume(t *testing.T) {
	for name, sc := range forkScenarios(t) {
		t.Run(name, func(t *testing.T) {
			root := startedTo(t, sc, 800*time.Millisecond)
			snap := root.Snapshot()
			f1, err := root.Fork(7)
			if err != nil {
				t.Fatal(err)
			}
			defer f1.Close()
			if f1.Events() != 0 || f1.Replayed() != 0 {
				t.Errorf("a fresh fork counts %d events, %d replayed; want 0", f1.Events(), f1.Replayed())
			}
			a := ftrace(f1, 2*time.Second)
			f2, err := root.Fork(7)
			if err != nil {
				t.Fatal(err)
			}
			defer f2.Close()
			b := ftrace(f2, 2*time.Second)
			r, err := Resume(snap, 7)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			c := ftrace(r, 2*time.Second)
			if len(c) == 0 || !slices.Equal(a, c) {
				t.Fatalf("fork and resumption with one seed differ (%d and %d values)", len(a), len(c))
			}
			if !slices.Equal(a, b) {
				t.Fatal("a second fork ran differently after the first: the forks share state")
			}
			if f1.Events() != r.Events()-r.Replayed() {
				t.Errorf("fork ran %d events, the resumption %d after its replay", f1.Events(), r.Events()-r.Replayed())
			}
			// A fork of a fork is a resumption of the fork's snapshot.
			g, err := f2.Fork(9)
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			rg, err := Resume(f2.Snapshot(), 9)
			if err != nil {
				t.Fatal(err)
			}
			defer rg.Close()
			if !slices.Equal(fstate(g), fstate(rg)) {
				t.Errorf("second-generation fork %v, resumption %v", fstate(g), fstate(rg))
			}
			rest := ftrace(root, 2*time.Second)
			whole, err := Start(sc)
			if err != nil {
				t.Fatal(err)
			}
			defer whole.Close()
			full := ftrace(whole, 2*time.Second)
			if !slices.Equal(full[len(full)-len(rest):], rest) {
				t.Fatal("forking changed the run it was taken from")
			}
		})
	}
}

// TestForkPlansAgainAfterStep checks that a trajectory forked, then
// stepped on, forks its new state and not the one it planned the copy
// of: the second fork continues as a resumption of the new state. A new
// trajectory's planner, taken from those that closed trajectories (the
// earlier subtests') gave back, must plan afresh too.
func TestForkPlansAgainAfterStep(t *testing.T) {
	for name, sc := range forkScenarios(t) {
		t.Run(name, func(t *testing.T) {
			root := startedTo(t, sc, 600*time.Millisecond)
			f, err := root.Fork(5)
			if err != nil {
				t.Fatal(err)
			}
			f.Close()
			before := fstate(root)
			if ftrace(root, time.Second); slices.Equal(before, fstate(root)) {
				root.Step(sc.Duration) // a sparse scenario: one instant more
			}
			if slices.Equal(before, fstate(root)) {
				t.Fatal("the root did not move: the test would not see a stale plan")
			}
			for _, tr := range []*Trajectory{root, startedTo(t, sc, time.Second)} {
				g, err := tr.Fork(7)
				if err != nil {
					t.Fatal(err)
				}
				r, err := Resume(tr.Snapshot(), 7)
				if err != nil {
					t.Fatal(err)
				}
				a, b := fsteps(g, sc.Duration, 500), fsteps(r, sc.Duration, 500)
				g.Close()
				r.Close()
				if len(b) == 0 || !slices.Equal(a, b) {
					t.Fatalf("fork of a later state and its resumption differ (%d and %d values)", len(a), len(b))
				}
			}
		})
	}
}

// TestForkSharesNothing walks the copy a fork makes and fails if any of
// its records, slices or maps is one of the original's (the scenario's
// validated types excepted, which no run writes): a field added to the
// run state, of any type, must be copied or make Fork fail, never be
// shared silently between branches. Records that two independently built
// runs of the scenario share are the scenario's, not state, and exempt.
// It also checks that every type the run state holds is one the copy can
// follow.
func TestForkSharesNothing(t *testing.T) {
	for name, sc := range forkScenarios(t) {
		t.Run(name, func(t *testing.T) {
			root := startedTo(t, sc, 300*time.Millisecond)
			f, err := root.Fork(3)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			other, err := Start(sc)
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()
			// What two runs of the scenario share is the scenario's, not
			// state: the copy shares it too.
			orig, cp, common := reachable(t, root.m), reachable(t, f.m), reachable(t, other.m)
			for a, typ := range cp {
				if _, ok := orig[a]; ok && common[a] == nil {
					t.Errorf("the fork shares a %v with the original", typ)
				}
			}
			if len(cp) < len(orig)/2 {
				t.Errorf("the fork reaches %d records, the original %d", len(cp), len(orig))
			}
		})
	}
	for _, bad := range []reflect.Type{reflect.TypeFor[chan int](), reflect.TypeFor[unsafe.Pointer]()} {
		if kindsFollowed(bad) {
			t.Errorf("%v counted as followed", bad)
		}
	}
	if !kindsFollowed(reflect.TypeFor[run]()) {
		t.Error("the run state holds a type the copy cannot follow (a channel or an unsafe pointer)")
	}
}

// reachable returns the address and type of every block of memory the
// run's state points to, found as Fork finds them.
func reachable(t *testing.T, m *run) map[uintptr]reflect.Type {
	t.Helper()
	c := &cloner{seen: map[uintptr]int{}, funcs: map[unsafe.Pointer]unsafe.Pointer{}, collectFuncs: true,
		// Only the scenario's validated types, written by no run, may be
		// shared: if shared ever exempts more, this walk finds it shared.
		share: func(t reflect.Type) bool { return t.PkgPath() == topologyPath || t.Size() == 0 }}
	c.block(unsafe.Pointer(m), reflect.TypeFor[run](), 1)
	if c.err != nil {
		t.Fatal(c.err)
	}
	out := map[uintptr]reflect.Type{}
	for _, b := range c.blocks {
		out[b.addr] = b.typ
	}
	for k := range c.mapsSeen {
		out[uintptr(k)] = reflect.TypeFor[map[any]any]()
	}
	return out
}

// kindsFollowed reports whether every type reachable from t, through
// fields, elements, keys and pointers, is one Fork copies.
func kindsFollowed(t reflect.Type) bool {
	seen := map[reflect.Type]bool{}
	var ok func(reflect.Type) bool
	ok = func(t reflect.Type) bool {
		if seen[t] || shared(t) {
			return true
		}
		seen[t] = true
		switch t.Kind() {
		case reflect.Chan, reflect.UnsafePointer:
			return false
		case reflect.Pointer, reflect.Slice, reflect.Array:
			return ok(t.Elem())
		case reflect.Map:
			return ok(t.Key()) && ok(t.Elem())
		case reflect.Struct:
			for i := range t.NumField() {
				if !ok(t.Field(i).Type) {
					return false
				}
			}
		}
		return true
	}
	return ok(t)
}

// BenchmarkFork reports the cost of one Fork of a state like those a
// splitting estimate (package collapse) restarts its runs from: an M/M/1
// queue (λ = 600/s, μ = 1000/s, room for 1000) holding 40, reached by
// climbing four places at a time from the forks that got there.
func BenchmarkFork(b *testing.B) {
	// Parsed, as collapse's scenarios are (Parse resolves the policies).
	sc, err := topology.Parse("fork-mm1.yaml", []byte(`name: fork-mm1
seed: 1
duration: 1m
workload: {entry: s, rate: 600}
services:
  - {name: s, workers: 1, queue: 1000, service_time: {dist: exponential, mean: 1ms}}
`), nil)
	if err != nil {
		b.Fatal(err)
	}
	tr := climbTo(b, sc, 40)
	defer tr.Close()
	// again: forks of one state, as splitting restarts several runs from
	// each crossing state (about five at 3.5e-5); first: each fork is the
	// state's first, planning the copy.
	for _, first := range []bool{false, true} {
		b.Run(map[bool]string{false: "again", true: "first"}[first], func(b *testing.B) {
			b.ReportAllocs()
			for i := uint64(0); b.Loop(); i++ {
				if first && tr.forker != nil {
					tr.forker.reset() // as Step does
				}
				f, err := tr.Fork(i)
				if err != nil {
					b.Fatal(err)
				}
				f.Close()
			}
		})
	}
}

// climbTo returns a trajectory of sc holding at least level at service 0,
// found by forking the highest state reached until a fork climbs four
// places from it.
func climbTo(b *testing.B, sc *topology.Scenario, level int) *Trajectory {
	b.Helper()
	cur, err := Start(sc)
	if err != nil {
		b.Fatal(err)
	}
	seed := uint64(1)
	for cur.System(0) < level {
		target := cur.System(0) + 4
		for {
			seed++
			f, err := cur.Fork(seed)
			if err != nil {
				b.Fatal(err)
			}
			for f.Step(sc.Duration) {
				if n := f.System(0); n == 0 || n >= target {
					break
				}
			}
			if f.System(0) >= target {
				cur.Close()
				cur = f
				break
			}
			f.Close()
			if seed > 1_000_000 {
				b.Fatalf("no fork climbed from %d to %d", cur.System(0), target)
			}
		}
	}
	return cur
}
