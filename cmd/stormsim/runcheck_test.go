package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/shard"
)

// Issue 17, item 11: merge and plot refuse shards of different runs and
// directories holding the files of two saves.
func init() {
	badInputs = append(badInputs,
		badInput{what: "shard directories of two runs (one stale)", args: []string{"merge", "--shards", "2", badFile("stale-shards"), "--out", badFile("never-written")}, code: exitError1, want: "shards of different runs"},
		badInput{what: "a results directory holding files of two saves", args: []string{"plot", badFile("mixed-save")}, code: exitError1, want: "mixed-save/summary.json does not match run.json"},
		badInput{what: "merge of a directory holding files of two saves", args: []string{"merge", badFile("mixed-save"), "--out", badFile("never-written")}, code: exitError1, want: "mixed-save/summary.json does not match run.json"},
	)
}

// reseal rewrites dir's manifest over its files as they are now, keeping
// its run id: what the run itself would have written had it saved them so
// (tests that edit a shard's files to play an interrupted pod use it).
func reseal(t *testing.T, dir string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, metrics.ManifestFile))
	require.NoError(t, err)
	var m metrics.Manifest
	require.NoError(t, json.Unmarshal(b, &m))
	var names []string
	for n := range m.Files {
		names = append(names, n)
	}
	slices.Sort(names)
	require.NoError(t, metrics.WriteManifest(dir, m.RunID, names...))
}

// TestMergeRefusesStaleAndMixedShards (issue 17, item 11): a shard
// directory left by an earlier run with other flags, and a directory whose
// save was killed after its new summary beside the old histograms, are
// refused by merge (and the second by plot), naming the directory; before,
// both were merged and plotted as if whole.
func TestMergeRefusesStaleAndMixedShards(t *testing.T) {
	dir := t.TempDir()
	scenario := filepath.Join(dir, "tiny.yaml")
	require.NoError(t, os.WriteFile(scenario, []byte(tinyScenario), 0o644))
	sweep := func(parent string, i int, duration string) {
		_, errOut, code := runCLI(t, "sweep", scenario, "--duration", duration, "--param", "workload.rate", "--values", "100,200",
			"--no-declared", "--shard", fmt.Sprintf("%d/2", i), "--out", shard.Dir(parent, i))
		require.Equal(t, 0, code, errOut)
	}
	// Shard 1 is left over from an earlier run with another --duration.
	parent := filepath.Join(dir, "run")
	sweep(parent, 0, "3s")
	sweep(parent, 1, "2s")
	_, errOut, code := runCLI(t, "merge", "--shards", "2", parent, "--out", filepath.Join(dir, "m1"))
	require.Equal(t, exitError1, code, errOut)
	require.Contains(t, errOut, "shards of different runs")
	require.NoFileExists(t, filepath.Join(dir, "m1", "sweep.csv"))
	// The retried pod rewrites it: the merge goes through.
	sweep(parent, 1, "3s")
	_, errOut, code = runCLI(t, "merge", "--shards", "2", parent, "--out", filepath.Join(dir, "m2"))
	require.Equal(t, 0, code, errOut)

	// Two saves into one result directory, the second killed after its
	// summary: the summary is not the one the manifest vouches for.
	res := filepath.Join(dir, "res")
	_, errOut, code = runCLI(t, "run", scenario, "--duration", "3s", "--out", res)
	require.Equal(t, 0, code, errOut)
	newer := filepath.Join(dir, "newer")
	_, errOut, code = runCLI(t, "run", scenario, "--duration", "4s", "--out", newer)
	require.Equal(t, 0, code, errOut)
	b, err := os.ReadFile(filepath.Join(newer, metrics.SummaryFile))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(res, metrics.SummaryFile), b, 0o644))
	for _, args := range [][]string{
		{"merge", res, "--out", filepath.Join(dir, "m3")},
		{"plot", res},
	} {
		_, errOut, code = runCLI(t, args...)
		require.Equal(t, exitError1, code, "%v: %s", args, errOut)
		require.Contains(t, errOut, filepath.Join(res, metrics.SummaryFile)+" does not match run.json", args)
	}
}
