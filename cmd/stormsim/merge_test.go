package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/metrics/metricstest"
	"github.com/stormsim/stormsim/shard"
)

// execCLI runs the binary with a time limit and returns its output.
func execCLI(t *testing.T, bin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "stormsim %s: %s", strings.Join(args, " "), stderr.String())
	return stdout.String()
}

// TestShardedSweepMergesToTheUnshardedFiles runs a sweep whole and as N
// shard processes (concurrently, as an Indexed Job's pods would), merges
// the shards, and requires the merged sweep.csv and sweep-aggregate.csv to
// be byte-identical to the unsharded ones.
func TestShardedSweepMergesToTheUnshardedFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs several sweeps; make test runs it")
	}
	bin := buildMain(t, ".")
	dir := t.TempDir()
	scenario := filepath.Join(dir, "tiny.yaml")
	require.NoError(t, os.WriteFile(scenario, []byte(tinyScenario), 0o644))
	// 3 points × 2 variants (baseline, budget) × 2 replicas = 12 units.
	sweep := []string{"sweep", scenario, "--param", "workload.rate", "--values", "100,300,600", "--replicas", "2", "--workers", "1"}
	whole := filepath.Join(dir, "whole")
	execCLI(t, bin, append(sweep, "--out", whole)...)

	for _, n := range []int{3, 5} {
		parent := filepath.Join(dir, fmt.Sprint("run", n))
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				execCLI(t, bin, append(sweep, "--shard", fmt.Sprintf("%d/%d", i, n), "--out", shard.Dir(parent, i))...)
			}()
		}
		wg.Wait()
		merged := filepath.Join(parent, "merged")
		execCLI(t, bin, "merge", "--shards", fmt.Sprint(n), parent, "--out", merged)
		for _, f := range []string{"sweep.csv", "sweep-aggregate.csv"} {
			want, err := os.ReadFile(filepath.Join(whole, f))
			require.NoError(t, err)
			got, err := os.ReadFile(filepath.Join(merged, f))
			require.NoError(t, err)
			require.Equal(t, string(want), string(got), "%d shards: %s", n, f)
		}
		// Each shard did only its share: units are split as evenly as possible.
		for i := range n {
			b, err := os.ReadFile(filepath.Join(shard.Dir(parent, i), "sweep.csv"))
			require.NoError(t, err)
			rows := strings.Count(string(b), "\n") - 1
			require.Equal(t, shard.Spec{Index: i, Count: n}.Size(12), rows, "shard %d/%d", i, n)
		}
	}
}

// TestMergeOfOneRunIsLossless merges a single simulated run: the result
// must come back byte for byte (summary, histograms, series), which is what
// makes a merge of shards comparable to a single run at all.
func TestMergeOfOneRunIsLossless(t *testing.T) {
	dir := t.TempDir()
	scenario := filepath.Join(dir, "tiny.yaml")
	require.NoError(t, os.WriteFile(scenario, []byte(tinyScenario), 0o644))
	run := filepath.Join(dir, "run")
	_, errOut, code := runCLI(t, "run", scenario, "--out", run)
	require.Equal(t, 0, code, errOut)
	merged := filepath.Join(dir, "merged")
	out, errOut, code := runCLI(t, "merge", run, "--out", merged, "--format", "json")
	require.Equal(t, 0, code, errOut)
	want, err := os.ReadFile(filepath.Join(run, metrics.SummaryFile))
	require.NoError(t, err)
	require.Equal(t, string(want), out, "printed summary")
	for _, f := range []string{metrics.SummaryFile, metrics.HistogramsFile, metrics.SeriesFile, metrics.FaultsFile} {
		a, err := os.ReadFile(filepath.Join(run, f))
		require.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(merged, f))
		require.NoError(t, err)
		require.Equal(t, string(a), string(b), f)
	}
	_, err = os.Stat(filepath.Join(merged, "report.html"))
	require.NoError(t, err, "the merge writes the report a single run writes")
}

