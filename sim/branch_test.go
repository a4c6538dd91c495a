package sim

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stormsim/stormsim/experiments"
	"github.com/stormsim/stormsim/topology"
)

// branchScenario is a retrying chain with timeouts, jittered backoff and a
// budget: state in every part of the model that a snapshot must restore.
const branchScenario = `name: branch
seed: 3
duration: 4s
workload:
  entry: front
  rate: 300
  deadline: 2s
  client:
    timeout: 300ms
    retry: {max_attempts: 3, backoff: {initial: 10ms, jitter: full}}
services:
  - name: front
    workers: 4
    queue: 50
    service_time: {dist: exponential, mean: 5ms}
    calls:
      - to: back
        timeout: 50ms
        retry: {max_attempts: 2}
        budget: {ratio: 0.2}
  - name: back
    workers: 2
    queue: 20
    service_time: {dist: lognormal, p50: 4ms, p99: 30ms}
`

func branchSc(t *testing.T) *topology.Scenario {
	t.Helper()
	sc, err := topology.Parse("branch.yaml", []byte(branchScenario), nil)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// trace steps t to end and records, after each instant, the time and the
// state the level gauges read.
func trace(t *Trajectory, end time.Duration) []int64 {
	var out []int64
	for t.Step(end) {
		out = append(out, int64(t.Now()), int64(t.System(0)), int64(t.Queue(1)), int64(t.Inflight()), t.Attempts(1))
	}
	return out
}

func state(t *Trajectory) []int64 {
	return []int64{int64(t.Now()), int64(t.System(0)), int64(t.System(1)), int64(t.Queue(1)), int64(t.Inflight()), t.Attempts(0), t.Attempts(1)}
}

// TestResumeRestoresTheState checks that resuming a snapshot rebuilds the
// exact state it names, through two generations of branching, and that the
// replay is counted.
func TestResumeRestoresTheState(t *testing.T) {
	sc := branchSc(t)
	root, err := Start(sc)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	trace(root, time.Second)
	snap := root.Snapshot()
	want := state(root)
	child, err := Resume(snap, 11)
	if err != nil {
		t.Fatal(err)
	}
	defer child.Close()
	if got := state(child); !slices.Equal(got, want) {
		t.Fatalf("resumed state %v, want %v", got, want)
	}
	if child.Replayed() != root.Events() || child.Events() != root.Events() {
		t.Errorf("replayed %d events (total %d), the root ran %d", child.Replayed(), child.Events(), root.Events())
	}
	trace(child, 2*time.Second)
	snap2 := child.Snapshot()
	want2 := state(child)
	grand, err := Resume(snap2, 12)
	if err != nil {
		t.Fatal(err)
	}
	defer grand.Close()
	if got := state(grand); !slices.Equal(got, want2) {
		t.Fatalf("second-generation state %v, want %v", got, want2)
	}
	if snap2.At() > 2*time.Second {
		t.Errorf("snapshot at %v, past the end it was stepped to", snap2.At())
	}
}

// TestResumeIsDeterministicAndFresh checks that one snapshot resumed with
// one seed continues identically, and with another seed differently.
func TestResumeIsDeterministicAndFresh(t *testing.T) {
	sc := branchSc(t)
	root, err := Start(sc)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	trace(root, 500*time.Millisecond)
	snap := root.Snapshot()
	run := func(seed uint64) []int64 {
		c, err := Resume(snap, seed)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return trace(c, 2*time.Second)
	}
	a, b, c := run(5), run(5), run(6)
	if len(a) == 0 || !slices.Equal(a, b) {
		t.Fatalf("two resumptions with seed 5 differ (%d and %d values)", len(a), len(b))
	}
	if slices.Equal(a, c) {
		t.Fatal("resumptions with seeds 5 and 6 ran identically: the streams were not reseeded")
	}
	// The original continues as it would have without the snapshot.
	rest := trace(root, 2*time.Second)
	whole, err := Start(sc)
	if err != nil {
		t.Fatal(err)
	}
	defer whole.Close()
	full := trace(whole, 2*time.Second)
	if !slices.Equal(full[len(full)-len(rest):], rest) {
		t.Fatal("taking a snapshot changed the run it was taken from")
	}
}

// TestTrajectoryMatchesRun checks that a trajectory driven an instant at a
// time runs the same events as Run does.
func TestTrajectoryMatchesRun(t *testing.T) {
	data, ok := experiments.Lookup("retry-storm")
	if !ok {
		t.Fatal("no retry-storm experiment")
	}
	sc, err := topology.Parse("retry-storm.yaml", data, []string{"duration=5s", "warmup=0s"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := build(sc)
	if err != nil {
		t.Fatal(err)
	}
	m.run(context.Background(), Options{})
	tr, err := Start(sc)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	for tr.Step(1 << 62) {
	}
	if tr.Events() != m.eng.Events() {
		t.Errorf("trajectory ran %d events, Run %d", tr.Events(), m.eng.Events())
	}
}
