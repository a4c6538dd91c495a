package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stormsim/stormsim/merge"
	"github.com/stormsim/stormsim/metrics"
)

// TestMergeKeepsVariantNamesInsideOut: a crafted compare shard whose
// variant is named to climb out of the directories cannot make merge read or
// write outside them (issue 17, item 1).
func TestMergeKeepsVariantNamesInsideOut(t *testing.T) {
	root := t.TempDir()
	var shards []string
	for i := range 2 {
		d := filepath.Join(root, "s", "t", "u", fmt.Sprintf("shard-%d", i))
		_, errOut, code := runCLI(t, "compare", "five-layer-chain", "--duration", "7s", "--no-declared",
			"--variant", "more:services.s1.workers=80", "--shard", fmt.Sprintf("%d/2", i), "--out", d)
		require.Equal(t, 0, code, errOut)
		shards = append(shards, d)
	}

	// Rename the baseline variant in the shard files, and put its result
	// both where an unescaped name and where the escaped name point.
	const evil = "../../../PWNED"
	for _, d := range shards {
		info, err := os.ReadFile(filepath.Join(d, merge.CompareShardFile))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(d, merge.CompareShardFile),
			[]byte(strings.ReplaceAll(string(info), `"baseline"`, `"`+evil+`"`)), 0o644))
		reseal(t, d)
	}
	require.NoError(t, os.CopyFS(filepath.Join(shards[0], evil), os.DirFS(filepath.Join(shards[0], "baseline"))))
	require.NoError(t, os.Rename(filepath.Join(shards[0], "baseline"), filepath.Join(shards[0], metrics.PathComponent(evil))))

	merged := filepath.Join(root, "m", "n", "o", "merged")
	_, errOut, code := runCLI(t, "merge", shards[0], shards[1], "--out", merged)
	require.Equal(t, 0, code, errOut)
	require.Empty(t, filesOutside(t, filepath.Join(root, "m"), merged))
	require.FileExists(t, filepath.Join(merged, metrics.PathComponent(evil), metrics.SummaryFile))
}

// filesOutside lists the files under root that are not under within.
func filesOutside(t *testing.T, root, within string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if rel, _ := filepath.Rel(within, p); strings.HasPrefix(rel, "..") {
			out = append(out, p)
		}
		return nil
	}))
	return out
}
