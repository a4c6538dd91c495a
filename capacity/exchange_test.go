package capacity

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stormsim/stormsim/analysis"
)

func TestShardedSearchMatchesUnsharded(t *testing.T) {
	// Three shards sharing a directory reach exactly the unsharded outcome,
	// and between them run each run once.
	s := Search{Param: "workload.rate", Lo: 100, Hi: 900, Resolution: 10, Replicas: 4, SLO: fakeSLO(), Orientation: HoldsBelow,
		Detector: analysis.DetectorConfig{RecoveryBound: 5 * time.Second}}
	build := fakeBuilder(true, 300)
	var solo atomic.Int64
	want, err := Run(context.Background(), fakeRunner(0.1, &solo), build, s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	text := func(o *Outcome) string {
		var b strings.Builder
		if err := (&Report{Scenario: "fake", Param: s.Param, Current: 500, Capacity: o}).WriteText(&b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	parent := t.TempDir()
	const n = 3
	var calls atomic.Int64
	outs := make([]*Outcome, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := &DirExchange{Parent: parent, Index: i, Count: n, Poll: time.Millisecond, Wait: 10 * time.Second}
			outs[i], errs[i] = Run(context.Background(), fakeRunner(0.1, &calls), build, s, Options{Workers: 1, Exchange: x})
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("shard %d: %v", i, errs[i])
		}
		if got := text(outs[i]); got != text(want) {
			t.Errorf("shard %d's report differs from the unsharded one:\n%s\n--- want\n%s", i, got, text(want))
		}
	}
	if calls.Load() != solo.Load() || outs[0].Runs != want.Runs {
		t.Errorf("shards ran %d runs (outcome says %d), unsharded %d", calls.Load(), outs[0].Runs, solo.Load())
	}
	if m, _ := filepath.Glob(filepath.Join(parent, "shard-*", "capacity-runs", "step-*.json")); len(m) != n*(outs[0].Steps+1) {
		t.Errorf("%d step files, want %d", len(m), n*(outs[0].Steps+1))
	}
}

func TestDirExchangeMissingShard(t *testing.T) {
	// A shard that never reports makes the others fail, naming it, after
	// the wait.
	x := &DirExchange{Parent: t.TempDir(), Index: 0, Count: 2, Poll: time.Millisecond, Wait: 20 * time.Millisecond}
	s := Search{Param: "workload.rate", Lo: 100, Hi: 900, Replicas: 2, SLO: fakeSLO()}
	_, err := Run(context.Background(), fakeRunner(0, nil), fakeBuilder(false, math.Inf(1)), s, Options{Exchange: x})
	if err == nil || !strings.Contains(err.Error(), "shard 1/2: no results for step-0") {
		t.Errorf("error %v, want shard 1/2 named", err)
	}
	if err := (&DirExchange{Index: 2, Count: 2}).Validate(); err == nil {
		t.Error("shard 2/2 validated")
	}
}

func TestMergeShards(t *testing.T) {
	dir := t.TempDir()
	write := func(shard, name, content string) {
		p := filepath.Join(dir, shard, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, sh := range []string{"shard-0", "shard-1"} {
		write(sh, "capacity.json", `{"same":true}`)
		write(sh, "capacity.txt", "report\n")
		write(sh, PlotSLO+".png", "png")
		write(sh, PlotUtilization+".png", "png")
	}
	dirs := []string{filepath.Join(dir, "shard-0"), filepath.Join(dir, "shard-1")}
	if !IsShardDir(dirs[0]) || IsShardDir(dir) {
		t.Error("IsShardDir")
	}
	files, err := MergeShards(dirs, filepath.Join(dir, "merged"))
	if err != nil || len(files) != 4 {
		t.Fatalf("merge: %v %v", files, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "merged", "capacity.txt")); string(b) != "report\n" {
		t.Errorf("merged report %q", b)
	}
	write("shard-1", "capacity.json", `{"same":false}`)
	if _, err := MergeShards(dirs, filepath.Join(dir, "merged2")); err == nil || !strings.Contains(err.Error(), "different outcome") {
		t.Errorf("differing shards: %v", err)
	}
	write("shard-1", "capacity.json", `{"same":true}`)
	if _, err := MergeShards(append(dirs, filepath.Join(dir, "shard-2")), filepath.Join(dir, "merged3")); err == nil || !strings.Contains(err.Error(), "shard-2: not a finished capacity shard") {
		t.Errorf("missing shard: %v", err)
	}
}

func TestDirExchangeResume(t *testing.T) {
	// Run both shards once; run shard 0 again: it recalls every step it
	// shared and runs nothing, reaching the same outcome.
	s := Search{Param: "workload.rate", Lo: 100, Hi: 900, Resolution: 20, Replicas: 2, SLO: fakeSLO(), Orientation: HoldsBelow}
	parent := t.TempDir()
	var wg sync.WaitGroup
	outs := make([]*Outcome, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := &DirExchange{Parent: parent, Index: i, Count: 2, Poll: time.Millisecond, Wait: 10 * time.Second}
			var err error
			if outs[i], err = Run(context.Background(), fakeRunner(0.1, nil), fakeBuilder(false, math.Inf(1)), s, Options{Exchange: x}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	var calls atomic.Int64
	x := &DirExchange{Parent: parent, Index: 0, Count: 2, Poll: time.Millisecond, Wait: time.Second}
	again, err := Run(context.Background(), fakeRunner(0.1, &calls), fakeBuilder(false, math.Inf(1)), s, Options{Exchange: x})
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 0 || again.Answer() != outs[0].Answer() || again.Runs != outs[0].Runs {
		t.Errorf("rerun: %d runs, %+v; want 0 and %+v", calls.Load(), again.Answer(), outs[0].Answer())
	}
}