// TestMergeLoadShards merges the shards of a load run. 'stormsim load' has
// no --shard yet, so the shards are synthetic: metricstest splits one
// realistic run by request index k ≡ I (mod N), the rule shard.Spec.Owns
// applies, and the merged files must equal the whole run's byte for byte:
// counts add, histograms merge exactly, and the load reports sum.
func TestMergeLoadShards(t *testing.T) {
	const n = 4
	whole := metricstest.Storm()
	parts := metricstest.StormParts(n)
	// Each shard's driver report; the whole run's is their sum.
	whole.Summary.Load = &metrics.LoadReport{Target: "http://127.0.0.1:1/", LateThresholdMs: 5, Statuses: map[string]int64{}}
	for i, p := range parts {
		l := &metrics.LoadReport{
			Target: "http://127.0.0.1:1/", TargetRPS: metricstest.Rate / n, OfferedRPS: metricstest.Rate / n,
			Scheduled: p.Summary.Requests.Offered, Sent: p.Summary.Requests.Offered - int64(i), Unsent: int64(i),
			Late: int64(3 * i), LateThresholdMs: 5, Workers: 64, Connections: 32, MaxInFlight: int64(10 + i),
			Attempts: p.Summary.Services[0].Attempts, Timeouts: int64(i), Statuses: map[string]int64{"200": p.Summary.Requests.Succeeded, "503": int64(7 * i)},
		}
		p.Summary.Load = l
		w := whole.Summary.Load
		w.TargetRPS += l.TargetRPS
		w.OfferedRPS += l.OfferedRPS
		w.Scheduled += l.Scheduled
		w.Sent += l.Sent
		w.Unsent += l.Unsent
		w.Late += l.Late
		w.Workers += l.Workers
		w.Connections += l.Connections
		w.MaxInFlight += l.MaxInFlight
		w.Attempts += l.Attempts
		w.Timeouts += l.Timeouts
		for k, v := range l.Statuses {
			w.Statuses[k] += v
		}
	}
	dir := t.TempDir()
	for i, p := range parts {
		p.RunID = "load" // the shards of one run share its id
		require.NoError(t, metrics.Save(shard.Dir(dir, i), p))
	}
	wantDir := filepath.Join(dir, "whole")
	require.NoError(t, metrics.Save(wantDir, whole))

	merged := filepath.Join(dir, "merged")
	_, errOut, code := runCLI(t, "merge", "--shards", fmt.Sprint(n), dir, "--out", merged)
	require.Equal(t, 0, code, errOut)
	for _, f := range []string{metrics.SummaryFile, metrics.HistogramsFile, metrics.FaultsFile} {
		a, err := os.ReadFile(filepath.Join(wantDir, f))
		require.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(merged, f))
		require.NoError(t, err)
		require.Equal(t, string(a), string(b), f)
	}
}

