package metrics_test

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/metrics/metricstest"
)

func TestKindOf(t *testing.T) {
	for col, want := range map[string]metrics.ColumnKind{
		"offered":                       metrics.SumColumn,
		"goodput":                       metrics.SumColumn,
		"attempts/db":                   metrics.SumColumn,
		"queue/db":                      metrics.SumColumn,
		"utilization/db":                metrics.SumColumn,
		"queue_max/db":                  metrics.MaxColumn,
		"breaker_state/gateway->db":     metrics.MeanColumn,
		"budget_level/gateway->db":      metrics.MeanColumn,
		"budget_tokens/gateway->db":     metrics.MeanColumn,
		"latency_p99_ms":                metrics.LatencyColumn,
		"retries/gateway->db":           metrics.SumColumn,
		"queue_max/gateway->latency_x":  metrics.MaxColumn,
		"latency_p50_ms/some/odd/thing": metrics.LatencyColumn,
		metrics.ColUnknownIntents:       metrics.SumColumn,
		metrics.ColManualQueue:          metrics.SumColumn,
		metrics.ColQueries:              metrics.SumColumn,
		metrics.ColCertainP99:           metrics.MaxColumn,
	} {
		if got := metrics.KindOf(col); got != want {
			t.Errorf("KindOf(%q) = %v, want %v", col, got, want)
		}
	}
}

// TestMergePartsEqualWhole checks that parts partitioning the requests of
// a run merge back into that run: counters and histograms exactly, series
// column by column per its kind, and the saved summary and histograms byte
// for byte.
func TestMergePartsEqualWhole(t *testing.T) {
	whole := metricstest.Storm()
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprint(n, " parts"), func(t *testing.T) {
			parts := metricstest.StormParts(n)
			got, err := metrics.Merge(parts...)
			if err != nil {
				t.Fatal(err)
			}
			ws, gs := whole.Summary, got.Summary
			if gs.Requests != ws.Requests {
				t.Errorf("requests %+v, want %+v", gs.Requests, ws.Requests)
			}
			for i, w := range ws.Services {
				g := gs.Services[i]
				if g.Name != w.Name || g.Attempts != w.Attempts || g.Rejected != w.Rejected || g.TimedOut != w.TimedOut ||
					g.Succeeded != w.Succeeded || g.QueueMax != w.QueueMax {
					t.Errorf("service %d: got %+v, want %+v", i, g, w)
				}
				if g.LatencyMs != w.LatencyMs {
					t.Errorf("service %s latency %+v, want %+v", w.Name, g.LatencyMs, w.LatencyMs)
				}
				for _, f := range []struct {
					name string
					g, w float64
				}{{"amplification", g.Amplification, w.Amplification}, {"utilization", g.Utilization, w.Utilization}, {"queue_mean", g.QueueMean, w.QueueMean}} {
					if math.Abs(f.g-f.w) > 1e-12*math.Abs(f.w) {
						t.Errorf("service %s %s = %v, want %v", w.Name, f.name, f.g, f.w)
					}
				}
			}
			if !reflect.DeepEqual(gs.Edges, ws.Edges) {
				t.Errorf("edges %+v, want %+v", gs.Edges, ws.Edges)
			}
			if gs.LatencyMs != ws.LatencyMs || gs.GoodputRPS != ws.GoodputRPS || gs.Amplification != ws.Amplification {
				t.Errorf("derived: latency %+v goodput %v amp %v; want %+v %v %v",
					gs.LatencyMs, gs.GoodputRPS, gs.Amplification, ws.LatencyMs, ws.GoodputRPS, ws.Amplification)
			}
			if !got.Latency.Equals(whole.Latency) {
				t.Error("merged latency histogram differs from the whole's")
			}
			for name, h := range whole.ServiceLatency {
				if !got.ServiceLatency[name].Equals(h) {
					t.Errorf("merged %s histogram differs", name)
				}
				if !got.ServiceOKLatency[name].Equals(whole.ServiceOKLatency[name]) {
					t.Errorf("merged %s succeeded-attempt histogram differs", name)
				}
			}
			if !reflect.DeepEqual(got.Faults, whole.Faults) {
				t.Errorf("faults %+v", got.Faults)
			}
			checkSeries(t, got.Series, whole.Series, parts)

			// The files a user sees: summary and histograms byte-identical.
			dw, dg := t.TempDir(), t.TempDir()
			if err := metrics.Save(dw, whole); err != nil {
				t.Fatal(err)
			}
			if err := metrics.Save(dg, got); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{metrics.SummaryFile, metrics.HistogramsFile, metrics.FaultsFile} {
				a, _ := os.ReadFile(filepath.Join(dw, f))
				b, _ := os.ReadFile(filepath.Join(dg, f))
				if !bytes.Equal(a, b) {
					t.Errorf("%s of the merged parts differs from the whole run's", f)
				}
			}
		})
	}
}

