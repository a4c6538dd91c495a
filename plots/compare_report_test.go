package plots_test

import (
	"image"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stormsim/stormsim/internal/chromium"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/metrics/metricstest"
	"github.com/stormsim/stormsim/plots"
)

// writeComparisonReport writes a comparison of three variants of the
// storm (one recovered, one not, one not run) with its overlays.
func writeComparisonReport(t *testing.T) string {
	t.Helper()
	dir := outDir(t)
	base, budget := metricstest.Storm(), metricstest.Storm()
	after := 4.0
	base.Summary.Verdict = &metrics.Verdict{Recovery: "not recovered", Outcome: metrics.OutcomeNotRecovered, PeakAmplification: 27.6, PeakService: "orders", PeakAtS: 21,
		Reason: "orders' queue wait ≈253ms at the end of the arrivals exceeds gateway's 80ms timeout"}
	budget.Summary.Verdict = &metrics.Verdict{Recovery: "recovered", Outcome: metrics.OutcomeRecovered, RecoveredAfterS: &after}
	qi := budget.Series.Column("queue/orders")
	for _, row := range budget.Series.Rows {
		row[qi] /= 10
	}
	notRun := &metrics.Result{Summary: metrics.Summary{Scenario: "synthetic-storm", Status: metrics.StatusInterrupted}}
	c := &plots.Comparison{Scenario: "synthetic-storm", Seed: 7, Variants: []plots.ComparedVariant{
		{Name: "baseline", Changes: "the scenario as written", Verdict: "not recovered", Reason: base.Summary.Verdict.Reason, Result: base},
		{Name: "budget", Changes: "services.gateway.calls.orders.budget.ratio=0.1", Verdict: "recovered in 4 s", Result: budget},
		{Name: "late", Changes: "workload.rate=900", Verdict: "not run", NotRun: true, Result: notRun},
	}}
	results := map[string]*metrics.Result{"baseline": base, "budget": budget}
	var files []string
	for _, col := range []string{"goodput", "queue/orders"} {
		out, err := plots.Overlay(dir, strings.ReplaceAll(col, "/", "_"), results, col, plots.WithOrder("baseline", "budget", "late"))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, out...)
	}
	if err := plots.WriteComparisonReport(dir, c, files); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, plots.ReportFile)
}

// TestComparisonReport (issue 36 item 4): compare's report.html shows the
// variants side by side: a verdict per variant, flagged, with the reason;
// the figures, none for a variant not run; the latency's population; the
// overlays inline.
func TestComparisonReport(t *testing.T) {
	b, err := os.ReadFile(writeComparisonReport(t))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{
		`<td class="warn"><strong>not recovered</strong></td>`,
		`<td class="ok"><strong>recovered in 4 s</strong></td>`,
		`<td class="notrun"><strong>not run</strong></td>`,
		"<strong>baseline</strong> not recovered: orders&#39; queue wait ≈253ms",
		"p99 latency, succeeded requests (ms)",
		"peak amplification, per request offered in the interval",
		"27.6× at orders, 21 s",
		"services.gateway.calls.orders.budget.ratio=0.1",
		"StormCharts.compare(",
		"The same overlays as static plots, beside this page: goodput.png/.svg, queue_orders.png/.svg.",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("comparison report lacks %q", want)
		}
	}
	// The not-run column has no figures: a dash in every row, no 0.
	i := strings.Index(page, "<tr><td>goodput (req/s)</td>")
	row := page[i : i+strings.Index(page[i:], "</tr>")]
	if !strings.HasSuffix(row, "<td>–</td>") {
		t.Errorf("goodput row %q: the variant not run should show –", row)
	}
	// The interactive charts draw the overlays: their static twins stay in
	// their files.
	if n := strings.Count(page, "<svg"); n != 0 {
		t.Errorf("%d inline SVGs, want none: the charts draw the 2 overlays", n)
	}
}

