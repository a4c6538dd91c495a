package merge_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stormsim/stormsim/merge"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/metrics/metricstest"
	"github.com/stormsim/stormsim/shard"
)

// saveShards saves n parts of one storm run, of run id id, as the shard
// directories of parent, and returns them.
func saveShards(t *testing.T, parent string, n int, id string) []string {
	t.Helper()
	var dirs []string
	for i, p := range metricstest.StormParts(n) {
		p.RunID = id
		d := shard.Dir(parent, i)
		if err := metrics.Save(d, p); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
	}
	return dirs
}

func TestNotReady(t *testing.T) {
	for _, c := range []struct {
		name string
		prep func(t *testing.T, parent string) []string
		run  shard.Run
		want string // "" when ready
	}{
		{"complete", func(t *testing.T, p string) []string { return saveShards(t, p, 2, "storm") }, "", ""},
		{"one missing", func(t *testing.T, p string) []string {
			return append(saveShards(t, p, 1, "storm"), shard.Dir(p, 1))
		}, "", "1 of 2 shard directories are not complete"},
		{"another run's label", func(t *testing.T, p string) []string { return saveShards(t, p, 2, "monday.storm") }, "tuesday", "is from run monday, not from run tuesday"},
		{"interrupted", func(t *testing.T, p string) []string {
			dirs := saveShards(t, p, 2, "storm")
			parts := metricstest.StormParts(2)
			parts[1].RunID, parts[1].Summary.Status = "storm", metrics.StatusInterrupted
			if err := metrics.Save(dirs[1], parts[1]); err != nil {
				t.Fatal(err)
			}
			return dirs
		}, "", "shard-1 was interrupted"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dirs := c.prep(t, t.TempDir())
			why, err := merge.NotReady(dirs, len(dirs), c.run)
			if err != nil {
				t.Fatal(err)
			}
			if c.want == "" && why != "" || c.want != "" && !strings.Contains(why, c.want) {
				t.Fatalf("NotReady: %q, want %q", why, c.want)
			}
		})
	}
}

func TestKinds(t *testing.T) {
	parent := t.TempDir()
	dirs := saveShards(t, parent, 1, "storm")
	sweep := filepath.Join(parent, "sweep")
	if err := os.MkdirAll(sweep, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sweep, "sweep.csv"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		dir  string
		want merge.Kind
	}{
		{dirs[0], merge.Result},
		{sweep, merge.Sweep},
		{filepath.Join(parent, "none"), merge.None},
	} {
		if k, err := merge.KindOf(c.dir); err != nil || k != c.want {
			t.Errorf("KindOf(%s) = %v, %v; want %v", c.dir, k, err, c.want)
		}
	}
	if _, err := merge.CommonKind([]string{dirs[0], sweep}); err == nil || !strings.Contains(err.Error(), "shards of different commands") {
		t.Errorf("result and sweep shards: %v, want them refused", err)
	}
}

// TestResultsRefuseOtherSeeds: the shards of one run share its seed.
func TestResultsRefuseOtherSeeds(t *testing.T) {
	parent := t.TempDir()
	dirs := saveShards(t, parent, 2, "storm")
	if r, err := merge.Results(dirs); err != nil || r == nil {
		t.Fatalf("Results: %v", err)
	}
	parts := metricstest.StormParts(2)
	parts[1].RunID = "storm"
	parts[1].Summary.Seed++
	if err := metrics.Save(dirs[1], parts[1]); err != nil {
		t.Fatal(err)
	}
	if _, err := merge.Results(dirs); err == nil || !strings.Contains(err.Error(), "shards of one run share its seed") {
		t.Fatalf("shards of two seeds: %v, want them refused", err)
	}
}

func TestAmbiguous(t *testing.T) {
	dirs := saveShards(t, t.TempDir(), 2, "storm")
	if err := merge.Ambiguous(dirs, "tuesday"); err != nil {
		t.Errorf("labelled: %v, want nil", err)
	}
	if err := merge.Ambiguous(dirs, ""); err == nil || !strings.Contains(err.Error(), "(run storm)") || !strings.Contains(err.Error(), "--run LABEL") {
		t.Errorf("unlabelled: %v, want the refusal naming the run and the label", err)
	}
}
