package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stormsim/stormsim/analysis"
)

// TestInterruptedCompareSaysNotRun (issue 36 item 6): variants a signal
// stopped before they offered anything read "not run", with no goodput 0 or
// amplification 0.00x that would look like a collapse.
func TestInterruptedCompareSaysNotRun(t *testing.T) {
	out := filepath.Join(t.TempDir(), "cmp")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"compare", "retry-storm", "--out", out}, &stdout, &stderr)
	require.Equal(t, exitInterrupted, code, stderr.String())
	table := stdout.String()
	var verdict, goodput, amp string
	for _, l := range strings.Split(table, "\n") {
		switch f := strings.TrimSpace(l); {
		case strings.HasPrefix(f, "verdict"):
			verdict = f
		case strings.HasPrefix(f, "goodput"):
			goodput = f
		case strings.HasPrefix(f, "max amplification"):
			amp = f
		}
	}
	require.Equal(t, 3, strings.Count(verdict, "not run"), table)
	require.NotContains(t, goodput, "0.0", table)
	require.NotContains(t, amp, "0.00x", table)
	b, err := os.ReadFile(filepath.Join(out, "compare.json"))
	require.NoError(t, err)
	var cj analysis.ComparisonJSON
	require.NoError(t, json.Unmarshal(b, &cj))
	for _, v := range cj.Variants {
		require.True(t, v.NotRun, "%s", v.Name)
		require.Equal(t, "not run", v.Verdict)
	}
}