// TestMergeLoadedParts merges shards read back from disk, as a distributed
// load run would: rounding in the files must not break the exact figures.
func TestMergeLoadedParts(t *testing.T) {
	var parts []*metrics.Result
	for _, p := range metricstest.StormParts(3) {
		dir := t.TempDir()
		if err := metrics.Save(dir, p); err != nil {
			t.Fatal(err)
		}
		l, err := metrics.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, l)
	}
	got, err := metrics.Merge(parts...)
	if err != nil {
		t.Fatal(err)
	}
	want := metrics.RoundSummary(metricstest.Storm().Summary)
	gs := metrics.RoundSummary(got.Summary)
	if gs.Requests != want.Requests || gs.LatencyMs != want.LatencyMs || gs.GoodputRPS != want.GoodputRPS ||
		gs.Amplification != want.Amplification || !reflect.DeepEqual(gs.Edges, want.Edges) {
		t.Errorf("merged loaded parts:\n got %+v\nwant %+v", gs, want)
	}
	for i, w := range want.Services {
		g := gs.Services[i]
		// Each part's utilization and queue mean were rounded to 6 digits
		// on disk; their weighted sum may move the last digit.
		if math.Abs(g.Utilization-w.Utilization) > 2e-6*w.Utilization || math.Abs(g.QueueMean-w.QueueMean) > 2e-6*w.QueueMean {
			t.Errorf("%s: utilization %v queue %v, want %v %v", w.Name, g.Utilization, g.QueueMean, w.Utilization, w.QueueMean)
		}
		g.Utilization, g.QueueMean = w.Utilization, w.QueueMean
		if !reflect.DeepEqual(g, w) {
			t.Errorf("service %s:\n got %+v\nwant %+v", w.Name, g, w)
		}
	}
}

func checkSeries(t *testing.T, got, want *metrics.TimeSeries, parts []*metrics.Result) {
	t.Helper()
	if got.Start != want.Start || got.Interval != want.Interval || len(got.Rows) != len(want.Rows) ||
		!reflect.DeepEqual(got.Columns, want.Columns) {
		t.Fatalf("series shape: start %v interval %v rows %d cols %v", got.Start, got.Interval, len(got.Rows), got.Columns)
	}
	for c, name := range want.Columns {
		kind := metrics.KindOf(name)
		for r := range want.Rows {
			g, w := got.Rows[r][c], want.Rows[r][c]
			switch kind {
			case metrics.SumColumn:
				// Exact for counts; float occupancies up to summation order.
				if math.Abs(g-w) > 1e-12*math.Abs(w) {
					t.Fatalf("row %d %s = %v, want %v", r, name, g, w)
				}
			case metrics.MaxColumn, metrics.MeanColumn:
				if g != w {
					t.Fatalf("row %d %s = %v, want %v", r, name, g, w)
				}
			case metrics.LatencyColumn:
				// Percentiles do not add: the merge is a succeeded-weighted
				// mean, which must lie within the parts' range.
				lo, hi := math.Inf(1), math.Inf(-1)
				for _, p := range parts {
					v := p.Series.Rows[r][c]
					lo, hi = min(lo, v), max(hi, v)
				}
				if g < lo-1e-9 || g > hi+1e-9 {
					t.Fatalf("row %d %s = %v, outside the parts' [%v, %v]", r, name, g, lo, hi)
				}
			}
		}
	}
}

