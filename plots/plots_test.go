package plots_test

import (
	"bytes"
	"errors"
	"flag"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/metrics/metricstest"
	"github.com/stormsim/stormsim/plots"
)

var keep = flag.String("keep", "", "also write the test plots into this directory, to look at them")

func outDir(t *testing.T) string {
	if *keep != "" {
		if err := os.MkdirAll(*keep, 0o755); err != nil {
			t.Fatal(err)
		}
		return *keep
	}
	return t.TempDir()
}

// checkPNG decodes a PNG and checks it has the plot size and is not blank:
// enough non-white pixels and enough distinct colours for axes, text and
// several coloured series.
func checkPNG(t *testing.T, path string, minColors int) image.Image {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	bounds := img.Bounds()
	if bounds.Dx() != 960 || bounds.Dy() != 480 {
		t.Errorf("%s: %dx%d, want 960x480", path, bounds.Dx(), bounds.Dy())
	}
	colors := map[[3]uint32]int{}
	ink := 0
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			colors[[3]uint32{r >> 8, g >> 8, b >> 8}]++
			if r>>8 < 0xf0 || g>>8 < 0xf0 || b>>8 < 0xf0 {
				ink++
			}
		}
	}
	// Saturated colours only (anti-aliasing makes many greys).
	saturated := 0
	for c, n := range colors {
		hi, lo := max(c[0], c[1], c[2]), min(c[0], c[1], c[2])
		if hi-lo > 60 && n >= 20 {
			saturated++
		}
	}
	total := bounds.Dx() * bounds.Dy()
	if ink < total/100 {
		t.Errorf("%s: only %d of %d pixels are not background", path, ink, total)
	}
	if saturated < minColors {
		t.Errorf("%s: %d distinct saturated colours, want ≥ %d", path, saturated, minColors)
	}
	return img
}

func checkSVG(t *testing.T, path string, want ...string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if !strings.Contains(s, "<svg") || !strings.HasSuffix(strings.TrimSpace(s), "</svg>") {
		t.Errorf("%s: not a complete SVG document", path)
	}
	for _, w := range want {
		if !strings.Contains(s, ">"+w+"<") {
			t.Errorf("%s: no text %q", path, w)
		}
	}
}

// withReplicas gives the storm's db three replicas, the last one busier
// (a gray failure), so the per-replica plots have data: summary rows, and
// series columns in which replica 2 saturates from the middle of the run.
func withReplicas(r *metrics.Result) *metrics.Result {
	for i := range r.Summary.Services {
		if s := &r.Summary.Services[i]; s.Name == "db" {
			s.Replicas = []metrics.ReplicaSummary{{Replica: 0, Utilization: 0.4}, {Replica: 1, Utilization: 0.45}, {Replica: 2, Utilization: 0.95}}
		}
	}
	ts := r.Series
	for k := range 3 {
		ts.Columns = append(ts.Columns, metrics.Column(metrics.MetricReplicaUtilization, metrics.ReplicaEntity("db", k)))
	}
	for i := range ts.Rows {
		hot := 0.4
		if i >= len(ts.Rows)/2 {
			hot = 1
		}
		ts.Rows[i] = append(ts.Rows[i], 0.4, 0.45, hot)
	}
	return r
}

func TestPlots(t *testing.T) {
	r := withReplicas(metricstest.Converging())
	dir := outDir(t)
	for _, tc := range []struct {
		name      string
		plot      plots.Plotter
		minColors int
		texts     []string
	}{
		{"amplification", plots.Amplification, 3, []string{"Amplification per service", "gateway", "orders", "db", "time (s)", "orders capacity ×0.5"}},
		{"queue", plots.Queue, 3, []string{"Queue length per service", "orders mean", "orders max", "queued requests"}},
		{"throughput", plots.Throughput, 2, []string{"Offered load vs goodput", "offered", "goodput", "failed + unknown", "requests/s"}},
		{"latency", plots.Latency, 2, []string{"End-to-end latency of succeeded requests", "p50", "p99"}},
		{"latency_cdf", plots.LatencyCDF, 3, []string{"Latency distribution (CDF)", "end-to-end (succeeded)", "orders attempts"}},
		{"breaker", plots.Breaker, 1, []string{"Circuit breaker state", "gateway-&gt;orders", "half-open"}},
		{"budget", plots.Budget, 1, []string{"Retry budget level", "gateway-&gt;orders"}},
		{"replicas", plots.Replicas, 1, []string{"Utilization per replica", "db", "replica", "2"}},
		{"replica_utilization", plots.ReplicaUtilization, 3, []string{"Utilization per replica over time", "db#0", "db#2", "time (s)"}},
		{"unknown_intents", plots.UnknownIntents, 2, []string{"Intents unknown over time", "unknown intents", "manual queue", "time (s)", "orders capacity ×0.5"}},
		{"certainty_cdf", plots.CertaintyCDF, 2, []string{"Time to certainty (CDF)", "11871 certain intents", "p50 17.0 ms", "p99 9519 ms"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := tc.plot(r)
			if err != nil {
				t.Fatal(err)
			}
			files, err := plots.Write(dir, tc.name, p)
			if err != nil {
				t.Fatal(err)
			}
			if len(files) != 2 {
				t.Fatalf("wrote %v", files)
			}
			checkPNG(t, files[0], tc.minColors)
			checkSVG(t, files[1], tc.texts...)
		})
	}
}

