package metrics_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/metrics/metricstest"
)

func readAll(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = b
	}
	return out
}

func TestSaveLoadRoundTrip(t *testing.T) {
	r := metricstest.Storm()
	dir := t.TempDir()
	if err := metrics.Save(dir, r); err != nil {
		t.Fatal(err)
	}
	files := readAll(t, dir)
	for _, f := range []string{metrics.SummaryFile, metrics.SeriesFile, metrics.HistogramsFile, metrics.FaultsFile, metrics.ManifestFile} {
		if len(files[f]) == 0 {
			t.Errorf("%s missing or empty", f)
		}
	}
	if len(files) != 5 {
		t.Errorf("dir holds %d files, want 5", len(files))
	}
	got, err := metrics.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := metrics.RoundSummary(r.Summary); !reflect.DeepEqual(got.Summary, want) {
		t.Errorf("summary:\n got %+v\nwant %+v", got.Summary, want)
	}
	if !got.Latency.Equals(r.Latency) {
		t.Error("latency histogram changed in the round trip")
	}
	if len(got.ServiceLatency) != len(r.ServiceLatency) {
		t.Fatalf("%d service histograms, want %d", len(got.ServiceLatency), len(r.ServiceLatency))
	}
	for name, h := range r.ServiceLatency {
		if !got.ServiceLatency[name].Equals(h) {
			t.Errorf("service %s histogram changed", name)
		}
	}
	if len(got.ServiceOKLatency) != len(r.ServiceOKLatency) {
		t.Fatalf("%d succeeded-attempt histograms, want %d", len(got.ServiceOKLatency), len(r.ServiceOKLatency))
	}
	for name, h := range r.ServiceOKLatency {
		if !got.ServiceOKLatency[name].Equals(h) || h.TotalCount() >= r.ServiceLatency[name].TotalCount() && name == "orders" {
			t.Errorf("service %s succeeded-attempt histogram changed (or holds the refusals)", name)
		}
	}
	if !reflect.DeepEqual(got.Faults, r.Faults) {
		t.Errorf("faults %+v, want %+v", got.Faults, r.Faults)
	}
	if got.Series.Interval != r.Series.Interval || len(got.Series.Rows) != len(r.Series.Rows) {
		t.Error("series changed")
	}
	// Saving what was loaded writes the same bytes: the files are a fixed
	// point, so results can be reloaded and re-saved without drift.
	dir2 := t.TempDir()
	if err := metrics.Save(dir2, got); err != nil {
		t.Fatal(err)
	}
	again := readAll(t, dir2)
	for name, b := range files {
		if !bytes.Equal(b, again[name]) {
			t.Errorf("%s differs after Load+Save", name)
		}
	}
}

func TestHistogramEncodingIsCompactAndExact(t *testing.T) {
	h := metricstest.Storm().Latency
	hj := metrics.EncodeHistogram(h)
	if hj.TotalCount != h.TotalCount() || len(hj.Counts) == 0 {
		t.Fatalf("total %d (want %d), %d buckets", hj.TotalCount, h.TotalCount(), len(hj.Counts))
	}
	back, err := hj.Decode()
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []float64{0, 10, 50, 90, 99, 99.9, 100} {
		if a, b := back.ValueAtQuantile(q), h.ValueAtQuantile(q); a != b {
			t.Errorf("p%v = %d, want %d", q, a, b)
		}
	}
	if !back.Equals(h) {
		t.Error("decoded histogram differs")
	}
}