func TestMergeTimePartition(t *testing.T) {
	// Two parts covering consecutive intervals: rows concatenate.
	a := &metrics.Result{Summary: metrics.Summary{Scenario: "s"}, Series: &metrics.TimeSeries{
		Start: 0, Interval: time.Second, Columns: []string{"offered", "queue_max/db"}, Rows: [][]float64{{1, 5}, {2, 6}}}}
	b := &metrics.Result{Summary: metrics.Summary{Scenario: "s"}, Series: &metrics.TimeSeries{
		Start: 2 * time.Second, Interval: time.Second, Columns: []string{"queue_max/db", "offered", "latency_p99_ms"}, Rows: [][]float64{{7, 3, 10}}}}
	got, err := metrics.Merge(a, b)
	if err != nil {
		t.Fatal(err)
	}
	want := &metrics.TimeSeries{Start: 0, Interval: time.Second, Columns: []string{"offered", "queue_max/db", "latency_p99_ms"},
		Rows: [][]float64{{1, 5, 0}, {2, 6, 0}, {3, 7, 10}}}
	if !reflect.DeepEqual(got.Series, want) {
		t.Errorf("series %+v, want %+v", got.Series, want)
	}
	// The parts were not modified.
	if len(a.Series.Rows) != 2 || a.Series.Rows[0][0] != 1 {
		t.Error("Merge modified a part")
	}
}

func TestMergeStatusAndWindow(t *testing.T) {
	a := &metrics.Result{Summary: metrics.Summary{Scenario: "s", SimTimeS: 10, Status: "complete",
		Requests: metrics.Requests{Offered: 10, Succeeded: 8}, GoodputRPS: 8.0 / 7}}
	b := &metrics.Result{Summary: metrics.Summary{Scenario: "s", SimTimeS: 12, Status: "diverged",
		Diverged: &metrics.Divergence{AtS: 12, Reason: "queue"}, Requests: metrics.Requests{Offered: 10, Succeeded: 6}, GoodputRPS: 6.0 / 7}}
	got, err := metrics.Merge(a, b)
	if err != nil {
		t.Fatal(err)
	}
	s := got.Summary
	if s.Status != "diverged" || s.Diverged == nil || s.SimTimeS != 12 {
		t.Errorf("status %q diverged %v sim %v", s.Status, s.Diverged, s.SimTimeS)
	}
	// The window (7 s) is inferred from succeeded / goodput.
	if s.WindowS != 7 || s.GoodputRPS != 14.0/7 {
		t.Errorf("window %v goodput %v, want 7 and 2", s.WindowS, s.GoodputRPS)
	}
}

