package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stormsim/stormsim/metrics"
)

// runawayScenario is an overload with no queue limit: rate 2000/s against a
// capacity of 1000/s (10 workers × 10 ms), and client retries.
var runawayScenario = filepath.Join("testdata", "bad", "runaway.yaml")

// TestRunawayStormDiverges checks that a storm growing without bound stops
// quickly at the in-flight limit, exits 3, names where it ran away, and
// leaves the summary, series and plots up to that point.
func TestRunawayStormDiverges(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	start := time.Now()
	stdout, stderr, code := runCLI(t, "run", runawayScenario, "--max-inflight", "20000", "--out", out)
	elapsed := time.Since(start)
	require.Equal(t, exitDiverged, code, "stderr: %s", stderr)
	// Unchecked, the arrival window alone is an hour of simulated time
	// with a queue growing by ~1000/s; the limit is reached after ~10 s.
	require.Less(t, elapsed, 30*time.Second)
	require.Contains(t, stdout, "DIVERGED")
	require.Contains(t, stderr, "diverged at")
	require.Contains(t, stderr, "limits.max_inflight")
	require.Contains(t, stderr, "largest queue: api")
	require.Equal(t, 1, strings.Count(stderr, "\n"), "one clear line: %q", stderr)

	s := requireSummaryStatus(t, out, "diverged")
	require.NotNil(t, s.Diverged)
	d := s.Diverged
	require.Equal(t, "api", d.Service)
	// The queue holds nearly every live attempt: 20000 minus the 10 in
	// service and those still waiting in a retry backoff.
	require.Greater(t, d.Queue, int64(15000))
	require.LessOrEqual(t, d.Queue, int64(20000))
	// The queue grows at ≈ (2000 − 1000)/s plus retries, so it takes
	// between 20000/3000 and 20000/1000 seconds to pass 20000.
	require.Greater(t, d.AtS, 20000.0/3000)
	require.Less(t, d.AtS, 20000.0/1000+1)
	require.InDelta(t, d.AtS, s.SimTimeS, 1e-6, "the run stops where it diverged")
	// Goodput is over the time simulated, not the hour the scenario asked for.
	require.InDelta(t, s.SimTimeS, s.WindowS, 1e-6)
	require.InDelta(t, float64(s.Requests.Succeeded)/s.SimTimeS, s.GoodputRPS, 0.01)

	res, err := metrics.Load(out)
	require.NoError(t, err)
	require.NotNil(t, res.Series)
	ts := res.Series
	require.NotEmpty(t, ts.Rows)
	// The last row is the interval the run stopped in.
	last := ts.Start + time.Duration(len(ts.Rows)-1)*ts.Interval
	require.LessOrEqual(t, last.Seconds(), d.AtS, "series ends where the run stopped")
	require.Greater(t, (last + ts.Interval).Seconds(), d.AtS, "series reaches the divergence")
	q := res.Series.Values("queue/api")
	require.NotEmpty(t, q)
	require.Greater(t, q[len(q)-1], q[0], "the queue grew")
	for _, f := range []string{"report.html", "queue.png", "amplification.png"} {
		require.FileExists(t, filepath.Join(out, f))
	}
	requireNoTemp(t, out)
}

// TestLimitFlags checks --max-inflight and --max-events on every
// simulating command: they override the scenario's limits and bad values
// are rejected by the scenario validator with the path they set.
func TestLimitFlags(t *testing.T) {
	t.Run("run/max-events", func(t *testing.T) {
		stdout, stderr, code := runCLI(t, "run", runawayScenario, "--max-events", "100000", "--format", "json")
		require.Equal(t, exitDiverged, code, stderr)
		var s metrics.Summary
		require.NoError(t, json.Unmarshal([]byte(stdout), &s))
		require.Contains(t, s.Diverged.Reason, "limits.max_events")
	})
	t.Run("compare", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "cmp")
		stdout, stderr, code := runCLI(t, "compare", runawayScenario, "--duration", "30s", "--max-inflight", "5000",
			"--variant", "bounded:services.api.queue=100", "--out", out)
		require.Equal(t, exitOK, code, stderr)
		require.Regexp(t, `status\s+diverged\s+complete`, stdout)
		requireSummaryStatus(t, filepath.Join(out, "baseline"), "diverged")
		requireSummaryStatus(t, filepath.Join(out, "bounded"), "complete")
	})
	t.Run("sweep", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "sweep")
		_, stderr, code := runCLI(t, "sweep", runawayScenario, "--duration", "30s", "--max-inflight", "5000",
			"--param", "services.api.queue", "--values", "100,null", "--out", out)
		require.Equal(t, exitOK, code, stderr)
		b, err := os.ReadFile(filepath.Join(out, "sweep.csv"))
		require.NoError(t, err)
		require.Contains(t, string(b), ",complete,")
		require.Contains(t, string(b), ",diverged,")
	})
	t.Run("bad-value", func(t *testing.T) {
		_, stderr, code := runCLI(t, "run", runawayScenario, "--max-inflight=-5")
		require.Equal(t, exitError1, code)
		require.Contains(t, stderr, "limits.max_inflight: must be > 0, got -5")
	})
}
