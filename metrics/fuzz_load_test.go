package metrics_test

import (
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stormsim/stormsim/metrics"
)

// FuzzLoad feeds Load and ReadManifest the files of a shard directory, as a
// crafted or damaged shard could hold them: whatever they contain, the
// answer is a result or an error, never a panic; a result Load accepts
// with a manifest is one the manifest vouches for, and it prints.
func FuzzLoad(f *testing.F) {
	dir := f.TempDir()
	// A small result: the fuzzer mutates every byte of every file.
	h := metrics.NewLatencyHistogram()
	metrics.RecordLatency(h, 3*time.Millisecond)
	r := &metrics.Result{
		Summary: metrics.Summary{Scenario: "s", Seed: 1, Status: "complete", Requests: metrics.Requests{Offered: 2, Succeeded: 1}},
		Series:  &metrics.TimeSeries{Interval: time.Second, Columns: []string{"goodput"}, Rows: [][]float64{{1}, {2}}},
		Latency: h,
		Faults:  []metrics.FaultWindow{{Service: "db", At: time.Second, For: time.Second, Label: "down"}},
		RunID:   "seed",
	}
	if err := metrics.Save(dir, r); err != nil {
		f.Fatal(err)
	}
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	sum, ser, hist, flt, man := read(metrics.SummaryFile), read(metrics.SeriesFile), read(metrics.HistogramsFile), read(metrics.FaultsFile), read(metrics.ManifestFile)
	f.Add(sum, ser, hist, flt, man)
	f.Add(sum, ser, hist, flt, []byte(`{"run_id": "x", "files": {"../summary.json": "00"}}`))
	f.Add([]byte(`{"seed": 1e400}`), []byte("t_s,interval_s\n"), []byte(`{"latency": {"counts": [[-1, 5]]}}`), []byte(`[{"at": -1}]`), []byte(`{}`))
	// One directory, its files overwritten by each input: creating and
	// removing a directory per input slows the fuzzer to a crawl.
	d := f.TempDir()
	f.Fuzz(func(t *testing.T, sum, ser, hist, flt, man []byte) {
		for name, b := range map[string][]byte{
			metrics.SummaryFile: sum, metrics.SeriesFile: ser, metrics.HistogramsFile: hist,
			metrics.FaultsFile: flt, metrics.ManifestFile: man,
		} {
			if err := os.WriteFile(filepath.Join(d, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		res, err := metrics.Load(d)
		if err != nil {
			return
		}
		if m, merr := metrics.ReadManifest(d); merr == nil && res.RunID != m.RunID {
			t.Fatalf("loaded run %q, manifest says %q", res.RunID, m.RunID)
		}
		// Whatever loaded is a result the summary writers take.
		if err := metrics.WriteJSON(io.Discard, &res.Summary); err != nil {
			t.Fatalf("a loaded summary does not print: %v", err)
		}
	})
}
