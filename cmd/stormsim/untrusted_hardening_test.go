package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The rows of issue 17 (untrusted scenarios and interrupted work) in the
// bad-input matrix. Items 2 and 8: every file a user or a scenario names is
// checked before it is opened (no devices, no named pipes), read within a
// bound, and never quoted in an error.
func init() {
	badInputs = append(badInputs,
		badInput{what: "scenario that is a device", args: []string{"run", "/dev/zero"}, code: exitError1, want: "/dev/zero: not a regular file: it is a device"},
		badInput{what: "sample file that is a device", args: []string{"run", badFile("sample-device.yaml")}, code: exitError1, want: "sample-device.yaml:8: services[0].service_time.file: /dev/zero: not a regular file"},
		badInput{what: "sample file that holds no samples (its lines are not quoted)", args: []string{"run", badFile("sample-not-samples.yaml")}, code: exitError1, want: "not-samples.txt:1: services[0].service_time.file: not a sample"},
		badInput{what: "load --body from a device", args: []string{"load", "--target", "http://127.0.0.1:9/", "--body", "@/dev/zero"}, code: exitError1, want: "--body: /dev/zero: not a regular file"},
		badInput{what: "load --policy from a device", args: []string{"load", "--target", "http://127.0.0.1:9/", "--policy", "/dev/zero"}, code: exitError1, want: "--policy: /dev/zero: not a regular file"},
		// Items 3 and 7: values that overflowed simulated time (a panic
		// with a stack) or memory are out of range.
		badInput{what: "arrival rate of one request per 3,000 years", args: []string{"run", "five-layer-chain", "--set", "workload.rate=1e-11"}, code: exitError1, want: "workload.rate: must be 0 or at least"},
		badInput{what: "a timeout of 2562047h", args: []string{"run", "five-layer-chain", "--set", "workload.client.timeout=2562047h"}, code: exitError1, want: "workload.client.timeout: must be at most 10000h0m0s"},
		badInput{what: "a slowdown per request in service of 1000000h", args: []string{"run", "five-layer-chain", "--set", "services.s1.slowdown_per_inflight=1000000h"}, code: exitError1, want: "services[0].slowdown_per_inflight: must be at most"},
		badInput{what: "a fan-out of a billion calls", args: []string{"run", "five-layer-chain", "--set", "services.s1.calls.s2.fanout=1000000000"}, code: exitError1, want: "services[0].calls[0].fanout: must be at most 10000"},
		badInput{what: "a time series of a billion rows", args: []string{"run", "five-layer-chain", "--set", "interval=1ns"}, code: exitError1, want: "interval: must be ≥ (duration + limits.max_drain) / 1000000"},
		badInput{what: "sweep of a billion replicas", args: []string{"sweep", "five-layer-chain", "--param", "workload.rate", "--values", "1,2", "--replicas", "1000000000"}, code: exitUsage, want: "is more than 1000000 runs"},
		badInput{what: "capacity over values the limits refuse (failed points; the search goes on below them)", args: []string{"capacity", filepath.Join("testdata", "capacity", "tiny.yaml"), "--slo", "p99<100ms", "--param", "services.db.service_time.mean", "--range", "1ms:2562047h", "--replicas", "2", "--recovery-bound", "8s"}, code: exitError1, want: "points failed (marked failed in the report, counted as not meeting the SLO); the lowest: capacity: services.db.service_time.mean="},
		badInput{what: "capacity with a billion replicas", args: []string{"capacity", "five-layer-chain", "--slo", "p99<300ms", "--replicas", "1000000000"}, code: exitError1, want: "replicas must be at most 10000"},
		// Item 13: names every mode can carry.
		badInput{what: "a service name a URL cannot carry", args: []string{"run", badFile("service-name.yaml")}, code: exitError1, want: "service-name.yaml:7: services[0].name: \"a%zz\": want at most 128"},
		// Item 6: slow work drains within limits.max_drain or the run
		// stops as diverged.
		badInput{what: "work that would drain 100 days after the window", args: []string{"run", badFile("slow-drain.yaml"), "--format", "json"}, code: exitDiverged, want: "(limits.max_drain)"},
		badInput{what: "--max-drain without a unit", args: []string{"run", badFile("slow-drain.yaml"), "--max-drain", "10"}, code: exitError1, want: "limits.max_drain"},
		// Item 14: a second document was ignored; limits of 0 were defaults.
		badInput{what: "two YAML documents in one scenario file", args: []string{"run", badFile("two-documents.yaml")}, code: exitError1, want: "two-documents.yaml:7: a second YAML document"},
		badInput{what: "limits written as 0", args: []string{"run", badFile("limits-zero.yaml")}, code: exitError1, want: "limits-zero.yaml:7: limits.max_inflight: must be > 0, got 0"},
		// Item 4: a zero quantile divided the budget by zero.
		badInput{what: "tune samples that are all 0", args: []string{"tune", "--deadline", "1s", "--hops", "api=" + filepath.Join("testdata", "tune", "zeros.txt")}, code: exitError1, want: `hop "api": p99.9 of its 50 samples is 0`},
	)
	// Item 14: net/http read 4 KiB past MaxHeaderBytes, so 68 KiB passed.
	badRequests = append(badRequests,
		badRequest{what: "header block of 65 KiB", header: map[string]string{"X-Padding": strings.Repeat("a", 65<<10)}, status: http.StatusRequestHeaderFieldsTooLarge, want: "header block:"},
	)
}

