package metrics_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stormsim/stormsim/metrics"
)

// A load run against a target: its answers by HTTP status are listed, as
// hey and vegeta do, and the target's server-side figures, which the
// driver cannot see, read "-", not 0.
func TestFormatTextLoadTarget(t *testing.T) {
	s := &metrics.Summary{Scenario: "load http://127.0.0.1:8080/", Status: "complete",
		Requests: metrics.Requests{Offered: 100, Succeeded: 0, Failed: 100},
		Services: []metrics.ServiceSummary{{Name: "target", Attempts: 300, Amplification: 3, Failed: 240, Rejected: 60}},
		Load: &metrics.LoadReport{Target: "http://127.0.0.1:8080/", Attempts: 300, Unmeasured: []string{"target"},
			Statuses: map[string]int64{"500": 240, "503": 60}}}
	var b bytes.Buffer
	if err := metrics.FormatText(&b, s); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, "statuses   500: 240 (80.0%)  503: 60 (20.0%)") {
		t.Errorf("no status breakdown:\n%s", out)
	}
	var row string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "target ") {
			row = l
		}
	}
	f := strings.Fields(row)
	// service attempts amp ok rejected timed-out util queue-mean queue-max p99
	if len(f) != 10 || f[6] != "-" || f[7] != "-" || f[8] != "-" || f[9] != "-" {
		t.Errorf("target row %q: want util, queue mean, queue max and p99 as -", row)
	}
	if !strings.Contains(out, "latency    - (no request succeeded") {
		t.Errorf("latency of a run with no success:\n%s", out)
	}
}

// faults.json gives fault times in seconds, and still reads the
// nanoseconds older versions wrote.
func TestFaultsJSONSeconds(t *testing.T) {
	dir := t.TempDir()
	r := &metrics.Result{Summary: metrics.Summary{Scenario: "s", Status: "complete"},
		Faults: []metrics.FaultWindow{{Service: "db", At: 20 * time.Second, For: 1500 * time.Millisecond, Label: "db capacity 0.3"}}}
	if err := metrics.Save(dir, r); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, metrics.FaultsFile))
	if err != nil {
		t.Fatal(err)
	}
	var raw []map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	if raw[0]["at_s"] != 20.0 || raw[0]["for_s"] != 1.5 || raw[0]["at"] != nil {
		t.Errorf("faults.json %s: want at_s 20 and for_s 1.5", b)
	}
	legacy := `[{"service": "db", "at": 20000000000, "for": 1500000000, "label": "x"}]`
	var got []metrics.FaultWindow
	if err := json.Unmarshal([]byte(legacy), &got); err != nil {
		t.Fatal(err)
	}
	if f := got[0]; f.At != 20*time.Second || f.For != 1500*time.Millisecond {
		t.Errorf("legacy faults.json read as %+v", f)
	}
}

// Beside the latency of succeeded requests, the summary says how long the
// failed and unknown ones took: a fast failure is not a fast success.
func TestFormatTextLostLatency(t *testing.T) {
	s := &metrics.Summary{Scenario: "s", Status: "complete", Requests: metrics.Requests{Offered: 10, Succeeded: 4, Failed: 5, Unknown: 1},
		LatencyMs:        metrics.Latency{Mean: 40, P50: 38, P99: 90, Count: 4},
		LatencyFailedMs:  &metrics.Latency{Mean: 2.5, P50: 2.4, P99: 3.1, Count: 5},
		LatencyUnknownMs: &metrics.Latency{Mean: 1000, P50: 1000, P99: 1000, Count: 1}}
	var b bytes.Buffer
	if err := metrics.FormatText(&b, s); err != nil {
		t.Fatal(err)
	}
	if want := "           5 failed after mean 2.50, p50 2.40, p99 3.10; 1 unknown after mean 1000, p50 1000, p99 1000 (ms)\n"; !strings.Contains(b.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, b.String())
	}
}

// The header names the clock SimTimeS is on: a load run ran for real.
func TestFormatTextHeaderClock(t *testing.T) {
	for _, c := range []struct {
		load *metrics.LoadReport
		want string
	}{
		{nil, "scenario s  seed 1  simulated 20.0s  status complete\n"},
		{&metrics.LoadReport{}, "scenario s  seed 1  ran 20.0s  status complete\n"},
	} {
		var b bytes.Buffer
		if err := metrics.FormatText(&b, &metrics.Summary{Scenario: "s", Seed: 1, SimTimeS: 20, Status: "complete", Load: c.load}); err != nil {
			t.Fatal(err)
		}
		if first, _, _ := strings.Cut(b.String(), "\n"); first+"\n" != c.want {
			t.Errorf("header %q, want %q", first, c.want)
		}
	}
}

// No quantile is reported above the max: one request of 7200.5 s is read
// from its histogram bucket as 7201.6 s, and clamped.
func TestQuantileNeverAboveMax(t *testing.T) {
	for _, d := range []time.Duration{7200500 * time.Millisecond, 47323963 * time.Nanosecond, 3 * time.Microsecond} {
		h := metrics.NewLatencyHistogram()
		metrics.RecordLatency(h, d)
		l := metrics.LatencyOf(h).WithExact(int64(d/time.Microsecond), 1, d)
		for name, q := range map[string]float64{"p50": l.P50, "p90": l.P90, "p99": l.P99, "p999": l.P999} {
			if q > l.Max {
				t.Errorf("%v: %s %v above max %v", d, name, q, l.Max)
			}
		}
	}
}

// A run that offered writes shows its duplicates, zero included; one
// without writes does not mention them.
func TestFormatTextDuplicatesWhenWrites(t *testing.T) {
	for _, c := range []struct {
		writes bool
		want   bool
	}{{true, true}, {false, false}} {
		var b bytes.Buffer
		if err := metrics.FormatText(&b, &metrics.Summary{Scenario: "s", Status: "complete", Writes: c.writes}); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(b.String(), "duplicates 0"); got != c.want {
			t.Errorf("writes %v: shows duplicates 0: %v, want %v\n%s", c.writes, got, c.want, b.String())
		}
	}
}
