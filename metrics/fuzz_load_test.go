package metrics_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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
	// Seeds: the files of a small saved result, built in memory.
	h := metrics.NewLatencyHistogram()
	metrics.RecordLatency(h, 3*time.Millisecond)
	var sum, ser bytes.Buffer
	if err := metrics.WriteJSON(&sum, &metrics.Summary{Scenario: "s", Seed: 1, Status: "complete", Requests: metrics.Requests{Offered: 2, Succeeded: 1}}); err != nil {
		f.Fatal(err)
	}
	ts := &metrics.TimeSeries{Interval: time.Second, Columns: []string{"goodput"}, Rows: [][]float64{{1}, {2}}}
	if err := ts.WriteCSV(&ser); err != nil {
		f.Fatal(err)
	}
	hist, err := json.Marshal(metrics.Histograms{Latency: metrics.EncodeHistogram(h)})
	if err != nil {
		f.Fatal(err)
	}
	flt := []byte(`[{"service": "db", "at": 1000000000, "for": 1000000000, "label": "down"}]`)
	digest := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
	man, err := json.Marshal(metrics.Manifest{RunID: "seed", Files: map[string]string{
		metrics.SummaryFile: digest(sum.Bytes()), metrics.SeriesFile: digest(ser.Bytes()),
		metrics.HistogramsFile: digest(hist), metrics.FaultsFile: digest(flt)}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(sum.Bytes(), ser.Bytes(), hist, flt, man)
	f.Add(sum.Bytes(), ser.Bytes(), hist, flt, []byte(`{"run_id": "x", "files": {"../summary.json": "00"}}`))
	// A converging run: the certainty object and its histogram.
	certain, err := json.Marshal(metrics.Histograms{Latency: metrics.EncodeHistogram(h), Certainty: metrics.EncodeHistogram(h)})
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(`{"scenario": "s", "certainty": {"intents": 2, "p99_ms": 3, "resolved_by": {"reply": 1, "query": 1}}}`), ser.Bytes(), certain, flt, []byte(`{}`))
	f.Add([]byte(`{"seed": 1e400}`), []byte("t_s,interval_s\n"), []byte(`{"latency": {"counts": [[-1, 5]]}}`), []byte(`[{"at": -1}]`), []byte(`{}`))
	// One directory per worker, its files overwritten by each input.
	d, err := os.MkdirTemp("", "fuzzload")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { os.RemoveAll(d) })
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