// TestSampleFileContentIsNeverQuoted: a scenario pointing its samples at a
// file of secrets learns which lines are bad, not what they hold.
func TestSampleFileContentIsNeverQuoted(t *testing.T) {
	_, errOut, code := runCLI(t, "run", badFile("sample-not-samples.yaml"))
	require.Equal(t, exitError1, code, errOut)
	require.Contains(t, errOut, "not-samples.txt:2:")
	require.NotContains(t, errOut, "SECRET")
	require.NotContains(t, errOut, "root")
	require.NotContains(t, errOut, "daemon")
}

// TestSpecialFilesFailAtOnce: a named pipe given as the scenario, a --policy
// or a --body, and a scenario or sample file over its size limit, fail at
// once with an error naming the file; before, the pipe blocked in open
// (swallowing the first SIGTERM) and /dev/zero was read until memory ran
// out.
func TestSpecialFilesFailAtOnce(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.yaml")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	huge := filepath.Join(dir, "huge.yaml")
	f, err := os.Create(huge)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(1<<30)) // sparse: no disk used
	require.NoError(t, f.Close())
	hugeSamples := filepath.Join(dir, "samples.yaml")
	require.NoError(t, os.WriteFile(hugeSamples, []byte(strings.Replace(mustRead(t, badFile("sample-device.yaml")), "/dev/zero", "huge.yaml", 1)), 0o644))

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", fifo}, "fifo.yaml: not a regular file: it is a named pipe (FIFO)"},
		{[]string{"validate", fifo}, "fifo.yaml: not a regular file"},
		{[]string{"load", "--target", "http://127.0.0.1:9/", "--policy", fifo}, "--policy: " + fifo + ": not a regular file"},
		{[]string{"load", "--target", "http://127.0.0.1:9/", "--body", "@" + fifo}, "--body: " + fifo + ": not a regular file"},
		{[]string{"run", huge}, "huge.yaml: too large: 1 GiB, the limit is 16 MiB"},
		{[]string{"run", hugeSamples}, "huge.yaml: too large: 1 GiB, the limit is 64 MiB"},
	} {
		type result struct {
			out  string
			code int
		}
		done := make(chan result, 1)
		go func() {
			stdout, errOut, code := runCLI(t, c.args...)
			done <- result{stdout + errOut, code}
		}()
		select {
		case r := <-done:
			require.Equal(t, exitError1, r.code, r.out)
			require.Contains(t, r.out, c.want)
		case <-time.After(20 * time.Second):
			t.Fatalf("%v: still running after 20s", c.args)
		}
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}
