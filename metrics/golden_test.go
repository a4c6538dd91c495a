package metrics_test

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/stormsim/stormsim/internal/golden"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/metrics/metricstest"
)

func TestWriteJSONGolden(t *testing.T) {
	r := metricstest.Storm()
	var a, b bytes.Buffer
	if err := metrics.WriteJSON(&a, &r.Summary); err != nil {
		t.Fatal(err)
	}
	// A second, independently built run prints the same bytes.
	if err := metrics.WriteJSON(&b, &metricstest.Storm().Summary); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("WriteJSON is not deterministic")
	}
	golden.Check(t, "testdata/summary.golden.json", a.Bytes())
}

func TestFormatTextGolden(t *testing.T) {
	r := metricstest.Storm()
	r.Summary.Duplicates = 3
	var buf bytes.Buffer
	if err := metrics.FormatText(&buf, &r.Summary); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "testdata/summary.golden.txt", buf.Bytes())

	r.Summary.Status = "diverged"
	r.Summary.Diverged = &metrics.Divergence{AtS: 31.5, Reason: "inflight limit", Service: "orders", Queue: 200}
	buf.Reset()
	if err := metrics.FormatText(&buf, &r.Summary); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "testdata/summary-diverged.golden.txt", buf.Bytes())
}

// The verdict comes first, before any number, so it is what a reader sees.
func TestFormatTextVerdictFirst(t *testing.T) {
	r := metricstest.Storm()
	after := 6.0
	r.Summary.Verdict = &metrics.Verdict{Recovery: "recovered", RecoveredAfterS: &after, Trigger: "orders capacity 0.5 for 10s at 20s",
		PeakAmplification: 3.25, PeakService: "orders", PeakAtS: 27, WholeRunAmplification: 1.6, PeakBasis: metrics.PeakBasis,
		Windows:     []metrics.WindowAmplification{{Label: "orders capacity 0.5 for 10s at 20s", AtS: 20, ForS: 10, Service: "orders", Amplification: 2.9}},
		FailedShare: 0.0996, UnknownShare: 0.0948}
	var buf bytes.Buffer
	if err := metrics.FormatText(&buf, &r.Summary); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(buf.String(), "\n")
	for i, want := range []string{
		"verdict    recovered 6 s after the trigger ended (trigger: orders capacity 0.5 for 10s at 20s)",
		"           peak amplification 3.25× at orders in the interval from 27 s (attempts in that interval per request offered in it; whole run 1.60×); 2.90× at orders during the fault (orders capacity 0.5 for 10s at 20s)",
		"           10.0% of requests failed, 9.5% unknown",
	} {
		if lines[i+1] != want {
			t.Errorf("line %d = %q, want %q", i+2, lines[i+1], want)
		}
	}
	golden.Check(t, "testdata/summary-verdict.golden.txt", buf.Bytes())
	r.Summary.Verdict = &metrics.Verdict{Recovery: "not recovered", Note: "goodput 3% of its baseline at the end of the arrivals", Reason: "db's queue wait ≈250ms exceeds orders' 80ms timeout"}
	if buf.Reset(); metrics.FormatText(&buf, &r.Summary) != nil || !strings.Contains(buf.String(), "verdict    NOT RECOVERED: goodput 3% of its baseline") ||
		!strings.Contains(buf.String(), "\n           why: db's queue wait ≈250ms exceeds orders' 80ms timeout\n") {
		t.Errorf("not recovered:\n%s", buf.String())
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, os.ErrClosed
	}
	f.n--
	return len(p), nil
}

func TestWritersReportErrors(t *testing.T) {
	s := &metricstest.Storm().Summary
	if err := metrics.FormatText(&failWriter{n: 2}, s); err == nil {
		t.Error("FormatText: no error from a failing writer")
	}
	if err := metrics.WriteJSON(&failWriter{}, s); err == nil {
		t.Error("WriteJSON: no error from a failing writer")
	}
}

