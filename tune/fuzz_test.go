package tune

import (
	"bytes"
	"testing"
	"time"
)

// FuzzReadSamples checks that any input either fails with an error naming
// the file, or yields non-negative samples no more numerous than its lines.
func FuzzReadSamples(f *testing.F) {
	f.Add([]byte("1\n2.5\n3ms\n"), "")
	f.Add([]byte("ts,latency\n1,2\n"), "latency")
	f.Add([]byte("a,\"b\nc\",d\n1,2,3\n"), "b\nc")
	f.Fuzz(func(t *testing.T, data []byte, column string) {
		got, err := ReadSamples(bytes.NewReader(data), "fuzz.txt", column, time.Millisecond)
		if err != nil {
			if !bytes.HasPrefix([]byte(err.Error()), []byte("fuzz.txt")) {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if len(got) == 0 {
			t.Fatal("no error and no samples")
		}
		if lines := bytes.Count(data, []byte("\n")) + 1; len(got) > lines {
			t.Fatalf("%d samples from %d lines", len(got), lines)
		}
		for _, d := range got {
			if d < 0 || d > maxLatency {
				t.Fatalf("latency %v out of range", d)
			}
		}
	})
}

// FuzzReadVegeta checks that any input either fails with an error naming
// the file or yields samples and exclusions that add up to the results.
func FuzzReadVegeta(f *testing.F) {
	f.Add([]byte(`{"code":200,"latency":5000000}` + "\n" + `{"code":0,"latency":1}`))
	f.Add([]byte(`{"attack":"","seq":0,"code":503,"timestamp":"2026-11-29T10:00:00Z","latency":1,"bytes_out":0,"bytes_in":0,"error":"x","body":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := ReadVegeta(bytes.NewReader(data), "fuzz.json")
		if err != nil {
			if !bytes.HasPrefix([]byte(err.Error()), []byte("fuzz.json")) {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		total := 0
		for _, c := range res.ByCode {
			total += c
		}
		if total != len(res.Samples)+res.Excluded {
			t.Fatalf("%d results, %d samples + %d excluded", total, len(res.Samples), res.Excluded)
		}
		for _, d := range res.Samples {
			if d < 0 || d > maxLatency {
				t.Fatalf("latency %v out of range", d)
			}
		}
	})
}
