package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPlotSweepAndCompareDirs: `plot DIR` redraws what a sweep or a
// comparison directory holds (their curves and overlays), not only single
// results, and says what a directory it cannot plot lacks.
func TestPlotSweepAndCompareDirs(t *testing.T) {
	dir := t.TempDir()
	sc := filepath.Join(dir, "tiny.yaml")
	require.NoError(t, os.WriteFile(sc, []byte(tinyScenario), 0o644))

	// redraw removes the first files, plots out, and checks that every
	// file of want (the removed ones included) is there and listed.
	redraw := func(out string, removed int, want ...string) {
		t.Helper()
		for _, f := range want[:removed] {
			require.NoError(t, os.Remove(filepath.Join(out, f)))
		}
		stdout, stderr, code := runCLI(t, "plot", out)
		require.Equal(t, 0, code, stderr)
		for _, f := range want {
			require.FileExists(t, filepath.Join(out, f))
			require.Contains(t, stdout, f)
		}
	}

	sweep := filepath.Join(dir, "sweep")
	_, stderr, code := runCLI(t, "sweep", sc, "--param", "workload.rate", "--values", "100,300", "--out", sweep)
	require.Equal(t, 0, code, stderr)
	redraw(sweep, 4, "sweep_goodput_rps.png", "sweep_p99_ms.svg", "sweep_amplification.png", "sweep_peak_queue.png")

	cmp := filepath.Join(dir, "compare")
	_, stderr, code = runCLI(t, "compare", sc, "--variant", "no-retry:services.api.calls.db.retry.max_attempts=1", "--out", cmp)
	require.Equal(t, 0, code, stderr)
	// The overlays come back, and each variant gets its own plots and report.
	redraw(cmp, 3, "goodput.png", "amplification_db.svg", "queue_api.png", filepath.Join("baseline", "report.html"), filepath.Join("no-retry", "throughput.png"))

	_, stderr, code = runCLI(t, "plot", t.TempDir())
	require.NotEqual(t, 0, code)
	require.True(t, strings.Contains(stderr, "summary.json") && strings.Contains(stderr, "sweep.csv"), stderr)
}