// TestComparisonReportInBrowser renders the comparison page in headless
// Chromium: no console errors, and not blank.
func TestComparisonReportInBrowser(t *testing.T) {
	bin := chromium.Path(t)
	console, img := render(t, bin, writeComparisonReport(t))
	if len(console) > 0 {
		t.Errorf("console output while rendering the comparison:\n%s", strings.Join(console, "\n"))
	}
	requireInked(t, img, "comparison-screenshot.png")
	// The overlays are interactive charts, no static SVGs: what is drawn
	// in the variants' colours and the fault shading is theirs.
	if n := faultPixels(img); n < 20000 { // about 150000 over the seven charts, none without them
		t.Errorf("%d pixels of fault shading: the charts do not shade the faults", n)
	}
	for _, v := range []struct {
		name string
		c    [3]uint32
	}{{"baseline", [3]uint32{0x4e, 0x79, 0xa7}}, {"budget", [3]uint32{0xf2, 0x8e, 0x2b}}} {
		if n := colourPixels(img, v.c); n < 1500 { // 3000 to 7000 along the seven charts' lines, about 300 in the legends' boxes alone
			t.Errorf("%d pixels in %s's colour: its lines are not drawn", n, v.name)
		}
	}
}

// colourPixels counts the pixels of img within 12 of c in each channel.
func colourPixels(img image.Image, c [3]uint32) int {
	n := 0
	b := img.Bounds()
	near := func(a, b uint32) bool { return a+12 >= b && b+12 >= a }
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if near(r>>8, c[0]) && near(g>>8, c[1]) && near(bl>>8, c[2]) {
				n++
			}
		}
	}
	return n
}

// A comparison whose variants follow their writes after UNKNOWN shows
// their time to certainty side by side, and says how each differs from
// the baseline; one without convergence shows none of it.
func TestComparisonReportCertainty(t *testing.T) {
	plain, err := os.ReadFile(writeComparisonReport(t))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(plain), "certainty") {
		t.Error("a comparison without convergence mentions certainty")
	}
	base, capped := metricstest.Converging(), metricstest.Converging()
	cc := *capped.Summary.Certainty
	cc.P99Ms, cc.Queries = 3100, 900
	capped.Summary.Certainty = &cc
	c := &plots.Comparison{Scenario: "synthetic-storm", Seed: 1, Variants: []plots.ComparedVariant{
		{Name: "baseline", Changes: "the scenario as written", Verdict: "recovered", Result: base},
		{Name: "capped", Changes: "workload.query.max=3", Verdict: "recovered", Result: capped},
		{Name: "plain", Changes: "workload.query=off", Verdict: "recovered", Result: metricstest.Storm()},
	}}
	dir := outDir(t)
	if err := plots.WriteComparisonReport(dir, c, nil); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, plots.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{
		`<tr class="certainty"><td>p99 to certainty (ms)</td><td>9519</td><td>3100</td><td>–</td></tr>`,
		`<tr class="certainty"><td>status queries (per querying intent)</td><td>3964 (2.65)</td><td>900 (2.65)</td><td>–</td></tr>`,
		`<li class="certainty"><strong>capped</strong> certainty vs baseline: p99 to certainty 3.07× lower (9519 → 3100 ms); status queries 4.40× fewer (3964 → 900)</li>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("comparison report lacks %q", want)
		}
	}
	if strings.Contains(page, "<strong>plain</strong> certainty") {
		t.Error("a variant without convergence is compared on it")
	}
}

// A comparison whose variants have effects shows them side by side, "–"
// for a variant without; one without effects shows none.
func TestComparisonReportEffects(t *testing.T) {
	plain, err := os.ReadFile(writeComparisonReport(t))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(plain), `class="effects"`) {
		t.Error("a comparison without effects has effect rows")
	}
	base := metricstest.Storm()
	base.Summary.Irrevocable = &metrics.Irrevocable{Sent: 900, Unknown: 37}
	for i, v := range base.Summary.Services {
		if v.Name == "db" {
			base.Summary.Services[i].VersionedWrites = &metrics.VersionedWrites{Writes: 500, Conflicts: 40, LostUpdates: 40, ConflictRate: 0.08}
		}
	}
	c := &plots.Comparison{Scenario: "synthetic-storm", Seed: 1, Variants: []plots.ComparedVariant{
		{Name: "baseline", Changes: "the scenario as written", Verdict: "recovered", Result: base},
		{Name: "plain", Changes: "services.db.versioned_write=off", Verdict: "recovered", Result: metricstest.Storm()},
	}}
	dir := outDir(t)
	if err := plots.WriteComparisonReport(dir, c, nil); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, plots.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`<tr class="effects"><td>irrevocable: unknown of sent</td><td>37 of 900</td><td>–</td></tr>`,
		`<tr class="effects"><td>versioned writes: lost updates, aborted (conflict rate)</td><td>40, 0 (8.0%)</td><td>–</td></tr>`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("comparison report lacks %q", want)
		}
	}
	if strings.Contains(string(b), "external effects:") {
		t.Error("an external-effect line in a comparison where no variant has one")
	}
}
