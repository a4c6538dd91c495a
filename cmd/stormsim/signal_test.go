package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stormsim/stormsim/analysis"
	"github.com/stormsim/stormsim/metrics"
)

// longScenario takes minutes to simulate in full, so a signal always
// arrives mid-run.
const longScenario = `name: long
seed: 1
duration: 6h
interval: 10s
workload:
  entry: api
  arrival: poisson
  rate: 1000
  deadline: 1s
  client: {timeout: 500ms, retry: {max_attempts: 2}}
services:
  - name: api
    workers: 50
    queue: 100
    service_time: {dist: exponential, mean: 5ms}
    calls:
      - {to: db, timeout: 100ms, retry: {max_attempts: 2}}
  - name: db
    workers: 20
    queue: 100
    service_time: {dist: exponential, mean: 5ms}
`

// lockedBuffer is a bytes.Buffer safe to read while a child writes to it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// childProc is a running stormsim process.
type childProc struct {
	cmd            *exec.Cmd
	stdout, stderr lockedBuffer
	done           chan error
}

func startChild(t *testing.T, bin string, args ...string) *childProc {
	t.Helper()
	c := &childProc{cmd: exec.Command(bin, args...), done: make(chan error, 1)}
	c.cmd.Stdout, c.cmd.Stderr = &c.stdout, &c.stderr
	require.NoError(t, c.cmd.Start())
	go func() { c.done <- c.cmd.Wait() }()
	t.Cleanup(func() {
		if c.cmd.ProcessState == nil {
			c.cmd.Process.Kill()
			<-c.done
		}
	})
	return c
}

// waitFor polls until ready reports true, failing the test if the child
// exits first or nothing happens within the limit.
func (c *childProc) waitFor(t *testing.T, what string, ready func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !ready() {
		select {
		case err := <-c.done:
			c.done <- err
			t.Fatalf("child exited (%v) before %s\nstdout:\n%s\nstderr:\n%s", err, what, c.stdout.String(), c.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s within a minute; stderr:\n%s", what, c.stderr.String())
		}
	}
}

// cpuTime returns the child's user+system CPU time from /proc, so a test
// can tell that it is past start-up and simulating.
func (c *childProc) cpuTime() (time.Duration, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(c.cmd.Process.Pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// Fields after the parenthesised command name; utime and stime are the
	// 14th and 15th fields of the whole line, in clock ticks (100 Hz).
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, false
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	k, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+k) * 10 * time.Millisecond, true
}

// busy reports whether the child has done at least d of CPU work; where
// /proc is missing it falls back to wall-clock time since the first call.
func (c *childProc) busy(d time.Duration) func() bool {
	start := time.Now()
	return func() bool {
		if used, ok := c.cpuTime(); ok {
			return used >= d
		}
		return time.Since(start) >= 2*d
	}
}

// stop sends sig and waits for the exit status.
func (c *childProc) stop(t *testing.T, sig os.Signal) int {
	t.Helper()
	require.NoError(t, c.cmd.Process.Signal(sig))
	select {
	case err := <-c.done:
		c.done <- err
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("wait: %v", err)
		}
		ws := c.cmd.ProcessState.Sys().(syscall.WaitStatus)
		require.False(t, ws.Signaled(), "killed by %v instead of exiting cleanly; stderr:\n%s", ws.Signal(), c.stderr.String())
		return c.cmd.ProcessState.ExitCode()
	case <-time.After(60 * time.Second):
		t.Fatalf("still running a minute after %v; stderr:\n%s", sig, c.stderr.String())
	}
	return -1
}

// requireNoTemp fails if any temporary file of an atomic write is left in dir.
func requireNoTemp(t *testing.T, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.Contains(d.Name(), ".tmp") {
			t.Errorf("temporary file left behind: %s", path)
		}
		return nil
	})
	require.NoError(t, err)
}

// requireSummaryStatus reads dir/summary.json and checks its status.
func requireSummaryStatus(t *testing.T, dir string, status metrics.Status) metrics.Summary {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, metrics.SummaryFile))
	require.NoError(t, err)
	var s metrics.Summary
	require.NoError(t, json.Unmarshal(b, &s), "summary.json is not valid JSON: %s", b)
	require.Equal(t, status, s.Status)
	return s
}