func TestPlotsWithoutData(t *testing.T) {
	empty := &metrics.Result{Series: &metrics.TimeSeries{Interval: 1e9, Columns: []string{"offered"}, Rows: [][]float64{{1}}}}
	for _, s := range plots.Standard {
		if _, err := s.Plot(empty); !errors.Is(err, plots.ErrNoData) && s.Name != "throughput" {
			t.Errorf("%s: err = %v, want ErrNoData", s.Name, err)
		}
		if _, err := s.Plot(&metrics.Result{}); !errors.Is(err, plots.ErrNoData) {
			t.Errorf("%s on an empty result: err = %v, want ErrNoData", s.Name, err)
		}
	}
}

func TestWriteAll(t *testing.T) {
	r := withReplicas(metricstest.Converging())
	dir := t.TempDir()
	files, err := plots.WriteAll(dir, r)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2*len(plots.Standard) {
		t.Errorf("wrote %d files, want %d: %v", len(files), 2*len(plots.Standard), files)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != len(files) {
		t.Errorf("dir holds %d entries, want %d (no temp files)", len(ents), len(files))
	}
	// Deterministic: drawing again gives the same bytes.
	dir2 := t.TempDir()
	if _, err := plots.WriteAll(dir2, r); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		a, _ := os.ReadFile(f)
		b, _ := os.ReadFile(filepath.Join(dir2, filepath.Base(f)))
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between two draws", filepath.Base(f))
		}
	}
	// Without breaker and budget columns those plots are skipped.
	r.Series = dropColumns(r.Series, "breaker_state/", "budget_")
	files, err = plots.WriteAll(t.TempDir(), r)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2*(len(plots.Standard)-2) {
		t.Errorf("wrote %v, want no breaker or budget plots", files)
	}
}

func dropColumns(ts *metrics.TimeSeries, prefixes ...string) *metrics.TimeSeries {
	out := &metrics.TimeSeries{Start: ts.Start, Interval: ts.Interval, Rows: make([][]float64, len(ts.Rows))}
	var keep []int
	for i, c := range ts.Columns {
		drop := false
		for _, p := range prefixes {
			drop = drop || strings.HasPrefix(c, p)
		}
		if !drop {
			keep = append(keep, i)
			out.Columns = append(out.Columns, c)
		}
	}
	for r, row := range ts.Rows {
		for _, i := range keep {
			out.Rows[r] = append(out.Rows[r], row[i])
		}
	}
	return out
}

func TestOverlay(t *testing.T) {
	base := metricstest.Storm()
	tuned := metricstest.Storm()
	// A variant whose queue stays at a tenth.
	qi := tuned.Series.Column("queue/orders")
	for _, row := range tuned.Series.Rows {
		row[qi] /= 10
	}
	results := map[string]*metrics.Result{"baseline": base, "with budget": tuned}
	dir := outDir(t)
	files, err := plots.Overlay(dir, "overlay_queue", results, "queue/orders",
		plots.WithTitle("orders queue by variant"), plots.WithYLabel("queued requests"))
	if err != nil {
		t.Fatal(err)
	}
	checkPNG(t, files[0], 2)
	checkSVG(t, files[1], "orders queue by variant", "baseline", "with budget", "queued requests")

	files, err = plots.Overlay(dir, "overlay_amp", results, "amplification/orders", plots.WithLogY(), plots.WithOrder("with budget"))
	if err != nil {
		t.Fatal(err)
	}
	// Only the queue differs: the amplification lines are the same, and the
	// legend says so rather than drawing one over the other unseen.
	checkSVG(t, files[1], "with budget", "baseline = with budget")

	if _, err := plots.Overlay(dir, "x", results, "nope"); err == nil || !strings.Contains(err.Error(), `"baseline"`) {
		t.Errorf("missing column: err = %v, want one naming the variant", err)
	}
	if _, err := plots.Overlay(dir, "x", nil, "queue/orders"); err == nil {
		t.Error("no results: no error")
	}
}

func BenchmarkAmplificationPNG(b *testing.B) {
	r := metricstest.Storm()
	b.ReportAllocs()
	for b.Loop() {
		p, err := plots.Amplification(r)
		if err != nil {
			b.Fatal(err)
		}
		wt, err := p.WriterTo(plots.Width, plots.Height, "png")
		if err != nil {
			b.Fatal(err)
		}
		wt.WriteTo(&bytes.Buffer{})
	}
}

var _ plots.Plotter = func(*metrics.Result) (*plot.Plot, error) { return nil, nil }
