package plots_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stormsim/stormsim/charts"
	"github.com/stormsim/stormsim/internal/chromium"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/metrics/metricstest"
	"github.com/stormsim/stormsim/plots"
)

// scriptElement matches a script element: its attributes, its code.
var scriptElement = regexp.MustCompile(`(?s)<script([^>]*)>(.*?)</script>`)

// writeReport draws the storm's plots and its report into a directory.
func writeReport(t *testing.T) (dir string, files []string) {
	t.Helper()
	dir = outDir(t)
	r := metricstest.Storm()
	r.Summary.Status = "diverged"
	r.Summary.Diverged = nil
	files, err := plots.WriteAll(dir, r)
	if err != nil {
		t.Fatal(err)
	}
	if err := plots.WriteReport(dir, r, files); err != nil {
		t.Fatal(err)
	}
	return dir, files
}

func TestReportSelfContained(t *testing.T) {
	dir, files := writeReport(t)
	b, err := os.ReadFile(filepath.Join(dir, plots.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	// Scripts are inline (the shared chart module and the series), never
	// fetched; their code is not markup, so it is set aside before parsing.
	if !bytes.Contains(b, []byte(charts.Script())) || !bytes.Contains(b, []byte("StormCharts.fromSeries(")) {
		t.Error("the report does not draw its series with the shared chart module")
	}
	scripts := scriptElement.FindAllSubmatch(b, -1)
	if len(scripts) != 2 {
		t.Errorf("%d <script> elements, want the chart module and its call", len(scripts))
	}
	for _, m := range scripts {
		if len(bytes.TrimSpace(m[1])) > 0 {
			t.Errorf("<script%s> has attributes: scripts must be inline", m[1])
		}
	}
	d := xml.NewDecoder(bytes.NewReader(scriptElement.ReplaceAll(b, []byte("<script></script>"))))
	d.Strict = false
	d.AutoClose = xml.HTMLAutoClose
	d.Entity = xml.HTMLEntity
	svgs, tables := 0, 0
	var text strings.Builder
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("report.html does not parse: %v", err)
		}
		switch tk := tok.(type) {
		case xml.StartElement:
			switch strings.ToLower(tk.Name.Local) {
			case "svg":
				svgs++
			case "table":
				tables++
			case "link", "iframe", "object", "embed":
				t.Errorf("report has a <%s> element", tk.Name.Local)
			}
			for _, a := range tk.Attr {
				switch strings.ToLower(a.Name.Local) {
				case "src", "href", "action", "data", "poster", "srcset":
					if !strings.HasPrefix(a.Value, "#") && !strings.HasPrefix(a.Value, "data:") {
						t.Errorf("<%s %s=%q> refers outside the page", tk.Name.Local, a.Name.Local, a.Value)
					}
				}
			}
		case xml.CharData:
			text.Write(tk)
		}
	}
	for _, bad := range []string{"@import", "url(http", "url(//", "@font-face"} {
		if bytes.Contains(b, []byte(bad)) {
			t.Errorf("report contains %q", bad)
		}
	}
	// The plots the interactive charts draw are not drawn again: only
	// the others are inline (issue 36 item 14: each series was drawn twice,
	// in two colours).
	want := 0
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".svg")
		if strings.HasSuffix(f, ".svg") && !map[string]bool{"throughput": true, "amplification": true, "queue": true, "latency": true, "breaker": true, "budget": true}[name] {
			want++
		}
	}
	if svgs != want || want == 0 {
		t.Errorf("%d inline SVGs, want %d (the plots the charts do not draw)", svgs, want)
	}
	if tables < 4 {
		t.Errorf("%d tables, want summary, latency, services, calls, faults", tables)
	}
	for _, want := range []string{"synthetic-storm", "orders", "gateway → orders", "orders capacity ×0.5", "amplification.png/.svg", "goodput"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("report text lacks %q", want)
		}
	}
}

