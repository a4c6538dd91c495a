package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Issue 17, item 10: interrupted searches write what they found, marked
// interrupted, and exit 130; an interrupted merge --wait says how long it
// really waited.
func init() {
	badInputs = append(badInputs,
		badInput{what: "SIGINT or SIGTERM during metastable", args: []string{"metastable", "metastable-retry-storm"}, code: exitInterrupted, want: "interrupted: 0 levels judged", cancelled: true},
		badInput{what: "SIGINT or SIGTERM during capacity", args: []string{"capacity", "five-layer-chain", "--slo", "p99<300ms", "--range", "100:2000"}, code: exitInterrupted, want: "partial capacity report written", cancelled: true},
		badInput{what: "SIGINT or SIGTERM during merge --wait", args: []string{"merge", "--wait", "10h", badFile("no-such-dir"), "--out", badFile("never-written")}, code: exitInterrupted, want: "interrupted after waiting 0s of --wait 10h0m0s", cancelled: true},
	)
}

// TestInterruptedSearchesWriteWhatTheyFound: metastable and capacity stopped
// by a signal write their reports, marked partial, and exit 130.
func TestInterruptedSearchesWriteWhatTheyFound(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		file string
		want string
	}{
		{[]string{"metastable", "metastable-retry-storm", "--range", "300:600:100"}, "metastable.txt", "partial: interrupted after 0 of 8 levels"},
		{[]string{"capacity", "five-layer-chain", "--slo", "p99<300ms", "--range", "100:2000"}, "capacity.txt", "partial: interrupted"},
		{[]string{"capacity", "five-layer-chain", "--slo", "p99<300ms", "--range", "100:2000", "--format", "json"}, "capacity.json", `"interrupted": true`},
	} {
		out := filepath.Join(dir, c.args[0]+c.args[len(c.args)-1])
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		var stdout, stderr bytes.Buffer
		code := run(ctx, append(c.args, "--out", out), &stdout, &stderr)
		require.Equal(t, exitInterrupted, code, stderr.String())
		b, err := os.ReadFile(filepath.Join(out, c.file))
		require.NoError(t, err)
		require.Contains(t, string(b), c.want)
		require.Contains(t, stdout.String(), c.want)
	}
}

// TestMergeWaitSaysHowLongItWaited: a merge --wait 10h interrupted after a
// fraction of a second says so, instead of "waited 10h".
func TestMergeWaitSaysHowLongItWaited(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(300*time.Millisecond, cancel)
	var stdout, stderr bytes.Buffer
	start := time.Now()
	code := run(ctx, []string{"merge", "--wait", "10h", filepath.Join(dir, "shard-0"), "--out", filepath.Join(dir, "merged")}, &stdout, &stderr)
	require.Less(t, time.Since(start), time.Minute)
	require.Equal(t, exitInterrupted, code, stderr.String())
	require.Contains(t, stderr.String(), "interrupted after waiting ")
	require.Contains(t, stderr.String(), " of --wait 10h0m0s")
	require.False(t, strings.Contains(stderr.String(), "waited 10h"), stderr.String())
}