func TestMergeErrors(t *testing.T) {
	mk := func(name string, start, iv time.Duration) *metrics.Result {
		return &metrics.Result{Summary: metrics.Summary{Scenario: name},
			Series: &metrics.TimeSeries{Start: start, Interval: iv, Columns: []string{"offered"}, Rows: [][]float64{{1}}}}
	}
	for _, tc := range []struct {
		name  string
		parts []*metrics.Result
		want  string
	}{
		{"none", nil, "no parts"},
		{"nil part", []*metrics.Result{mk("s", 0, time.Second), nil}, "part 1 is nil"},
		{"scenario", []*metrics.Result{mk("s", 0, time.Second), mk("t", 0, time.Second)}, "scenario"},
		{"interval", []*metrics.Result{mk("s", 0, time.Second), mk("s", 0, 2*time.Second)}, "interval"},
		{"grid", []*metrics.Result{mk("s", 0, time.Second), mk("s", time.Second/2, time.Second)}, "grid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := metrics.Merge(tc.parts...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func ExampleMerge() {
	shard := func(offered, succeeded int64, latenciesMs ...int) *metrics.Result {
		h := metrics.NewLatencyHistogram()
		for _, ms := range latenciesMs {
			metrics.RecordLatency(h, time.Duration(ms)*time.Millisecond)
		}
		return &metrics.Result{
			Summary: metrics.Summary{Scenario: "api", SimTimeS: 10, WindowS: 10,
				Requests: metrics.Requests{Offered: offered, Succeeded: succeeded},
				Services: []metrics.ServiceSummary{{Name: "api", Attempts: offered + 2}}},
			Latency: h,
		}
	}
	m, _ := metrics.Merge(shard(4, 3, 10, 20, 30), shard(5, 5, 40, 50, 60, 70, 80))
	s := m.Summary
	fmt.Println("offered", s.Requests.Offered, "succeeded", s.Requests.Succeeded)
	fmt.Printf("goodput %.1f/s  p50 %.0fms  amplification %.2f\n", s.GoodputRPS, s.LatencyMs.P50, s.Services[0].Amplification)
	// Output:
	// offered 9 succeeded 8
	// goodput 0.8/s  p50 40ms  amplification 1.44
}

func BenchmarkMerge(b *testing.B) {
	parts := metricstest.StormParts(4)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := metrics.Merge(parts...); err != nil {
			b.Fatal(err)
		}
	}
}

func TestMergeColumnKinds(t *testing.T) {
	cols := []string{"offered", "succeeded", "queue_max/db", "breaker_state/a->db", "latency_p99_ms"}
	mk := func(row ...float64) *metrics.Result {
		return &metrics.Result{Summary: metrics.Summary{Scenario: "s"},
			Series: &metrics.TimeSeries{Interval: time.Second, Columns: cols, Rows: [][]float64{row}}}
	}
	got, err := metrics.Merge(
		mk(10, 3, 7, 1, 100),
		mk(20, 1, 9, 2, 500),
		mk(5, 0, 4, 0, 900), // no successes: its p99 carries no weight
	)
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{
		35,                    // sum
		4,                     // sum
		9,                     // max
		1,                     // mean of 1, 2, 0
		(3*100 + 1*500) / 4.0, // weighted by succeeded
	}
	if !reflect.DeepEqual(got.Series.Rows[0], want) {
		t.Errorf("merged row %v, want %v", got.Series.Rows[0], want)
	}
}

func TestMergeLoadReports(t *testing.T) {
	mk := func(sent int64, rps float64, codes map[string]int64) *metrics.Result {
		return &metrics.Result{Summary: metrics.Summary{Scenario: "s", Load: &metrics.LoadReport{
			Target: "http://127.0.0.1:1/", TargetRPS: rps, OfferedRPS: rps, Scheduled: sent, Sent: sent,
			LateThresholdMs: 10, Workers: 4, Attempts: sent + 1, Timeouts: 1, Statuses: codes}}}
	}
	got, err := metrics.Merge(mk(10, 5, map[string]int64{"200": 9, "503": 1}), mk(20, 10, map[string]int64{"200": 20}), &metrics.Result{Summary: metrics.Summary{Scenario: "s"}})
	if err != nil {
		t.Fatal(err)
	}
	want := &metrics.LoadReport{Target: "http://127.0.0.1:1/", TargetRPS: 15, OfferedRPS: 15, Scheduled: 30, Sent: 30,
		LateThresholdMs: 10, Workers: 8, Attempts: 32, Timeouts: 2, Statuses: map[string]int64{"200": 29, "503": 1}}
	if !reflect.DeepEqual(got.Summary.Load, want) {
		t.Errorf("load %+v, want %+v", got.Summary.Load, want)
	}
}

func TestRoundSummaryDoesNotModify(t *testing.T) {
	s := metrics.Summary{GoodputRPS: 1.0 / 3, Load: &metrics.LoadReport{OfferedRPS: 2.0 / 3},
		Diverged: &metrics.Divergence{AtS: 0.1234567891}, Services: []metrics.ServiceSummary{{Utilization: 0.123456789}}}
	r := metrics.RoundSummary(s)
	if s.Load.OfferedRPS != 2.0/3 || s.Diverged.AtS != 0.1234567891 || s.Services[0].Utilization != 0.123456789 || s.GoodputRPS != 1.0/3 {
		t.Error("RoundSummary modified its argument")
	}
	if r.Load.OfferedRPS != 0.666667 || r.Diverged.AtS != 0.123457 || r.Services[0].Utilization != 0.123457 {
		t.Errorf("not rounded: %+v %+v %+v", r.Load, r.Diverged, r.Services)
	}
}

// Exact means survive a merge: shards' counts and µs sums add, so the
// merged mean is the whole run's, not a histogram estimate; without
// exact figures in every part the histogram's estimate stands.
func TestMergeExactLatency(t *testing.T) {
	part := func(us ...int64) *metrics.Result {
		h := metrics.NewLatencyHistogram()
		var sum int64
		var top time.Duration
		for _, v := range us {
			d := time.Duration(v) * time.Microsecond
			metrics.RecordLatency(h, d)
			sum += v
			top = max(top, d)
		}
		r := &metrics.Result{Latency: h, Summary: metrics.Summary{Scenario: "s", Status: "complete",
			Requests: metrics.Requests{Offered: int64(len(us)), Succeeded: int64(len(us))}}}
		r.Summary.LatencyMs = metrics.LatencyOf(h).WithExact(sum, int64(len(us)), top)
		return r
	}
	// 7,200.5 s and 1 ms: the histogram's bucket values are 0.05 % off.
	a, b := part(7_200_500_000), part(1_000, 3_000)
	got, err := metrics.Merge(a, b)
	if err != nil {
		t.Fatal(err)
	}
	l := got.Summary.LatencyMs
	if want := (7_200_500_000.0 + 1_000 + 3_000) / 3 / 1000; l.Mean != want || l.Max != 7_200_500 || l.Count != 3 {
		t.Errorf("merged latency %+v, want mean %v ms, max 7200500 ms over 3", l, want)
	}
	b.Summary.LatencyMs.Count, b.Summary.LatencyMs.SumUs = 0, 0
	got, err = metrics.Merge(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if l, want := got.Summary.LatencyMs, metrics.LatencyOf(got.Latency); l != want {
		t.Errorf("a part without exact figures: latency %+v, want the histogram's %+v", l, want)
	}
}

// TestMergeReplicas: per-replica rows merge by replica like the service's
// own fields: counts add, queue maxima take the largest, utilization adds
// weighted by each part's time over the merged time.
func TestMergeReplicas(t *testing.T) {
	part := func(reps ...metrics.ReplicaSummary) *metrics.Result {
		return &metrics.Result{Summary: metrics.Summary{Scenario: "s", SimTimeS: 10, Status: "complete",
			Services: []metrics.ServiceSummary{{Name: "db", Replicas: reps}}}}
	}
	a := part(metrics.ReplicaSummary{Replica: 0, Attempts: 5, QueueMax: 2, Utilization: 0.2}, metrics.ReplicaSummary{Replica: 1, Attempts: 7, Utilization: 0.4})
	b := part(metrics.ReplicaSummary{Replica: 1, Attempts: 1, QueueMax: 4, Utilization: 0.1}, metrics.ReplicaSummary{Replica: 0, Attempts: 3, Utilization: 0.1})
	got, err := metrics.Merge(a, b)
	if err != nil {
		t.Fatal(err)
	}
	want := []metrics.ReplicaSummary{{Replica: 0, Attempts: 8, QueueMax: 2, Utilization: 0.3}, {Replica: 1, Attempts: 8, QueueMax: 4, Utilization: 0.5}}
	reps := got.Summary.Services[0].Replicas
	if len(reps) != 2 {
		t.Fatalf("merged replicas %+v, want 2 rows", reps)
	}
	for i, w := range want {
		g := reps[i]
		if g.Replica != w.Replica || g.Attempts != w.Attempts || g.QueueMax != w.QueueMax || math.Abs(g.Utilization-w.Utilization) > 1e-12 {
			t.Errorf("replica %d: %+v, want %+v", i, g, w)
		}
	}
}