func TestRoundFloat(t *testing.T) {
	for _, tc := range []struct{ in, want float64 }{
		{0, 0},
		{1, 1},
		{0.1 + 0.2, 0.3},
		{2.0000000000000004, 2},
		{123.4567891, 123.457},
		{-0.000123456789, -0.000123457},
		{4e-7, 0},
		{1234567.89, 1234570},
	} {
		if got := metrics.RoundFloat(tc.in); got != tc.want {
			t.Errorf("RoundFloat(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func ExampleFormatText() {
	s := &metrics.Summary{
		Scenario: "demo", Seed: 7, SimTimeS: 10, Status: "complete",
		Requests:      metrics.Requests{Offered: 1000, Succeeded: 950, Failed: 30, Unknown: 20},
		GoodputRPS:    95,
		LatencyMs:     metrics.Latency{Mean: 12.5, P50: 9.7, P90: 21, P99: 88.1, P999: 140, Max: 301},
		Amplification: 1.4,
		Services: []metrics.ServiceSummary{
			{Name: "api", Attempts: 1200, Amplification: 1.2, Succeeded: 1150, Rejected: 10, TimedOut: 40,
				Utilization: 0.42, QueueMean: 0.8, QueueMax: 12, LatencyMs: metrics.Latency{P99: 80}},
			{Name: "db", Attempts: 1400, Amplification: 1.4, Succeeded: 1300, Rejected: 60, TimedOut: 40,
				Utilization: 0.91, QueueMean: 33.2, QueueMax: 120, LatencyMs: metrics.Latency{P99: 75.5}},
		},
	}
	metrics.FormatText(os.Stdout, s)
	// Output:
	// scenario demo  seed 7  simulated 10.0s  status complete
	// requests   offered 1000  succeeded 950 (95.0%)  failed 30 (3.0%)  unknown 20 (2.0%)
	// goodput    95.0 req/s
	// latency    mean 12.5  p50 9.70  p90 21.0  p99 88.1  p99.9 140  max 301 (ms, over the 950 succeeded requests only)
	// amplify    1.40× (busiest service: its attempts over the whole run, drain included, per request offered)
	//
	// service  attempts   amp    ok  rejected  timed out   util  queue mean  queue max  p99 ms
	// api          1200  1.20  1150        10         40  42.0%       0.800         12    80.0
	// db           1400  1.40  1300        60         40  91.0%        33.2        120    75.5
}

func ExampleWriteJSON() {
	s := &metrics.Summary{Scenario: "demo", Seed: 1, SimTimeS: 2.0000000001, Status: "complete",
		Requests: metrics.Requests{Offered: 3, Succeeded: 3}, GoodputRPS: 1.0 / 3}
	metrics.WriteJSON(os.Stdout, s)
	// Output:
	// {
	//   "scenario": "demo",
	//   "seed": 1,
	//   "sim_time_s": 2,
	//   "status": "complete",
	//   "requests": {
	//     "offered": 3,
	//     "succeeded": 3,
	//     "failed": 0,
	//     "unknown": 0
	//   },
	//   "goodput_rps": 0.333333,
	//   "latency_ms": {
	//     "mean": 0,
	//     "p50": 0,
	//     "p90": 0,
	//     "p99": 0,
	//     "p999": 0,
	//     "max": 0
	//   },
	//   "amplification": 0,
	//   "duplicates": 0,
	//   "unknown_committed": 0,
	//   "unknown_not_committed": 0,
	//   "services": []
	// }
}

// A run's hints are printed, one a line, and its JSON carries them under
// "hints"; without hints neither mentions them (issue 16).
func TestHintsInTextAndJSON(t *testing.T) {
	r := metricstest.Storm()
	const hint = "hint: work drained for 30.0s after the 10s arrival window (more than 3x): bound it with services.db.queue or limits.max_drain"
	for _, hints := range [][]string{nil, {hint}} {
		r.Summary.Hints = hints
		var text, js bytes.Buffer
		if err := metrics.FormatText(&text, &r.Summary); err != nil {
			t.Fatal(err)
		}
		if err := metrics.WriteJSON(&js, &r.Summary); err != nil {
			t.Fatal(err)
		}
		want := len(hints) > 0
		if got := strings.Contains(text.String(), "\n"+hint+"\n"); got != want {
			t.Errorf("hints %q: text has the hint line = %v, want %v:\n%s", hints, got, want, text.String())
		}
		if got := strings.Contains(js.String(), `"hints"`); got != want {
			t.Errorf("hints %q: JSON has \"hints\" = %v, want %v", hints, got, want)
		}
	}
}