// TestReportChartOptions: the interactive charts get each service's colour,
// the one its static plots use, and the fault windows to shade.
func TestReportChartOptions(t *testing.T) {
	dir, _ := writeReport(t)
	b, err := os.ReadFile(filepath.Join(dir, plots.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	r := metricstest.Storm()
	colors := plots.NewColors(r)
	for _, svc := range []string{"gateway", "orders", "db"} {
		c := color.NRGBAModel.Convert(colors.Of(svc)).(color.NRGBA)
		want := fmt.Sprintf(`"%s":"#%02x%02x%02x"`, svc, c.R, c.G, c.B)
		if !strings.Contains(page, want) {
			t.Errorf("chart options lack %s", want)
		}
	}
	for _, f := range r.Faults {
		want := fmt.Sprintf(`{"at_s":%g,"for_s":%g,`, f.At.Seconds(), f.For.Seconds())
		if !strings.Contains(page, want) {
			t.Errorf("chart options lack the fault %s", want)
		}
	}
}

func TestReportPNGFallback(t *testing.T) {
	dir := t.TempDir()
	r := metricstest.Storm()
	p, err := plots.LatencyCDF(r)
	if err != nil {
		t.Fatal(err)
	}
	files, err := plots.Write(dir, "latency_cdf", p)
	if err != nil {
		t.Fatal(err)
	}
	if err := plots.WriteReport(dir, r, files[:1]); err != nil { // the PNG only
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, plots.ReportFile))
	if !bytes.Contains(b, []byte(`src="data:image/png;base64,iVBOR`)) {
		t.Error("PNG not embedded as a data URI")
	}
	if err := plots.WriteReport(dir, r, []string{filepath.Join(dir, "missing.svg")}); err == nil || !strings.Contains(err.Error(), "missing.svg") {
		t.Errorf("missing plot file: err = %v", err)
	}
}

// render loads page in headless Chromium (no network services, a fresh
// profile), and returns its console messages and a screenshot.
func render(t *testing.T, bin, page string) (console []string, shot image.Image) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "shot.png")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+t.TempDir(), "--enable-logging=stderr", "--v=0",
		"--screenshot="+out, "--window-size=1200,4000", "file://"+page)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Stdout = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.Bytes())
	}
	console = chromium.Console(stderr.String())
	f, err := os.Open(out)
	if err != nil {
		t.Fatalf("no screenshot: %v\n%s", err, stderr.Bytes())
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	return console, img
}

// TestReportInBrowser renders report.html in headless Chromium, when it is
// installed (and always under CI=true, where a missing browser fails), and
// checks the page shows without console errors and is not blank. A broken
// page rendered first proves the console check can fire.
func TestReportInBrowser(t *testing.T) {
	bin := chromium.Path(t)
	bad := filepath.Join(t.TempDir(), "bad.html")
	if err := os.WriteFile(bad, []byte("<!DOCTYPE html><p>x</p><script>notDefined()</script>"), 0o644); err != nil {
		t.Fatal(err)
	}
	if console, _ := render(t, bin, bad); len(console) == 0 {
		t.Fatal("a page with a script error logged nothing: the console check is blind")
	}

	dir, _ := writeReport(t)
	console, img := render(t, bin, filepath.Join(dir, plots.ReportFile))
	if len(console) > 0 {
		t.Errorf("console output while rendering the report:\n%s", strings.Join(console, "\n"))
	}
	requireInked(t, img, "report-screenshot.png")
	// The interactive charts shade the storm's fault windows (issue 36
	// item 14), and the only static plot left on the page, the CDF, has
	// none: the shading's colour must be on the screenshot.
	if n := faultPixels(img); n < 20000 { // about 150000 when shaded, 1200 (antialiased red lines) when not
		t.Errorf("%d pixels of fault shading: the charts do not shade the faults", n)
	}
}

// faultPixels counts the pixels of img in the colour of the fault shading
// (faultFill, 15 % of #d62728, over white).
func faultPixels(img image.Image) int {
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			r, g, bl = r>>8, g>>8, bl>>8
			if r >= 240 && g >= 210 && g <= 230 && bl >= 210 && bl <= 230 {
				n++
			}
		}
	}
	return n
}

// requireInked fails when a screenshot looks blank (little ink, hardly any
// colour), and keeps it under -keep as name.
func requireInked(t *testing.T, img image.Image, name string) {
	t.Helper()
	b := img.Bounds()
	ink, colored := 0, 0
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			r, g, bl = r>>8, g>>8, bl>>8
			if r < 0xf0 || g < 0xf0 || bl < 0xf0 {
				ink++
			}
			if max(r, g, bl)-min(r, g, bl) > 60 {
				colored++
			}
		}
	}
	total := b.Dx() * b.Dy() / 4
	if ink < total/50 || colored < 200 {
		t.Errorf("screenshot looks blank: %d of %d sampled pixels inked, %d coloured", ink, total, colored)
	}
	if *keep != "" {
		f, err := os.Create(filepath.Join(*keep, name))
		if err == nil {
			png.Encode(f, img)
			f.Close()
		}
	}
}