func TestHistogramDecodeErrors(t *testing.T) {
	good := func() *metrics.HistogramJSON {
		return &metrics.HistogramJSON{Lowest: 1, Highest: 3600000000, SignificantFigures: 3, TotalCount: 3, Counts: [][2]int64{{5, 1}, {9, 2}}}
	}
	if _, err := good().Decode(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		mut  func(*metrics.HistogramJSON)
	}{
		{"total", func(h *metrics.HistogramJSON) { h.TotalCount = 4 }},
		{"order", func(h *metrics.HistogramJSON) { h.Counts[0][0] = 9 }},
		{"range", func(h *metrics.HistogramJSON) { h.Counts[1][0] = 1 << 40 }},
		{"zero count", func(h *metrics.HistogramJSON) { h.Counts[1][1] = 0; h.TotalCount = 1 }},
		{"geometry", func(h *metrics.HistogramJSON) { h.SignificantFigures = 9 }},
		{"lowest", func(h *metrics.HistogramJSON) { h.Lowest = 0 }},
	} {
		h := good()
		tc.mut(h)
		if _, err := h.Decode(); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

func TestLoadErrorsNameTheFile(t *testing.T) {
	save := func(t *testing.T) string {
		dir := t.TempDir()
		if err := metrics.Save(dir, metricstest.Storm()); err != nil {
			t.Fatal(err)
		}
		// Without the manifest, as an older stormsim saved: the damaged
		// file reaches its parser.
		if err := os.Remove(filepath.Join(dir, metrics.ManifestFile)); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	for _, tc := range []struct{ file, content, want string }{
		{metrics.SummaryFile, "{\n\"seed\": \"x\"}", "summary.json: line 2"},
		{metrics.SummaryFile, "{", "summary.json"},
		{metrics.SeriesFile, "t_s,interval_s,a\n0,1,zz\n", "timeseries.csv: line 2"},
		{metrics.HistogramsFile, `{"latency": {"lowest": 1, "highest": 100, "significant_figures": 2, "total_count": 1, "counts": []}}`, "histograms.json: latency"},
		{metrics.HistogramsFile, `{"latncy": {}}`, "histograms.json"},
		{metrics.FaultsFile, `[{"service": 3}]`, "faults.json"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			dir := save(t)
			if err := os.WriteFile(filepath.Join(dir, tc.file), []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := metrics.Load(dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
	if _, err := metrics.Load(t.TempDir()); err == nil || !strings.Contains(err.Error(), "summary.json") {
		t.Errorf("empty dir: err = %v, want one naming summary.json", err)
	}
}

func TestLoadOptionalFiles(t *testing.T) {
	dir := t.TempDir()
	if err := metrics.Save(dir, &metrics.Result{Summary: metrics.Summary{Scenario: "bare"}}); err != nil {
		t.Fatal(err)
	}
	// As a directory written by hand or by an older stormsim: no manifest
	// (with one, a listed file that is gone is an error).
	os.Remove(filepath.Join(dir, metrics.ManifestFile))
	os.Remove(filepath.Join(dir, metrics.HistogramsFile))
	os.Remove(filepath.Join(dir, metrics.FaultsFile))
	r, err := metrics.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.Summary.Scenario != "bare" || r.Series != nil || r.Latency != nil || r.Faults != nil {
		t.Errorf("got %+v", r)
	}
}

func FuzzHistogramJSON(f *testing.F) {
	h := metrics.NewLatencyHistogram()
	for _, v := range []int64{1, 10, 1000, 123456} {
		h.RecordValue(v)
	}
	b, _ := json.Marshal(metrics.EncodeHistogram(h))
	f.Add(b)
	f.Add([]byte(`{"lowest":1,"highest":100,"significant_figures":2,"total_count":0,"counts":[]}`))
	f.Add([]byte(`{"lowest":1,"highest":100,"significant_figures":2,"total_count":5,"counts":[[3,5]]}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		var hj metrics.HistogramJSON
		if json.Unmarshal(in, &hj) != nil {
			return
		}
		h, err := hj.Decode()
		if err != nil {
			return
		}
		// Whatever decodes re-encodes to the same histogram.
		back := metrics.EncodeHistogram(h)
		if back.TotalCount != hj.TotalCount || !reflect.DeepEqual(back.Counts, hj.Counts) && len(hj.Counts) > 0 {
			t.Fatalf("round trip changed %+v into %+v", hj, back)
		}
	})
}