func TestMergeErrors(t *testing.T) {
	dir := t.TempDir()
	scenario := filepath.Join(dir, "tiny.yaml")
	require.NoError(t, os.WriteFile(scenario, []byte(tinyScenario), 0o644))
	run := filepath.Join(dir, "run")
	_, errOut, code := runCLI(t, "run", scenario, "--duration", "3s", "--out", run)
	require.Equal(t, 0, code, errOut)
	other := filepath.Join(dir, "seed9")
	_, errOut, code = runCLI(t, "run", scenario, "--duration", "3s", "--seed", "9", "--out", other)
	require.Equal(t, 0, code, errOut)
	sweepDir := filepath.Join(dir, "sweep")
	_, errOut, code = runCLI(t, "sweep", scenario, "--duration", "3s", "--param", "workload.rate", "--values", "100", "--no-declared", "--out", sweepDir)
	require.Equal(t, 0, code, errOut)
	empty := filepath.Join(dir, "empty")
	require.NoError(t, os.MkdirAll(empty, 0o755))
	out := filepath.Join(dir, "out")

	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no out", []string{"merge", run}, exitUsage, "--out DIR is required"},
		{"no dirs", []string{"merge", "--out", out}, exitUsage, "give the shards' output directories"},
		{"twice", []string{"merge", run, run + "/", "--out", out}, exitUsage, "merging it twice"},
		{"out is input", []string{"merge", run, "--out", run}, exitUsage, "is one of the inputs"},
		{"shards two parents", []string{"merge", "--shards", "2", run, other, "--out", out}, exitUsage, "one PARENT"},
		{"bad shards", []string{"merge", "--shards", "-1", run, "--out", out}, exitUsage, "--shards must be in"},
		{"incomplete", []string{"merge", run, empty, "--out", out}, exitError1, "not a finished shard"},
		{"mixed", []string{"merge", run, sweepDir, "--out", out}, exitError1, "shards of different commands"},
		{"seeds", []string{"merge", run, other, "--out", out}, exitError1, "shards of different runs"},
		{"missing shard", []string{"merge", "--shards", "2", "--wait", "300ms", dir, "--out", out}, exitError1, "2 of 2 shard directories are not complete"},
		{"bad format", []string{"merge", run, "--out", out, "--format", "xml"}, exitUsage, "--format"},
	} {
		_, errOut, code := runCLI(t, c.args...)
		require.Equal(t, c.code, code, "%s: %s", c.name, errOut)
		require.Contains(t, errOut, c.want, c.name)
		require.Equal(t, 1, strings.Count(errOut, "\n"), "%s: one line: %q", c.name, errOut)
	}
}

// TestMergeWaitsForLateShards starts the merge before the last shard has
// finished, as the merge Job does, and completes the shard while it waits.
func TestMergeWaitsForLateShards(t *testing.T) {
	defer func(p time.Duration) { mergePoll = p }(mergePoll)
	mergePoll = 100 * time.Millisecond
	dir := t.TempDir()
	parts := metricstest.StormParts(2)
	parts[0].RunID, parts[1].RunID = "storm", "storm"
	require.NoError(t, metrics.Save(shard.Dir(dir, 0), parts[0]))
	late := filepath.Join(dir, "late")
	require.NoError(t, metrics.Save(late, parts[1]))

	done := make(chan struct{})
	var code int
	var errOut string
	go func() {
		defer close(done)
		_, errOut, code = runCLI(t, "merge", "--shards", "2", "--wait", "20s", dir, "--out", filepath.Join(dir, "merged"))
	}()
	time.Sleep(2 * mergePoll)
	select {
	case <-done:
		t.Fatalf("merge finished before shard 1 existed: status %d, %s", code, errOut)
	default:
	}
	require.NoError(t, os.Rename(late, shard.Dir(dir, 1)))
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("merge did not notice the late shard")
	}
	require.Equal(t, 0, code, errOut)
	_, err := os.Stat(filepath.Join(dir, "merged", metrics.SummaryFile))
	require.NoError(t, err)
}

