package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// tinyScenario is a small two-hop chain with a fault and a declared
// variant, quick enough to run many times.
const tinyScenario = `name: tiny
seed: 3
duration: 10s
warmup: 1s
workload:
  entry: api
  rate: 200
  deadline: 1s
  client: {timeout: 500ms, retry: {max_attempts: 2}}
services:
  - name: api
    workers: 50
    queue: 100
    service_time: {dist: constant, value: 1ms}
    calls:
      - {to: db, timeout: 50ms, retry: {max_attempts: 3}}
  - name: db
    workers: 4
    queue: 40
    service_time: {dist: exponential, mean: 10ms}
faults:
  - {service: db, at: 4s, for: 2s, capacity: 0.5}
variants:
  - name: budget
    set: [services.api.calls.db.budget.ratio=0.1]
`

func writeTiny(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tiny.yaml")
	require.NoError(t, os.WriteFile(path, []byte(tinyScenario), 0o644))
	return path
}

func TestCompareCommand(t *testing.T) {
	sc := writeTiny(t)
	out := filepath.Join(t.TempDir(), "cmp")
	stdout, stderr, code := runCLI(t, "compare", sc, "--variant", "no-retry:services.api.calls.db.retry.max_attempts=1", "--out", out)
	require.Equal(t, 0, code, stderr)
	for _, s := range []string{"baseline", "budget", "no-retry", "goodput (req/s)", "amplification, whole run", "peak amplification, interval", "duplicates"} {
		require.Contains(t, stdout, s)
	}
	for _, f := range []string{"compare.txt", "goodput.png", "amplification_db.svg", "queue_db.png", "budget/summary.json", "no-retry/timeseries.csv"} {
		require.FileExists(t, filepath.Join(out, f))
	}
	table, err := os.ReadFile(filepath.Join(out, "compare.txt"))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(stdout, string(table)), "compare.txt must hold the printed table")
}

// A variant from another file runs with the baseline's seed: with the
// same arrivals, its offered count matches the baseline's even though the
// file says seed 99.
func TestCompareFileVariant(t *testing.T) {
	sc := writeTiny(t)
	alt := filepath.Join(t.TempDir(), "alt.yaml")
	require.NoError(t, os.WriteFile(alt, []byte(strings.Replace(tinyScenario, "seed: 3", "seed: 99", 1)), 0o644))
	stdout, stderr, code := runCLI(t, "compare", sc, "--no-declared", "--variant", "alt="+alt)
	require.Equal(t, 0, code, stderr)
	var offered []string
	for _, line := range strings.Split(stdout, "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "offered" {
			offered = f[1:]
		}
	}
	require.Len(t, offered, 2, stdout)
	require.Equal(t, offered[0], offered[1], "the file variant must share the baseline's arrivals:\n%s", stdout)
	require.Contains(t, stdout, "seed replaced by 3")
}

func TestSweepCommandShardsAndWorkers(t *testing.T) {
	sc := writeTiny(t)
	dir := t.TempDir()
	sweep := func(name string, extra ...string) []byte {
		args := append([]string{"sweep", sc, "--param", "workload.rate", "--values", "100,300", "--replicas", "2", "--out", filepath.Join(dir, name)}, extra...)
		_, stderr, code := runCLI(t, args...)
		require.Equal(t, 0, code, stderr)
		b, err := os.ReadFile(filepath.Join(dir, name, "sweep.csv"))
		require.NoError(t, err)
		return b
	}
	whole := sweep("whole", "--workers", "1")
	require.Equal(t, string(whole), string(sweep("parallel", "--workers", "4")), "sweep.csv must not depend on --workers")
	require.FileExists(t, filepath.Join(dir, "whole", "sweep-aggregate.csv"))
	require.FileExists(t, filepath.Join(dir, "whole", "sweep_goodput_rps.png"))

	sweep("s0", "--shard", "0/2")
	sweep("s1", "--shard", "1/2")
	require.NoFileExists(t, filepath.Join(dir, "s0", "sweep-aggregate.csv"), "a shard alone has no aggregates")
	_, stderr, code := runCLI(t, "sweep", "--merge", filepath.Join(dir, "s1", "sweep.csv"), filepath.Join(dir, "s0", "sweep.csv"), "--out", filepath.Join(dir, "merged"))
	require.Equal(t, 0, code, stderr)
	for _, f := range []string{"sweep.csv", "sweep-aggregate.csv"} {
		a, err := os.ReadFile(filepath.Join(dir, "whole", f))
		require.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(dir, "merged", f))
		require.NoError(t, err)
		require.Equal(t, string(a), string(b), "merged shards' %s must equal the whole sweep's", f)
	}
}

func TestMetastableCommand(t *testing.T) {
	out := filepath.Join(t.TempDir(), "meta")
	stdout, stderr, code := runCLI(t, "metastable", "metastable-retry-storm", "--out", out)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "DOES NOT RECOVER")
	require.Contains(t, stdout, "baseline: does not recover at any level tried")
	require.Contains(t, stdout, "budget: highest workload.rate that recovers: 560")
	require.FileExists(t, filepath.Join(out, "metastable.csv"))
}

func TestAnalysisCommandUsageErrors(t *testing.T) {
	sc := writeTiny(t)
	tests := [][]string{
		{"compare"},
		{"compare", sc, "--variant", "nothing"},
		{"compare", sc, "--variant", "budget:a=1"}, // declared twice
		{"sweep", sc, "--param", "workload.rate"},
		{"sweep", sc, "--param", "workload.rate", "--values", "1", "--range", "1:2:1"},
		{"sweep", sc, "--param", "workload.rate", "--range", "3:1:1"},
		{"sweep", sc, "--param", "workload.rate", "--values", "1", "--shard", "2/2"},
		{"sweep", sc, "--param", "workload.rate", "--values", "1", "--replicas", "0"},
		{"sweep", "--merge"},
		{"metastable", sc, "--tolerance", "2"},
		{"metastable", sc, "--values", "1", "--range", "1:2:1"},
	}
	for _, args := range tests {
		_, stderr, code := runCLI(t, args...)
		require.Equal(t, exitUsage, code, "%v: %s", args, stderr)
	}
	// A bad swept value is reported before anything runs, naming the path.
	_, stderr, code := runCLI(t, "sweep", sc, "--param", "services.db.workers", "--values", "4,many", "--out", t.TempDir())
	require.Equal(t, exitError1, code)
	require.Contains(t, stderr, "services.db.workers=many")
}

// A run that drains for longer than 3x its window prints the drain hint,
// and compare prints it under each variant that has it (issue 16).
func TestDrainHintPrinted(t *testing.T) {
	sc := filepath.Join(t.TempDir(), "drain.yaml")
	require.NoError(t, os.WriteFile(sc, []byte(`name: drain
duration: 2s
seed: 1
workload: {entry: api, arrival: constant, rate: 4, client: {timeout: 1h}}
services:
  - {name: api, workers: 1, service_time: {dist: constant, value: 1s}, calls: [{to: db, timeout: 1h}]}
  - {name: db, workers: 1, queue: 100, service_time: {dist: constant, value: 1ms}}
`), 0o644))
	const hint = "hint: work drained for 6.0s after the 2s arrival window (more than 3x): bound it with services.api.queue"
	stdout, stderr, code := runCLI(t, "run", sc)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, hint)
	stdout, stderr, code = runCLI(t, "compare", sc, "--no-declared", "--variant", "brief:workload.rate=0.5")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "baseline: "+hint)
	require.NotContains(t, stdout, "brief: hint")
}
