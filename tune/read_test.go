package tune

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stormsim/stormsim/internal/golden"
)

func TestReadSamples(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name, in, column string
		unit             time.Duration
		want             []time.Duration
	}{
		{"lines", "1\n2.5\n\n# comment\n 3 \n", "", ms, []time.Duration{ms, 2500 * time.Microsecond, 3 * ms}},
		{"no final newline", "4\n5", "", ms, []time.Duration{4 * ms, 5 * ms}},
		{"crlf", "4\r\n5\r\n", "", ms, []time.Duration{4 * ms, 5 * ms}},
		{"units", "1500\n", "", time.Microsecond, []time.Duration{1500 * time.Microsecond}},
		{"duration strings", "12ms\n1.5s\n", "", ms, []time.Duration{12 * ms, 1500 * ms}},
		{"csv", "ts,latency_ms,code\n1,7,200\n2, 9.5,200\n", "latency_ms", ms, []time.Duration{7 * ms, 9500 * time.Microsecond}},
		{"csv with BOM", "\ufeffms\n2\n", "ms", time.Millisecond, []time.Duration{2 * time.Millisecond}},
		{"csv quoted", "\"latency\"\n\"3\"\n", "latency", time.Second, []time.Duration{3 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadSamples(strings.NewReader(tt.in), "x", tt.column, tt.unit)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// TestReadErrors pins the error text of every reader's bad input in
// testdata/read_errors.golden.
func TestReadErrors(t *testing.T) {
	samples := []struct{ name, in, column string }{
		{"empty", "", ""},
		{"only comments", "# nothing\n\n", ""},
		{"bad number", "1\n2\nabc\n", ""},
		{"negative", "1\n-2\n", ""},
		{"nan", "NaN\n", ""},
		{"huge", "1e30\n", ""},
		{"csv empty", "", "latency"},
		{"csv header only", "latency\n", "latency"},
		{"csv missing column", "ts,lat\n1,2\n", "latency"},
		{"csv bad number", "ts,latency\n1,2\n2,x\n", "latency"},
		{"csv empty cell", "ts,latency\n1,\n", "latency"},
		{"csv ragged", "ts,latency\n1,2\n3\n", "latency"},
		// A line of garbage is quoted shortened, not whole.
		{"long line", "1\n" + strings.Repeat("x", 5000) + "\n", ""},
	}
	var buf bytes.Buffer
	for _, c := range samples {
		_, err := ReadSamples(strings.NewReader(c.in), c.name+".txt", c.column, time.Millisecond)
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		fmt.Fprintf(&buf, "%s: %v\n", c.name, err)
	}
	vegeta := []struct{ name, in string }{
		{"vegeta empty", ""},
		{"vegeta not json", "{\"code\":200,\"latency\":5}\nlatency=5\n"},
		{"vegeta missing latency", "{\"code\":200}\n"},
		{"vegeta missing code", "{\"latency\":5}\n"},
		{"vegeta negative", "{\"code\":200,\"latency\":-5}\n"},
		{"vegeta all failed", "{\"code\":0,\"latency\":5}\n{\"code\":503,\"latency\":5}\n"},
	}
	for _, c := range vegeta {
		_, err := ReadVegeta(strings.NewReader(c.in), c.name+".json")
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		fmt.Fprintf(&buf, "%s: %v\n", c.name, err)
	}
	golden.Check(t, "testdata/read_errors.golden", buf.Bytes())
}

// TestReadVegetaSample reads the checked-in sample, written in the format
// of `vegeta encode --to json`: 12 results, of which one got no response
// (code 0), one a 500 and one a 503.
func TestReadVegetaSample(t *testing.T) {
	f, err := os.Open("testdata/vegeta.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := ReadVegeta(f, "vegeta.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Samples) != 9 || res.Excluded != 3 {
		t.Fatalf("got %d samples, %d excluded; want 9 and 3", len(res.Samples), res.Excluded)
	}
	if want := map[int]int{0: 1, 200: 8, 201: 1, 500: 1, 503: 1}; fmt.Sprint(res.ByCode) != fmt.Sprint(want) {
		t.Errorf("by code %v, want %v", res.ByCode, want)
	}
	if res.Samples[0] != 4210331*time.Nanosecond {
		t.Errorf("first latency %v, want 4.210331ms", res.Samples[0])
	}
	s := mustSamples(t, res.Samples)
	if got := s.Quantile(1); got != 31002211*time.Nanosecond {
		t.Errorf("max %v, want 31.002211ms", got)
	}
}

func BenchmarkReadSamples(b *testing.B) {
	var in strings.Builder
	in.WriteString("ts,latency_ms\n")
	for i := range 10000 {
		fmt.Fprintf(&in, "%d,%d.%03d\n", i, i%97, i%1000)
	}
	data := in.String()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ReadSamples(strings.NewReader(data), "b.csv", "latency_ms", time.Millisecond); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadVegeta(b *testing.B) {
	data, err := os.ReadFile("testdata/vegeta.json")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ReadVegeta(bytes.NewReader(data), "vegeta.json"); err != nil {
			b.Fatal(err)
		}
	}
}