// TestMergeRefusesIncompleteSweeps: a shard whose pod was stopped writes
// the rows it finished; merging it must not pass for a whole sweep, and the
// merge Job (--wait) must keep waiting for the retried pod.
func TestMergeRefusesIncompleteSweeps(t *testing.T) {
	dir := t.TempDir()
	scenario := filepath.Join(dir, "tiny.yaml")
	require.NoError(t, os.WriteFile(scenario, []byte(tinyScenario), 0o644))
	parent := filepath.Join(dir, "run")
	for i := range 2 {
		_, errOut, code := runCLI(t, "sweep", scenario, "--duration", "2s", "--param", "workload.rate", "--values", "100,200,300",
			"--shard", fmt.Sprintf("%d/2", i), "--out", shard.Dir(parent, i))
		require.Equal(t, 0, code, errOut)
	}
	// 3 points × 2 variants = 6 units; shard 1 holds units 1, 3, 5.
	_, errOut, code := runCLI(t, "merge", "--shards", "2", parent, "--out", filepath.Join(dir, "ok"))
	require.Equal(t, 0, code, errOut)

	// Swapped directories: a different split.
	swapped := filepath.Join(dir, "swapped")
	require.NoError(t, os.MkdirAll(swapped, 0o755))
	require.NoError(t, os.Rename(shard.Dir(parent, 0), shard.Dir(swapped, 1)))
	require.NoError(t, os.Rename(shard.Dir(parent, 1), shard.Dir(swapped, 0)))
	_, errOut, code = runCLI(t, "merge", "--shards", "2", swapped, "--out", filepath.Join(dir, "x"))
	require.Equal(t, exitError1, code)
	require.Contains(t, errOut, "belongs to shard 1/2, not 0/2")
	require.NoError(t, os.Rename(shard.Dir(swapped, 1), shard.Dir(parent, 0)))
	require.NoError(t, os.Rename(shard.Dir(swapped, 0), shard.Dir(parent, 1)))

	// Drop shard 1's last row (unit 5), as an interrupted pod would.
	csvPath := filepath.Join(shard.Dir(parent, 1), "sweep.csv")
	b, err := os.ReadFile(csvPath)
	require.NoError(t, err)
	lines := strings.SplitAfter(strings.TrimSuffix(string(b), "\n"), "\n")
	require.Len(t, lines, 4)
	require.NoError(t, os.WriteFile(csvPath, []byte(strings.Join(lines[:3], "")), 0o644))
	reseal(t, shard.Dir(parent, 1))
	_, errOut, code = runCLI(t, "merge", "--shards", "2", parent, "--out", filepath.Join(dir, "partial"))
	require.Equal(t, exitError1, code)
	require.Contains(t, errOut, "hold 5 of the sweep's 6 units (unit 5 is missing)")
	_, errOut, code = runCLI(t, "merge", "--shards", "2", "--wait", "300ms", parent, "--out", filepath.Join(dir, "partial"))
	require.Equal(t, exitError1, code)
	require.Contains(t, errOut, "not ready: the shards hold 5 of the sweep's 6 units")
	// Shard 0 alone, missing its middle unit (2): the first gap is unit 1,
	// which only shard 1 had.
	csv0 := filepath.Join(shard.Dir(parent, 0), "sweep.csv")
	b, err = os.ReadFile(csv0)
	require.NoError(t, err)
	l0 := strings.SplitAfter(strings.TrimSuffix(string(b), "\n"), "\n")
	require.NoError(t, os.WriteFile(csv0, []byte(l0[0]+l0[1]+l0[3]), 0o644))
	reseal(t, shard.Dir(parent, 0))
	_, errOut, code = runCLI(t, "merge", parent+"/shard-0", "--out", filepath.Join(dir, "partial"))
	require.Equal(t, exitError1, code)
	require.Contains(t, errOut, "unit 1 is missing")
}

// TestMergeWaitsOutInterruptedShards: a result shard whose pod was stopped
// says status interrupted. The merge Job waits for the retry; a merge
// without --wait writes the merged result and reports it as partial.
func TestMergeWaitsOutInterruptedShards(t *testing.T) {
	dir := t.TempDir()
	parts := metricstest.StormParts(2)
	parts[1].Summary.Status = "interrupted"
	for i, p := range parts {
		p.RunID = "storm"
		require.NoError(t, metrics.Save(shard.Dir(dir, i), p))
	}
	_, errOut, code := runCLI(t, "merge", "--shards", "2", "--wait", "300ms", dir, "--out", filepath.Join(dir, "m1"))
	require.Equal(t, exitError1, code)
	require.Contains(t, errOut, "shard-1 was interrupted")
	_, errOut, code = runCLI(t, "merge", "--shards", "2", dir, "--out", filepath.Join(dir, "m2"))
	require.Equal(t, exitInterrupted, code, errOut)
	s, err := metrics.Load(filepath.Join(dir, "m2"))
	require.NoError(t, err)
	require.Equal(t, metrics.StatusInterrupted, s.Summary.Status)
}

