package metrics_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/metrics/metricstest"
)

func TestCSVRoundTrip(t *testing.T) {
	ts := metricstest.Storm().Series
	var buf bytes.Buffer
	if err := ts.WriteCSV(&buf); err != nil {
		t.Fatal(err)
	}
	got, err := metrics.ReadCSV(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if got.Start != ts.Start || got.Interval != ts.Interval || len(got.Rows) != len(ts.Rows) {
		t.Fatalf("got start %v interval %v rows %d, want %v %v %d", got.Start, got.Interval, len(got.Rows), ts.Start, ts.Interval, len(ts.Rows))
	}
	if strings.Join(got.Columns, ",") != strings.Join(ts.Columns, ",") {
		t.Fatalf("columns %v, want %v", got.Columns, ts.Columns)
	}
	for r := range ts.Rows {
		for c, want := range ts.Rows[r] {
			// 9 significant digits: relative error below 5e-9.
			if d := got.Rows[r][c] - want; d > 5e-9*abs(want) || -d > 5e-9*abs(want) {
				t.Fatalf("row %d %s = %v, want %v", r, ts.Columns[c], got.Rows[r][c], want)
			}
		}
	}
	// Writing what was read gives the same bytes.
	var again bytes.Buffer
	if err := got.WriteCSV(&again); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), again.Bytes()) {
		t.Error("CSV not stable across a read/write round trip")
	}
}

func abs(x float64) float64 { return max(x, -x) }

func TestCSVShortSeries(t *testing.T) {
	for _, ts := range []*metrics.TimeSeries{
		{Start: 5 * time.Second, Interval: 250 * time.Millisecond, Columns: []string{"offered"}, Rows: [][]float64{{3}}},
		{Start: 0, Interval: time.Second, Columns: []string{"a", "b"}},
	} {
		var buf bytes.Buffer
		if err := ts.WriteCSV(&buf); err != nil {
			t.Fatal(err)
		}
		got, err := metrics.ReadCSV(&buf)
		if err != nil {
			t.Fatal(err)
		}
		if len(ts.Rows) > 0 && (got.Start != ts.Start || got.Interval != ts.Interval || got.Rows[0][0] != ts.Rows[0][0]) {
			t.Errorf("got %+v, want %+v", got, ts)
		}
		if len(got.Columns) != len(ts.Columns) {
			t.Errorf("columns %v, want %v", got.Columns, ts.Columns)
		}
	}
}

func TestReadCSVErrors(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"empty", "", "line 1: empty"},
		{"bad header", "time,offered\n", "line 1: header"},
		{"repeated column", "t_s,interval_s,a,a\n", "repeated column"},
		{"not a number", "t_s,interval_s,offered\n0,1,x\n", `line 2: column "offered"`},
		{"bad time", "t_s,interval_s,offered\nnow,1,3\n", "line 2: t_s"},
		{"zero interval", "t_s,interval_s,offered\n0,0,3\n", "line 2: interval_s"},
		{"gap", "t_s,interval_s,offered\n0,1,3\n2,1,4\n", "line 3: t_s: row starts at 2s, want 1s"},
		{"interval change", "t_s,interval_s,offered\n0,1,3\n1,2,4\n", "line 3: interval_s"},
		{"short row", "t_s,interval_s,offered\n0,1\n", "line 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := metrics.ReadCSV(strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestWriteCSVRowMismatch(t *testing.T) {
	ts := &metrics.TimeSeries{Interval: time.Second, Columns: []string{"a", "b"}, Rows: [][]float64{{1}}}
	if err := ts.WriteCSV(&bytes.Buffer{}); err == nil {
		t.Error("no error for a row shorter than the columns")
	}
}

func FuzzReadCSV(f *testing.F) {
	f.Add("t_s,interval_s,offered\n0,1,3\n1,1,4\n")
	f.Add("t_s,interval_s\n")
	f.Add("t_s,interval_s,a,b\n0.5,0.25,1e3,-2\n")
	f.Fuzz(func(t *testing.T, in string) {
		ts, err := metrics.ReadCSV(strings.NewReader(in))
		if err != nil {
			return
		}
		// Anything accepted writes out and reads back to the same bytes.
		var a, b bytes.Buffer
		if err := ts.WriteCSV(&a); err != nil {
			t.Fatal(err)
		}
		ts2, err := metrics.ReadCSV(bytes.NewReader(a.Bytes()))
		if err != nil {
			t.Fatalf("re-read: %v\n%s", err, a.Bytes())
		}
		if err := ts2.WriteCSV(&b); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Fatalf("unstable:\n%s\n%s", a.Bytes(), b.Bytes())
		}
	})
}

func BenchmarkWriteCSV(b *testing.B) {
	ts := metricstest.Storm().Series
	var buf bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		if err := ts.WriteCSV(&buf); err != nil {
			b.Fatal(err)
		}
	}
}
