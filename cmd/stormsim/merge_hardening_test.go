package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/metrics/metricstest"
	"github.com/stormsim/stormsim/shard"
)

// Issue 37, item 13: merge --run refuses (and --wait waits past) shards of
// another run; a label that cannot be recorded plainly is a usage error.
func init() {
	badInputs = append(badInputs,
		badInput{what: "merge --run of shards another run wrote", args: []string{"merge", "--shards", "2", "--run", "tuesday", badFile("stale-shards"), "--out", badFile("never-written")}, code: exitError1, want: "not from run tuesday"},
		badInput{what: "a --run label with a dot", args: []string{"sweep", "five-layer-chain", "--param", "workload.rate", "--values", "1", "--run", "monday.1", "--out", badFile("never-written")}, code: exitUsage, want: "only letters, digits, _ and - are allowed"},
	)
}

// TestAttackMergeWaitIgnoresThePreviousRunsShards (issue 37, item 13): the
// shard directories still hold a previous run's complete output when a new
// run and its 'merge --wait' start; before the new run's first unit lands
// the merge took the previous run's shards. Told the run (--run LABEL,
// given to the shards too), it waits past them for the new run's, and a
// merge started after the new run finished merges it at once.
func TestAttackMergeWaitIgnoresThePreviousRunsShards(t *testing.T) {
	defer func(p time.Duration) { mergePoll = p }(mergePoll)
	mergePoll = 50 * time.Millisecond
	dir := t.TempDir()
	scenario := filepath.Join(dir, "tiny.yaml")
	require.NoError(t, os.WriteFile(scenario, []byte(tinyScenario), 0o644))
	parent := filepath.Join(dir, "run")
	sweep := func(label, values string, out string, extra ...string) {
		args := append([]string{"sweep", scenario, "--duration", "2s", "--param", "workload.rate", "--values", values, "--no-declared", "--run", label, "--out", out}, extra...)
		_, errOut, code := runCLI(t, args...)
		require.Equal(t, 0, code, errOut)
	}
	// The previous run: other rates, complete in both shard directories.
	for i := range 2 {
		sweep("monday", "100,200", shard.Dir(parent, i), "--shard", fmt.Sprintf("%d/2", i))
	}
	whole := filepath.Join(dir, "whole")
	sweep("tuesday", "100,300", whole)

	merged := filepath.Join(dir, "merged")
	done := make(chan struct{})
	var code int
	var errOut string
	go func() {
		defer close(done)
		_, errOut, code = runCLI(t, "merge", "--shards", "2", "--wait", "30s", "--run", "tuesday", parent, "--out", merged)
	}()
	time.Sleep(6 * mergePoll)
	select {
	case <-done:
		t.Fatalf("merge --run tuesday finished on monday's shards: status %d, %s", code, errOut)
	default:
	}
	for i := range 2 {
		sweep("tuesday", "100,300", shard.Dir(parent, i), "--shard", fmt.Sprintf("%d/2", i))
	}
	select {
	case <-done:
	case <-time.After(25 * time.Second):
		t.Fatal("merge did not notice the new run's shards")
	}
	require.Equal(t, 0, code, errOut)
	want, err := os.ReadFile(filepath.Join(whole, "sweep.csv"))
	require.NoError(t, err)
	got, err := os.ReadFile(filepath.Join(merged, "sweep.csv"))
	require.NoError(t, err)
	require.Equal(t, string(want), string(got), "the merge holds the new run's units")

	// Started after its shards finished, the merge of the run goes ahead.
	_, errOut, code = runCLI(t, "merge", "--shards", "2", "--wait", "30s", "--run", "tuesday", parent, "--out", filepath.Join(dir, "late"))
	require.Equal(t, 0, code, errOut)
	// Without --wait, shards of another run are refused, naming the run.
	for _, c := range []struct {
		run, want string
	}{
		{"monday", "run/shard-0 is from run tuesday, not from run monday"},
	} {
		_, errOut, code = runCLI(t, "merge", "--shards", "2", "--run", c.run, parent, "--out", filepath.Join(dir, "x"))
		require.Equal(t, exitError1, code, errOut)
		require.Contains(t, errOut, c.want)
		require.Equal(t, 1, strings.Count(errOut, "\n"), errOut)
	}
	// With --wait the same shards are waited past until the bound.
	_, errOut, code = runCLI(t, "merge", "--shards", "2", "--wait", "200ms", "--run", "monday", parent, "--out", filepath.Join(dir, "x"))
	require.Equal(t, exitError1, code, errOut)
	require.Contains(t, errOut, "not ready: "+shard.Dir(parent, 0)+" is from run tuesday, not from run monday")
}

// TestMergeRunLabelIsChecked: a label that could not be recorded plainly
// is a usage error on the shard and on the merge.
func TestMergeRunLabelIsChecked(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ label, want string }{
		{"", "want 1 to 64 characters"},
		{"a.b", "only letters, digits, _ and - are allowed"},
		{"x\ny", "only letters, digits, _ and - are allowed"},
		{strings.Repeat("a", 65), "want 1 to 64 characters"},
	} {
		for _, cmd := range [][]string{
			{"merge", "--run", c.label, dir, "--out", filepath.Join(dir, "m")},
			{"sweep", "x.yaml", "--run", c.label, "--param", "workload.rate", "--values", "1", "--out", filepath.Join(dir, "s")},
		} {
			_, errOut, code := runCLI(t, cmd...)
			require.Equal(t, exitUsage, code, "%q: %s", c.label, errOut)
			require.Contains(t, errOut, c.want, "%q", c.label)
			require.Equal(t, 1, strings.Count(errOut, "\n"), errOut)
		}
	}
}

// TestAttackMergeWaitUnlabelledTakesThePreviousRunsShards (issue 37, item
// 13): without --run, the shards of a repeated run share the previous
// run's id, so a 'merge --wait' that finds every shard complete at its
// first look cannot tell whether they are this run's or the previous
// run's, left in the directories before the new run's first unit lands;
// it merged them. It now refuses at once, saying how to label the run, and
// writes nothing. A wait that began before the shards were complete (the
// merge Job's) goes ahead as before (TestMergeWaitsForLateShards).
func TestAttackMergeWaitUnlabelledTakesThePreviousRunsShards(t *testing.T) {
	dir := t.TempDir()
	parts := metricstest.StormParts(2)
	for i, p := range parts {
		p.RunID = "storm"
		require.NoError(t, metrics.Save(shard.Dir(dir, i), p))
	}
	merged := filepath.Join(dir, "merged")
	_, errOut, code := runCLI(t, "merge", "--shards", "2", "--wait", "20s", dir, "--out", merged)
	require.Equal(t, exitError1, code, errOut)
	for _, want := range []string{"already complete when --wait began", "run storm", "--run LABEL", "without --wait"} {
		require.Contains(t, errOut, want)
	}
	require.Equal(t, 1, strings.Count(errOut, "\n"), errOut)
	_, err := os.Stat(merged)
	require.ErrorIs(t, err, os.ErrNotExist, "nothing is written")
	// Without --wait the complete shards are merged: the user says they are the run.
	_, errOut, code = runCLI(t, "merge", "--shards", "2", dir, "--out", merged)
	require.Equal(t, 0, code, errOut)
}