// The verdict opens the report, before the tables, flagged when bad.
func TestReportVerdictFirst(t *testing.T) {
	r := metricstest.Storm()
	r.Summary.Verdict = &metrics.Verdict{Recovery: "not recovered", Note: "goodput 3% of its baseline at the end of the arrivals",
		PeakAmplification: 27.6, PeakService: "db", PeakAtS: 21, FailedShare: 0.713, UnknownShare: 0.012}
	r.Summary.LatencyAllMs = &metrics.Latency{Mean: 118, P50: 98, P90: 300, P99: 511, P999: 1000, Max: 1514, Count: 22099}
	page := reportPage(t, r)
	if !strings.Contains(page, "<td>all requests (22099), each at its time to its outcome</td><td>118</td><td>98.0</td><td>300</td><td>511</td>") {
		t.Error("report lacks the latency of all requests")
	}
	v, summary := strings.Index(page, `<div id="verdict" class="warn">`), strings.Index(page, "<h2>Summary</h2>")
	if v < 0 || summary < 0 || v > summary {
		t.Fatalf("verdict at %d, summary at %d: want a flagged verdict before the summary", v, summary)
	}
	for _, want := range []string{"NOT RECOVERED: goodput 3% of its baseline", "peak amplification 27.6× at db", "71.3% of requests failed, 1.2% unknown",
		"succeeded requests (9667)"} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

// A load run's report lists the HTTP answers by status, and shows the
// target's unmeasured figures as "–", not 0.
func TestReportLoadStatuses(t *testing.T) {
	r := &metrics.Result{Summary: metrics.Summary{Scenario: "load target", Status: "complete",
		Requests: metrics.Requests{Offered: 10, Failed: 10},
		Services: []metrics.ServiceSummary{{Name: "target", Attempts: 30, Failed: 30}},
		Load:     &metrics.LoadReport{Statuses: map[string]int64{"500": 24, "503": 6}, Timeouts: 2, Unmeasured: []string{"target"}}}}
	page := reportPage(t, r)
	for _, want := range []string{"<h2>HTTP answers</h2>", "<td>500</td><td>24</td><td>80.0%</td>", "<td>503</td><td>6</td><td>20.0%</td>",
		"<td>target</td><td>30</td><td>0.00</td><td>0</td><td>30</td><td>0</td><td>0</td><td>0</td><td>–</td><td>–</td><td>–</td><td>–</td><td>–</td>"} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

// reportPage writes r's report without plots and returns its HTML.
func reportPage(t *testing.T, r *metrics.Result) string {
	t.Helper()
	dir := t.TempDir()
	if err := plots.WriteReport(dir, r, nil); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, plots.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The report shows where an attempt's time went when the edges carry a
// connection pool (simulator) or measured phases (load mode), and says
// nothing of it otherwise.
func TestReportConnectionPhases(t *testing.T) {
	edge := metrics.EdgeSummary{From: "front", To: "back", Calls: 10, Attempts: 12}
	plain := &metrics.Result{Summary: metrics.Summary{Scenario: "plain", Status: "complete", Edges: []metrics.EdgeSummary{edge}}}
	if page := reportPage(t, plain); strings.Contains(page, "Where the time went") {
		t.Error("a report without pools or phases has a phase section")
	}
	edge.Pool = &metrics.PoolSummary{Acquired: 12, Waited: 5, WaitMeanMs: 1.5, WaitMaxMs: 9, Handshakes: 4, ConnectTimeouts: 2, Resets: 1}
	edge.Phases = &metrics.PhaseReport{
		Phases: map[string]metrics.PhaseStat{
			"connect":         {Count: 4, MeanMs: 2, P50Ms: 2, P99Ms: 3, MaxMs: 3},
			"first_byte":      {Count: 10, MeanMs: 20, P50Ms: 18, P99Ms: 45, MaxMs: 50},
			metrics.PhaseCold: {Count: 4, MeanMs: 30, P50Ms: 28, P99Ms: 60, MaxMs: 61},
		},
		FailedIn: map[string]int64{"connect": 2},
		NotSent:  2, NewConnections: 4, Handshakes: 4, Reused: 8, Waited: 5,
	}
	r := &metrics.Result{Summary: metrics.Summary{Scenario: "phases", Status: "complete", Edges: []metrics.EdgeSummary{edge}}}
	page := reportPage(t, r)
	for _, want := range []string{
		"<h2>Where the time went</h2>",
		"<th>pool front → back</th>",
		"<td></td><td>12</td><td>5</td><td>1.50</td><td>9.00</td><td>4</td><td>0 / 2 / 0</td><td>1</td>",
		// In the order they happen, the cold attempts last.
		"<td>connect</td><td>4</td><td>2.00</td><td>2.00</td><td>3.00</td><td>3.00</td><td>2</td></tr>\n<tr><td>first_byte</td><td>10</td><td>20.0</td><td>18.0</td><td>45.0</td><td>50.0</td><td>0</td></tr>\n<tr><td>attempt_cold</td>",
		"not sent 2; 4 new connections, 4 handshakes, 8 attempts on a reused one, 5 waited for one",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(page, "transparent retry") {
		t.Error("an edge without grpc-go transparent retries reports them")
	}
	edge.Phases.GRPCTransparentRetries = 3
	r.Summary.Edges = []metrics.EdgeSummary{edge}
	if want := "5 waited for one; 3 streams grpc-go sent again itself, unseen by the callee (transparent retry)"; !strings.Contains(reportPage(t, r), want) {
		t.Errorf("report lacks %q", want)
	}
}

// A run that follows its writes after UNKNOWN has a certainty section
// (time to certainty, resolved by, alerts and the manual queue, the query
// load per service) and both certainty plots; a run without convergence
// has neither.
func TestReportCertainty(t *testing.T) {
	plainDir, plainFiles := writeReport(t)
	b, err := os.ReadFile(filepath.Join(plainDir, plots.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), `id="certainty"`) || strings.Contains(strings.Join(plainFiles, " "), "certainty") {
		t.Error("a run without convergence has a certainty section or plot")
	}

	dir := outDir(t)
	r := metricstest.Converging()
	files, err := plots.WriteAll(dir, r)
	if err != nil {
		t.Fatal(err)
	}
	if err := plots.WriteReport(dir, r, files); err != nil {
		t.Fatal(err)
	}
	b, err = os.ReadFile(filepath.Join(dir, plots.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{
		`<h2 id="certainty">Certainty</h2>`,
		`<tr><td>11871 of 12000 intents became certain</td><td>569</td><td>17.0</td><td>9519</td><td>16997</td></tr>`,
		`<tr><td>query</td><td>1039</td><td>8.7%</td></tr>`,
		`<tr><td>never</td><td>40</td><td>0.3%</td></tr>`,
		`<tr><td>alerts (unknown past alert_after)</td><td>215</td></tr>`,
		`<tr><td>manual queue: longest, at the end</td><td>89, 89</td></tr>`,
		`<tr><td>orders</td><td>26708</td><td>3964</td><td>14.8%</td><td>0</td></tr>`,
		`<tr><td>db</td><td>19280</td><td>0</td><td>0.0%</td><td>663</td></tr>`,
		`<figure id="fig-certainty_cdf">`, ">Time to certainty (CDF)<",
		// The interactive charts draw the unknown intents; the static
		// plot is left beside the page.
		`"unknown_intents"`, "unknown_intents.png/.svg",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

// A run with effects has an Effects section naming each service's external
// effect and versioned writes; one without has none.
func TestReportEffects(t *testing.T) {
	plainDir, _ := writeReport(t)
	b, err := os.ReadFile(filepath.Join(plainDir, plots.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), `id="effects"`) {
		t.Error("a run without effects has an effects section")
	}
	dir := outDir(t)
	r := metricstest.Storm()
	r.Summary.Irrevocable = &metrics.Irrevocable{Sent: 900, Unknown: 37}
	for i, v := range r.Summary.Services {
		switch v.Name {
		case "orders":
			r.Summary.Services[i].Effects = &metrics.Effects{Sent: 1000, Delivered: 940, Duplicates: 12, Absorbed: 60}
		case "db":
			r.Summary.Services[i].VersionedWrites = &metrics.VersionedWrites{Writes: 500, Conflicts: 40, Redone: 30, LostUpdates: 7, Aborted: 3, ConflictRate: 0.08}
		}
	}
	if err := plots.WriteReport(dir, r, nil); err != nil {
		t.Fatal(err)
	}
	if b, err = os.ReadFile(filepath.Join(dir, plots.ReportFile)); err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{
		`<h2 id="effects">Effects</h2>`,
		`<tr><td>passed</td><td>900</td><td>37</td><td>4.1%</td></tr>`,
		`<tr><td>orders</td><td>1000</td><td>940</td><td>12</td><td>60</td></tr>`,
		`<tr><td>db</td><td>500</td><td>40</td><td>8.0%</td><td>30</td><td>7</td><td>3</td></tr>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}
