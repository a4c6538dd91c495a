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
		case strings.HasPrefix(f, "amplification, whole run"):
			amp = f
		}
	}
	// The signal came before any run started, so no run simulated anything:
	// every variant reads "not run" (none "interrupted at T").
	notRun := strings.Count(verdict, "not run")
	require.Equal(t, 3, notRun, table)
	require.NotContains(t, verdict, "interrupted at ", table)
	require.Equal(t, notRun, strings.Count(goodput, " -"), table)
	require.Equal(t, notRun, strings.Count(amp, " -"), table)
	require.NotContains(t, amp, " 0.00x", table)
	b, err := os.ReadFile(filepath.Join(out, "compare.json"))
	require.NoError(t, err)
	var cj analysis.ComparisonJSON
	require.NoError(t, json.Unmarshal(b, &cj))
	n := 0
	for _, v := range cj.Variants {
		require.Equal(t, v.NotRun, v.Verdict == "not run", "%s: %s", v.Name, v.Verdict)
		if v.NotRun {
			n++
		}
	}
	require.Equal(t, notRun, n)
}

// TestCompareWritesVerdictsAndReport (issue 36 items 3, 4): compare --out
// writes compare.json with a verdict per variant and one report.html with
// them side by side; --format json prints the same JSON.
func TestCompareWritesVerdictsAndReport(t *testing.T) {
	out := filepath.Join(t.TempDir(), "cmp")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"compare", "retry-storm", "--duration", "40s", "--format", "json", "--out", out}, &stdout, &stderr)
	require.Equal(t, exitOK, code, stderr.String())
	var printed, written analysis.ComparisonJSON
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &printed), stdout.String())
	b, err := os.ReadFile(filepath.Join(out, "compare.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &written))
	require.Equal(t, printed, written)
	require.Len(t, written.Variants, 3)
	require.Equal(t, "not recovered", written.Variants[0].Verdict)
	require.Contains(t, written.Variants[0].Reason, "timeout")
	require.Contains(t, written.Variants[1].Verdict, "recovered in ")
	page, err := os.ReadFile(filepath.Join(out, "report.html"))
	require.NoError(t, err)
	for _, v := range written.Variants {
		require.Contains(t, string(page), ">"+v.Verdict+"<")
		require.FileExists(t, filepath.Join(out, v.Name, "summary.json"))
	}
	// The overlays are the page's interactive charts, their static twins
	// files beside it.
	require.Contains(t, string(page), `StormCharts.compare(`)
	require.Contains(t, string(page), `goodput.png/.svg`)
	require.FileExists(t, filepath.Join(out, "goodput.svg"))
}

// TestInterruptedRunSaysInterrupted (issue 36 item 6): a run stopped by a
// signal never reports NOT RECOVERED over the hour it did not simulate.
func TestInterruptedRunSaysInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"run", "retry-storm", "--duration", "1h"}, &stdout, &stderr)
	require.Equal(t, exitInterrupted, code, stderr.String())
	out := stdout.String()
	require.Contains(t, out, "interrupted at ")
	require.NotContains(t, out, "NOT RECOVERED", out)
	require.NotContains(t, out, "59m", out)
}