// TestCompareShardsMergeToTheWhole: a comparison split over shards, each
// running some of the variants, merges into the unsharded comparison's
// table and variant results, byte for byte.
func TestCompareShardsMergeToTheWhole(t *testing.T) {
	dir := t.TempDir()
	args := []string{"compare", "retry-storm", "--duration", "8s", "--set", "faults.0.at=3s", "--set", "faults.0.for=2s"}
	whole := filepath.Join(dir, "whole")
	_, errOut, code := runCLI(t, append(args, "--out", whole)...)
	require.Equal(t, 0, code, errOut)

	const n = 2
	var shards []string
	for i := range n {
		d := filepath.Join(dir, "parent", fmt.Sprintf("shard-%d", i))
		_, errOut, code := runCLI(t, append(args, "--shard", fmt.Sprintf("%d/%d", i, n), "--out", d)...)
		require.Equal(t, 0, code, errOut)
		shards = append(shards, d)
	}
	merged := filepath.Join(dir, "merged")
	_, errOut, code = runCLI(t, append([]string{"merge"}, append(shards, "--out", merged)...)...)
	require.Equal(t, 0, code, errOut)
	for _, f := range []string{"compare.txt", "baseline/summary.json", "budget-10pct/summary.json", "edge-only-backoff/histograms.json"} {
		want, err := os.ReadFile(filepath.Join(whole, f))
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join(merged, f))
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), f)
	}
	// A missing shard is an error, not a short table.
	_, errOut, code = runCLI(t, "merge", shards[0], "--out", filepath.Join(dir, "short"))
	require.NotEqual(t, 0, code)
	require.Contains(t, errOut, "no shard holds variant")
}

// TestShardedLoadMergesToTheWholeSchedule drives one loopback target with
// three `stormsim load --shard I/3` processes sharing a --start-at time, as
// the pods of an Indexed Job would, and merges their result directories:
// the target saw each request id of the schedule exactly once, and the
// merged summary counts every request the unsharded schedule holds, with
// every latency in the merged histogram.
func TestShardedLoadMergesToTheWholeSchedule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs three load processes; make test runs it")
	}
	bin := buildMain(t, ".")
	var mu sync.Mutex
	ids := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		ids[r.Header.Get("X-Stormsim-Request-Id")]++
		mu.Unlock()
	}))
	defer srv.Close()

	const n, rate, dur = 3, 300, 2 // shards, req/s, seconds: 600 requests in all
	dir := t.TempDir()
	start := time.Now().Add(3 * time.Second).UTC().Format(time.RFC3339Nano)
	var wg sync.WaitGroup
	outs := make([]string, n)
	for i := range n {
		outs[i] = filepath.Join(dir, fmt.Sprintf("shard-%d", i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			execCLI(t, bin, "load", "--target", srv.URL, "--rate", fmt.Sprint(rate), "--duration", fmt.Sprintf("%ds", dur),
				"--shard", fmt.Sprintf("%d/%d", i, n), "--start-at", start, "--workers", "32", "--format", "json", "--out", outs[i])
		}()
	}
	wg.Wait()
	merged := filepath.Join(dir, "merged")
	execCLI(t, bin, append([]string{"merge", "--out", merged, "--format", "json"}, outs...)...)

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, ids, rate*dur, "distinct request ids the target saw")
	for id, k := range ids {
		require.Equal(t, 1, k, "request id %s sent %d times", id, k)
	}
	res, err := metrics.Load(merged)
	require.NoError(t, err)
	s := res.Summary
	require.EqualValues(t, rate*dur, s.Requests.Offered)
	require.EqualValues(t, rate*dur, s.Requests.Succeeded)
	require.EqualValues(t, rate*dur, res.Latency.TotalCount())
	var parts int64
	for _, o := range outs {
		r, err := metrics.Load(o)
		require.NoError(t, err)
		require.InDelta(t, rate*dur/n, r.Summary.Requests.Offered, 1, "each shard drives 1/N of the schedule")
		parts += r.Latency.TotalCount()
	}
	require.Equal(t, parts, res.Latency.TotalCount())
}
