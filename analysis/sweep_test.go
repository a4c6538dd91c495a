package analysis

import (
	"bytes"
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stormsim/stormsim/internal/golden"
	"github.com/stormsim/stormsim/shard"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/topology"
)

func TestParseRange(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr string
	}{
		{"100:300:100", []string{"100", "200", "300"}, ""},
		{"0.1:0.5:0.1", []string{"0.1", "0.2", "0.3", "0.4", "0.5"}, ""},
		{"1:2:0.4", []string{"1", "1.4", "1.8"}, ""},
		{"50ms:200ms:50ms", []string{"50ms", "100ms", "150ms", "200ms"}, ""},
		{"5:5:1", []string{"5"}, ""},
		{"1:2", nil, "want from:to:step"},
		{"3:1:1", nil, "from ≤ to"},
		{"1:3:0", nil, "step > 0"},
		{"1:3:-1", nil, "step > 0"},
		{"a:3:1", nil, "neither a number nor a duration"},
		{"1s:3:1", nil, "neither a number nor a duration"},
		{"0:1e9:1", nil, "more than"},
		{"-1e308:1e308:1", nil, "more than"},
	}
	for _, tt := range tests {
		got, err := ParseRange(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseRange(%q) error = %v, want one containing %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseRange(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestParseValuesAndShard(t *testing.T) {
	if got, err := ParseValues("1, 2ms ,x"); err != nil || !reflect.DeepEqual(got, []string{"1", "2ms", "x"}) {
		t.Errorf("ParseValues = %q, %v", got, err)
	}
	if _, err := ParseValues("1,,2"); err == nil {
		t.Error("ParseValues(1,,2): want an error for the empty value")
	}
}

func TestUnitsOrder(t *testing.T) {
	s := &Sweep{Param: "p", Values: []string{"a", "b"}, Variants: []Variant{{Name: Baseline}, {Name: "x"}}, Replicas: 2}
	got := append([]Unit(nil), s.Units()...)
	want := []Unit{
		{0, 0, 0, 0}, {1, 0, 0, 1}, {2, 0, 1, 0}, {3, 0, 1, 1},
		{4, 1, 0, 0}, {5, 1, 0, 1}, {6, 1, 1, 0}, {7, 1, 1, 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Units() = %v, want %v", got, want)
	}
}

func testSweep() *Sweep {
	return &Sweep{
		Param:    "workload.rate",
		Values:   []string{"40", "80", "120"},
		Variants: []Variant{{Name: Baseline}, {Name: "budget", Sets: []string{"budget=0.1"}}, {Name: "wide", Sets: []string{"services.db.workers=8"}}},
		Replicas: 3,
	}
}

func sweepCSV(t *testing.T, rows []Row) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := WriteRows(&b, rows); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func aggCSV(t *testing.T, rows []Row) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := WriteAggregates(&b, AggregateRows(rows)); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestSweepGoldenFake(t *testing.T) {
	rows, err := RunSweep(context.Background(), fakeRunner, fakeBuild, testSweep(), SweepOptions{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 27 {
		t.Fatalf("got %d rows, want 3 points × 3 variants × 3 replicas = 27", len(rows))
	}
	// Common random numbers: every variant of a replica runs the same seed,
	// and replica 0 runs the scenario's own.
	for _, r := range rows {
		if want := ReplicaSeed(7, r.Replica); r.Seed != want {
			t.Errorf("unit %d: seed %d, want %d", r.Index, r.Seed, want)
		}
	}
	if rows[0].Seed != 7 {
		t.Errorf("replica 0 seed %d, want the scenario's 7", rows[0].Seed)
	}
	golden.Check(t, "testdata/sweep.csv", sweepCSV(t, rows))
	golden.Check(t, "testdata/sweep-aggregate.csv", aggCSV(t, rows))
}

// The rows must not depend on the number of workers.
func TestSweepWorkersIdentical(t *testing.T) {
	s := testSweep()
	one, err := RunSweep(context.Background(), fakeRunner, fakeBuild, s, SweepOptions{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	many, err := RunSweep(context.Background(), fakeRunner, fakeBuild, s, SweepOptions{Workers: 8})
	if err != nil {
		t.Fatal(err)
	}
	if a, b := sweepCSV(t, one), sweepCSV(t, many); !bytes.Equal(a, b) {
		t.Errorf("1 worker and 8 workers differ:\n%s\nvs\n%s", a, b)
	}
}

// The union of the shards equals the whole, and so do the aggregates.
func TestShardUnionEqualsWhole(t *testing.T) {
	s := testSweep()
	whole, err := RunSweep(context.Background(), fakeRunner, fakeBuild, s, SweepOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{2, 4, 5} {
		var parts [][]Row
		total := 0
		for i := range n {
			rows, err := RunSweep(context.Background(), fakeRunner, fakeBuild, s, SweepOptions{Shard: shard.Spec{Index: i, Count: n}})
			if err != nil {
				t.Fatal(err)
			}
			total += len(rows)
			// Round trip through the CSV files, as a user merging shards would.
			back, err := ReadRows("shard.csv", bytes.NewReader(sweepCSV(t, rows)))
			if err != nil {
				t.Fatal(err)
			}
			parts = append(parts, back)
		}
		if total != len(whole) {
			t.Errorf("%d shards ran %d units, want %d", n, total, len(whole))
		}
		// Merge in reverse order, to show order does not matter.
		for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
			parts[i], parts[j] = parts[j], parts[i]
		}
		merged, err := MergeRows(parts...)
		if err != nil {
			t.Fatal(err)
		}
		if a, b := sweepCSV(t, merged), sweepCSV(t, whole); !bytes.Equal(a, b) {
			t.Errorf("%d shards merged differ from the whole:\n%s\nvs\n%s", n, a, b)
		}
		if a, b := aggCSV(t, merged), aggCSV(t, whole); !bytes.Equal(a, b) {
			t.Errorf("%d shards: aggregates differ:\n%s\nvs\n%s", n, a, b)
		}
		if _, err := MergeRows(parts[0], parts[0]); err == nil {
			t.Error("merging a shard with itself: want a duplicate-unit error")
		}
		other := append([]Row(nil), parts[1]...)
		other[0].Param = "services.db.workers"
		if _, err := MergeRows(parts[0], other); err == nil || !strings.Contains(err.Error(), "not shards of one sweep") {
			t.Errorf("merging shards of different sweeps: err = %v", err)
		}
	}
}

// TestSweepReportsFailedUnits: a unit whose run fails, or panics, is a row
// of status failed and the error names it; every other unit still runs
// (issue 17, item 3: one failing point killed the whole sweep).
func TestSweepReportsFailedUnits(t *testing.T) {
	boom := errors.New("boom")
	var calls atomic.Int64
	run := RunnerFunc(func(ctx context.Context, sc *topology.Scenario) (*metrics.Result, error) {
		calls.Add(1)
		switch sc.Workload.Rate {
		case 80:
			return nil, boom
		case 40:
			panic("sim: event scheduled before now")
		}
		return fakeRun(ctx, sc)
	})
	rows, err := RunSweep(context.Background(), run, fakeBuild, testSweep(), SweepOptions{Workers: 2})
	if !errors.Is(err, boom) || !errors.Is(err, ErrUnitsFailed) || !strings.HasPrefix(err.Error(), "sweep: 18 of 27 units failed") || !strings.Contains(err.Error(), "panicked") {
		t.Errorf("err = %v, want the failed units counted and named, wrapping boom", err)
	}
	s := testSweep()
	if len(rows) != len(s.Units()) || int(calls.Load()) != len(rows) {
		t.Fatalf("got %d rows after %d calls, want all %d units", len(rows), calls.Load(), len(s.Units()))
	}
	for _, r := range rows {
		if failed := r.Value == "80" || r.Value == "40"; failed != (r.Status == StatusFailed) {
			t.Errorf("unit %d (%s): status %q", r.Index, r.Value, r.Status)
		}
	}
}

func TestSweepValidate(t *testing.T) {
	bad := []*Sweep{
		{Param: "", Values: []string{"1"}, Variants: []Variant{{Name: Baseline}}},
		{Param: "a=b", Values: []string{"1"}, Variants: []Variant{{Name: Baseline}}},
		{Param: "a", Variants: []Variant{{Name: Baseline}}},
		{Param: "a", Values: []string{"1,2"}, Variants: []Variant{{Name: Baseline}}},
		{Param: "a", Values: []string{"1"}},
	}
	for i, s := range bad {
		if _, err := RunSweep(context.Background(), fakeRunner, fakeBuild, s, SweepOptions{}); err == nil {
			t.Errorf("sweep %d: want a validation error", i)
		}
	}
	// A bad override is reported with the unit it belongs to.
	s := &Sweep{Param: "workload.rate", Values: []string{"fast"}, Variants: []Variant{{Name: Baseline}}}
	_, err := RunSweep(context.Background(), fakeRunner, fakeBuild, s, SweepOptions{})
	if err == nil || !strings.Contains(err.Error(), "workload.rate=fast") {
		t.Errorf("err = %v, want one naming workload.rate=fast", err)
	}
}

func TestReadRowsErrors(t *testing.T) {
	var b bytes.Buffer
	if err := WriteRows(&b, nil); err != nil {
		t.Fatal(err)
	}
	header := b.String()
	tests := []struct{ in, want string }{
		{"", "reading header"},
		{"a,b\n", "not a sweep CSV"},
		{header + "x,0,p,1,baseline,0,1,complete,1,1,0,0,1,1,1,1,0,1\n", "x.csv:2: column unit"},
		{header + "0,0,p,1,baseline,0,1,complete,1,1,0,0,one,1,1,1,0,1\n", "x.csv:2: column goodput_rps"},
	}
	for _, tt := range tests {
		_, err := ReadRows("x.csv", strings.NewReader(tt.in))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ReadRows(%q) error = %v, want %q", tt.in, err, tt.want)
		}
	}
}

func TestMeanCI(t *testing.T) {
	// Known value: mean 3, s = √2.5, t(0.975, 4) = 2.776445105.
	st := MeanCI([]float64{1, 2, 3, 4, 5})
	h := 2.776445105 * math.Sqrt(2.5) / math.Sqrt(5)
	if math.Abs(st.Mean-3) > 1e-12 || math.Abs(st.Hi-3-h) > 1e-6 || math.Abs(3-st.Lo-h) > 1e-6 {
		t.Errorf("MeanCI = %+v, want 3 ± %.6f", st, h)
	}
	if st := MeanCI([]float64{4}); st.Mean != 4 || !math.IsNaN(st.Lo) || !math.IsNaN(st.Hi) {
		t.Errorf("MeanCI of one value = %+v, want 4 with no interval", st)
	}
}

// Coverage: over many samples of 5 normal values, the interval must
// contain the true mean 95 % of the time. With 4000 trials the observed
// share has standard error √(0.95·0.05/4000) ≈ 0.0034; allow 4 of them.
func TestMeanCICoverage(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const trials, mu = 4000, 10.0
	hit := 0
	xs := make([]float64, 5)
	for range trials {
		for i := range xs {
			xs[i] = mu + 3*rng.NormFloat64()
		}
		if st := MeanCI(xs); st.Lo <= mu && mu <= st.Hi {
			hit++
		}
	}
	got := float64(hit) / trials
	if se := math.Sqrt(0.95 * 0.05 / trials); math.Abs(got-0.95) > 4*se {
		t.Errorf("coverage %.4f, want 0.95 ± %.4f", got, 4*se)
	}
}

func BenchmarkAggregateRows(b *testing.B) {
	rows, err := RunSweep(context.Background(), fakeRunner, fakeBuild, testSweep(), SweepOptions{Workers: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		AggregateRows(rows)
	}
}

// A cancelled sweep stops starting units and reports how far it got.
func TestSweepCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	run := RunnerFunc(func(c context.Context, sc *topology.Scenario) (*metrics.Result, error) {
		n++
		if n == 4 {
			cancel()
		}
		return fakeRun(c, sc)
	})
	rows, err := RunSweep(ctx, run, fakeBuild, testSweep(), SweepOptions{Workers: 1})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "unit 3") {
		t.Errorf("err = %v, want context.Canceled naming unit 3", err)
	}
	if len(rows) != 3 {
		t.Errorf("%d rows, want the 3 units finished before the cancel", len(rows))
	}
}

func TestSweepCheckBuilds(t *testing.T) {
	vs := []Variant{{Name: Baseline}, {Name: "typo", Sets: []string{"services.dbb.workers=8"}}}
	tests := []struct {
		name string
		s    Sweep
		want string // "" for no error, else substrings of it
	}{
		{"all build", Sweep{Param: "workload.rate", Values: []string{"10", "20"}, Variants: vs[:1]}, ""},
		{"bad value", Sweep{Param: "workload.rate", Values: []string{"10", "x"}, Variants: vs[:1]}, "variant baseline, --param workload.rate=x"},
		{"bad variant", Sweep{Param: "workload.rate", Values: []string{"10"}, Variants: vs}, "variant typo, --param workload.rate=10"},
		{"bad param", Sweep{Param: "workload.rat", Values: []string{"10"}, Variants: vs[:1]}, `unknown path "workload.rat"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.s.CheckBuilds(fakeBuild)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("err = %v, want none", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestCheckWhole(t *testing.T) {
	whole, err := RunSweep(context.Background(), fakeRunner, fakeBuild, testSweep(), SweepOptions{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	n := len(whole)
	without := func(i int) []Row { return append(append([]Row(nil), whole[:i]...), whole[i+1:]...) }
	tests := []struct {
		name  string
		rows  []Row
		first int // -1: whole
	}{
		{"whole", whole, -1},
		{"first missing", without(0), 0},
		{"middle missing", without(5), 5},
		{"last missing", without(n - 1), n - 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckWhole(tt.rows)
			var inc *IncompleteSweepError
			switch {
			case tt.first < 0 && err != nil:
				t.Errorf("err = %v, want none", err)
			case tt.first >= 0 && (!errors.As(err, &inc) || inc.First != tt.first || inc.Want != n || inc.Have != n-1):
				t.Errorf("err = %v, want unit %d of %d missing", err, tt.first, n)
			}
		})
	}
}

// A replica in which nothing succeeded has no latency (not a latency of 0,
// which would make a collapsed system look fast), and a diverged replica,
// stopped part-way, is not averaged with complete ones.
func TestAggregateNoDataAndDiverged(t *testing.T) {
	row := func(replica int, status string, succeeded int64, goodput, p99 float64) Row {
		return Row{Unit: Unit{Replica: replica}, Param: "workload.rate", Value: "100", VariantName: Baseline,
			Measures: MeasuresOf(&metrics.Result{Summary: metrics.Summary{Status: metrics.Status(status), GoodputRPS: goodput,
				Requests:  metrics.Requests{Offered: 1000, Succeeded: succeeded},
				LatencyMs: metrics.Latency{P99: p99}}})}
	}
	rows := []Row{
		row(0, "complete", 900, 90, 40),
		row(1, "complete", 0, 0, 0), // collapsed: nothing succeeded
		row(2, "complete", 800, 80, 60),
		row(3, "diverged", 5000, 500, 2),
	}
	if p := rows[1].P99Ms; !math.IsNaN(p) {
		t.Fatalf("p99 of a replica without successes = %v, want no data (NaN)", p)
	}
	a := AggregateRows(rows)[0]
	if a.Incomplete != 1 || a.NoLatency != 1 {
		t.Errorf("incomplete %d, no latency %d; want 1, 1", a.Incomplete, a.NoLatency)
	}
	if g, _ := a.Stat("goodput_rps"); g.Mean != (90+0+80)/3.0 {
		t.Errorf("goodput mean %v, want %v (the diverged replica left out)", g.Mean, (90+0+80)/3.0)
	}
	if p, _ := a.Stat("p99_ms"); p.Mean != 50 {
		t.Errorf("p99 mean %v, want 50 (over the two replicas with successes)", p.Mean)
	}
	// No data survives the CSV round trip, as an empty cell.
	var b bytes.Buffer
	if err := WriteRows(&b, rows); err != nil {
		t.Fatal(err)
	}
	back, err := ReadRows("sweep.csv", &b)
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(back[1].P99Ms) || back[0].P99Ms != 40 {
		t.Errorf("read back p99 %v and %v, want NaN and 40", back[1].P99Ms, back[0].P99Ms)
	}
	b.Reset()
	if err := WriteAggregates(&b, []Aggregate{a}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), ",incomplete,no_latency,") {
		t.Errorf("aggregate header lacks no_latency:\n%s", b.String())
	}
	// Every replica collapsed: the latency is no data, written empty.
	all := AggregateRows([]Row{row(0, "complete", 0, 0, 0), row(1, "complete", 0, 0, 0)})[0]
	if p, _ := all.Stat("p99_ms"); !math.IsNaN(p.Mean) {
		t.Errorf("p99 mean with no successes anywhere = %v, want NaN", p.Mean)
	}
}