// TestSignalStopsCleanly interrupts real child processes of run, sweep,
// compare and load: each must exit 130 having written its partial results whole.
func TestSignalStopsCleanly(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs child processes; run without -short (make test does)")
	}
	bin := buildMain(t, ".")
	scenario := filepath.Join(t.TempDir(), "long.yaml")
	require.NoError(t, os.WriteFile(scenario, []byte(longScenario), 0o644))

	t.Run("run/SIGINT", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "run")
		c := startChild(t, bin, "run", scenario, "--progress", "--out", out)
		c.waitFor(t, "progress on stderr", func() bool { return strings.Contains(c.stderr.String(), "sim time") })
		code := c.stop(t, os.Interrupt)
		require.Equal(t, exitInterrupted, code, "stderr:\n%s", c.stderr.String())
		require.Contains(t, c.stderr.String(), "interrupted")
		s := requireSummaryStatus(t, out, "interrupted")
		require.Positive(t, s.Requests.Offered)
		require.Less(t, s.SimTimeS, 6*3600.0, "an interrupted run cannot have simulated it all")
		// Rates are over the time simulated, not the six hours asked for:
		// the 1000/s offered are nearly all served.
		require.InDelta(t, s.SimTimeS, s.WindowS, 1e-6)
		require.Greater(t, s.GoodputRPS, 900.0)
		series, err := os.ReadFile(filepath.Join(out, metrics.SeriesFile))
		require.NoError(t, err)
		require.Greater(t, bytes.Count(series, []byte("\n")), 1, "time series up to the signal")
		require.FileExists(t, filepath.Join(out, "report.html"))
		requireNoTemp(t, out)
	})

	t.Run("sweep/SIGINT", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "sweep")
		// The first unit is quick, the others take minutes: the signal
		// lands after one completed unit.
		c := startChild(t, bin, "sweep", scenario, "--param", "duration", "--values", "2s,6h,6h",
			"--workers", "1", "--progress", "--out", out)
		c.waitFor(t, "one completed unit", func() bool { return strings.Contains(c.stderr.String(), "1/3") })
		code := c.stop(t, os.Interrupt)
		require.Equal(t, exitInterrupted, code, "stderr:\n%s", c.stderr.String())
		f, err := os.Open(filepath.Join(out, "sweep.csv"))
		require.NoError(t, err)
		rows, err := analysis.ReadRows("sweep.csv", f)
		f.Close()
		require.NoError(t, err)
		require.Len(t, rows, 1, "exactly the completed unit")
		require.Equal(t, "2s", rows[0].Value)
		marker, err := os.ReadFile(filepath.Join(out, partialFile))
		require.NoError(t, err)
		require.Contains(t, string(marker), "partial: interrupted")
		require.Contains(t, c.stdout.String(), "partial")
		require.NoFileExists(t, filepath.Join(out, "sweep-aggregate.csv"))
		requireNoTemp(t, out)
	})

	t.Run("compare/SIGTERM", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "compare")
		c := startChild(t, bin, "compare", scenario, "--variant", "big:services.db.workers=40", "--workers", "2", "--out", out)
		c.waitFor(t, "simulation under way", c.busy(500*time.Millisecond))
		code := c.stop(t, syscall.SIGTERM)
		require.Equal(t, exitInterrupted, code, "stderr:\n%s", c.stderr.String())
		table, err := os.ReadFile(filepath.Join(out, "compare.txt"))
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(string(table), "partial:"), "compare.txt:\n%s", table)
		require.Contains(t, string(table), "big")
		for _, v := range []string{"baseline", "big"} {
			requireSummaryStatus(t, filepath.Join(out, v), "interrupted")
		}
		requireNoTemp(t, out)
	})

	t.Run("load/SIGINT", func(t *testing.T) {
		var hits atomic.Int64
		target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
			w.WriteHeader(http.StatusOK)
		}))
		defer target.Close()
		out := filepath.Join(t.TempDir(), "load")
		c := startChild(t, bin, "load", "--target", target.URL+"/", "--rate", "50", "--duration", "10m", "--out", out)
		c.waitFor(t, "requests at the target", func() bool { return hits.Load() >= 10 })
		code := c.stop(t, os.Interrupt)
		require.Equal(t, exitInterrupted, code, "stderr:\n%s", c.stderr.String())
		s := requireSummaryStatus(t, out, "interrupted")
		require.GreaterOrEqual(t, s.Requests.Offered, int64(5))
		require.LessOrEqual(t, s.Requests.Succeeded, hits.Load(), "every success was answered by the target")
		requireNoTemp(t, out)
	})

	t.Run("load-scenario/SIGTERM", func(t *testing.T) {
		// The scenario's services run in the child on loopback ports.
		out := filepath.Join(t.TempDir(), "load-scenario")
		c := startChild(t, bin, "load", scenario, "--set", "workload.rate=50", "--set", "duration=10m", "--out", out)
		// Sending at 50/s costs little CPU: wait for a second of wall
		// time and some CPU, well past start-up.
		started, busy := time.Now(), c.busy(50*time.Millisecond)
		c.waitFor(t, "load under way", func() bool { return time.Since(started) > time.Second && busy() })
		code := c.stop(t, syscall.SIGTERM)
		require.Equal(t, exitInterrupted, code, "stderr:\n%s", c.stderr.String())
		requireSummaryStatus(t, out, "interrupted")
		requireNoTemp(t, out)
	})
}
