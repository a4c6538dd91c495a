package plots

import (
	"fmt"
	"html/template"
	"image/color"
	"slices"

	"github.com/stormsim/stormsim/charts"
	"github.com/stormsim/stormsim/metrics"
)

// Comparison is what WriteComparisonReport shows: a scenario run under
// several variants with one seed, each with its verdict and result. It is
// plain data so that plots needs nothing of the package that ran it.
type Comparison struct {
	Scenario string
	Seed     uint64
	Variants []ComparedVariant
}

// ComparedVariant is one variant of a Comparison.
type ComparedVariant struct {
	Name string
	// Changes says what the variant changed ("the scenario as written",
	// the overrides it sets).
	Changes string
	// Verdict is its table cell ("recovered in 3 s", "not run", ...);
	// Reason the verdict's one-line why, if any.
	Verdict, Reason string
	// NotRun marks a variant interrupted before it offered a request:
	// it has no figures, and none are shown.
	NotRun bool
	Result *metrics.Result
}

// WriteComparisonReport writes dir/report.html (atomically): one
// self-contained page with the variants side by side (their verdicts, the
// reasons, a table of their figures, what each changed) and the overlay
// plots given in plotFiles (Overlay's files), in which every variant has
// the colour of its column and the fault windows are shaded.
func WriteComparisonReport(dir string, c *Comparison, plotFiles []string) error {
	figs, err := reportFigures(plotFiles)
	if err != nil {
		return err
	}
	data := comparisonData{Comparison: c}
	hex := make([]string, len(c.Variants))
	for i := range c.Variants {
		data.Colors = append(data.Colors, cssColor(palette[i%len(palette)]))
		hex[i] = string(data.Colors[i])
	}
	if len(c.Variants) > 0 && c.Variants[0].Result != nil {
		data.Faults = c.Variants[0].Result.Faults
	}
	if cc := compareChartsOf(c, hex); cc != nil {
		data.Charts = cc
		data.ChartScript, data.ChartStyle = charts.Script(), charts.Style()
		opts := chartOptions{Colors: map[string]string{}, Faults: []chartFault{}}
		if len(c.Variants) > 0 && c.Variants[0].Result != nil {
			opts = chartOptionsOf(c.Variants[0].Result)
		}
		for _, v := range cc.Variants {
			opts.Colors[v.Name] = v.Color
		}
		data.ChartOptions = opts
	}
	// The interactive charts draw the overlays: a static twin would draw
	// each again, so it is left to its files.
	for _, f := range figs {
		if data.Charts.charted(f.Name) {
			data.Files = append(data.Files, f.Name)
		} else {
			data.Figures = append(data.Figures, f)
		}
	}
	return writePage(dir, comparisonTmpl, data)
}

type comparisonData struct {
	*Comparison
	// Colors are the variants' line colours in the overlays, by column.
	Colors  []template.CSS
	Faults  []metrics.FaultWindow
	Figures []figureData
	// Charts, drawn by the live page's chart module (package charts) with
	// ChartScript, ChartStyle and ChartOptions, overlay the variants
	// interactively; nil when some variant has no time series. Files are
	// the static overlays they stand for, written beside the page.
	Charts       *compareCharts
	ChartScript  template.JS
	ChartStyle   template.CSS
	ChartOptions chartOptions
	Files        []string
}

// cssColor is c as a CSS hex colour.
func cssColor(c color.NRGBA) template.CSS {
	return template.CSS(fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B))
}

// comparisonRow is one line of the comparison table.
type comparisonRow struct {
	Label string
	Cell  func(s *metrics.Summary) string
}

// comparisonRows are the figures of the comparison table, each read from a
// variant's summary. The latency row names its population.
var comparisonRows = []comparisonRow{
	{"goodput (req/s)", func(s *metrics.Summary) string { return num(s.GoodputRPS) }},
	{"offered", func(s *metrics.Summary) string { return fmt.Sprint(s.Requests.Offered) }},
	{"succeeded", func(s *metrics.Summary) string { return fmt.Sprint(s.Requests.Succeeded) }},
	{"failed", func(s *metrics.Summary) string { return fmt.Sprint(s.Requests.Failed) }},
	{"unknown", func(s *metrics.Summary) string { return fmt.Sprint(s.Requests.Unknown) }},
	{"p99 latency, succeeded requests (ms)", func(s *metrics.Summary) string {
		if s.Requests.Succeeded == 0 {
			return "–"
		}
		return num(s.LatencyMs.P99)
	}},
	{"p99 latency, all requests (ms)", func(s *metrics.Summary) string {
		if s.LatencyAllMs == nil || s.LatencyAllMs.Count == 0 {
			return "–"
		}
		return num(s.LatencyAllMs.P99)
	}},
	{"amplification, whole run", func(s *metrics.Summary) string { return num(s.Amplification) + "×" }},
	{"peak amplification, per request offered in the interval", func(s *metrics.Summary) string {
		if s.Verdict == nil || s.Verdict.PeakService == "" {
			return "–"
		}
		return fmt.Sprintf("%s× at %s, %g s", num(s.Verdict.PeakAmplification), s.Verdict.PeakService, s.Verdict.PeakAtS)
	}},
	{"peak queue", func(s *metrics.Summary) string {
		var q int64
		for _, svc := range s.Services {
			q = max(q, svc.QueueMax)
		}
		return fmt.Sprint(q)
	}},
	{"duplicates", func(s *metrics.Summary) string { return fmt.Sprint(s.Duplicates) }},
	{"status", func(s *metrics.Summary) string { return string(s.Status) }},
}

// certaintyRows are the comparison table's lines on the writes'
// convergence after UNKNOWN, shown when a variant has a Certainty; a
// variant without one shows "–".
var certaintyRows = []comparisonRow{
	{"p50 to certainty (ms)", certaintyCell(func(c *metrics.Certainty) string { return certainMs(c, c.P50Ms) })},
	{"p99 to certainty (ms)", certaintyCell(func(c *metrics.Certainty) string { return certainMs(c, c.P99Ms) })},
	{"max to certainty (ms)", certaintyCell(func(c *metrics.Certainty) string { return certainMs(c, c.MaxMs) })},
	{"unresolved (manual or never)", certaintyCell(func(c *metrics.Certainty) string {
		return fmt.Sprintf("%d of %d intents", c.Unresolved(), c.Intents)
	})},
	{"alerts", certaintyCell(func(c *metrics.Certainty) string { return fmt.Sprint(c.Alerts) })},
	{"status queries (per querying intent)", certaintyCell(func(c *metrics.Certainty) string {
		return fmt.Sprintf("%d (%s)", c.Queries, num(c.QueriesPerIntent))
	})},
}

// effectRows are the comparison table's lines on what retries did beyond
// the request's outcome, shown when a variant has irrevocable steps,
// external effects or versioned writes; "–" where a variant has none.
var effectRows = []comparisonRow{
	{"irrevocable: unknown of sent", func(s *metrics.Summary) string {
		if s.Irrevocable == nil {
			return "–"
		}
		return fmt.Sprintf("%d of %d", s.Irrevocable.Unknown, s.Irrevocable.Sent)
	}},
	{"external effects: duplicates, absorbed by key", func(s *metrics.Summary) string {
		e := s.TotalEffects()
		if e == nil {
			return "–"
		}
		return fmt.Sprintf("%d, %d", e.Duplicates, e.Absorbed)
	}},
	{"versioned writes: lost updates, aborted (conflict rate)", func(s *metrics.Summary) string {
		w := s.TotalVersionedWrites()
		if w == nil {
			return "–"
		}
		return fmt.Sprintf("%d, %d (%.1f%%)", w.LostUpdates, w.Aborted, 100*w.ConflictRate)
	}},
}

// certaintyCell reads a row's cell from a summary's Certainty.
func certaintyCell(f func(c *metrics.Certainty) string) func(s *metrics.Summary) string {
	return func(s *metrics.Summary) string {
		if s.Certainty == nil {
			return "–"
		}
		return f(s.Certainty)
	}
}

// certainMs is a time to certainty, "–" when nothing became certain.
func certainMs(c *metrics.Certainty, ms float64) string {
	if c.Certain() == 0 {
		return "–"
	}
	return num(ms)
}

// hasCertainty reports whether a variant of c has a Certainty.
func (c *Comparison) hasCertainty() bool {
	for _, v := range c.Variants {
		if !v.NotRun && v.Result != nil && v.Result.Summary.Certainty != nil {
			return true
		}
	}
	return false
}

// CertaintyVersus is how variant i's convergence differs from the
// baseline's (the first variant's), "" when it does not notably or either
// has none (metrics.CertaintyVersus).
func (c *Comparison) CertaintyVersus(i int) string {
	if i == 0 || len(c.Variants) <= i || c.Variants[0].Result == nil || c.Variants[i].Result == nil || c.Variants[i].NotRun {
		return ""
	}
	return metrics.CertaintyVersus(c.Variants[0].Result.Summary.Certainty, c.Variants[i].Result.Summary.Certainty)
}

// num is the report's number format (reportFuncs' "num").
func num(x float64) string { return reportFuncs["num"].(func(float64) string)(x) }

var comparisonFuncs = template.FuncMap{
	"rows": func() []comparisonRow { return comparisonRows },
	"effectRows": func(c *Comparison) []comparisonRow {
		// Only the lines some variant has a figure for.
		var rows []comparisonRow
		for _, r := range effectRows {
			if slices.ContainsFunc(c.Variants, func(v ComparedVariant) bool {
				return !v.NotRun && v.Result != nil && r.Cell(&v.Result.Summary) != "–"
			}) {
				rows = append(rows, r)
			}
		}
		return rows
	},
	"certaintyRows": func(c *Comparison) []comparisonRow {
		if !c.hasCertainty() {
			return nil
		}
		return certaintyRows
	},
	"bad": func(v ComparedVariant) bool {
		if v.NotRun || v.Result == nil {
			return false
		}
		s := &v.Result.Summary
		return s.Status == metrics.StatusDiverged || (s.Verdict != nil && s.Verdict.Bad())
	},
	"cell": func(row comparisonRow, v ComparedVariant) string {
		if v.NotRun || v.Result == nil {
			return "–"
		}
		return row.Cell(&v.Result.Summary)
	},
	"secs":      reportFuncs["secs"],
	"title":     reportFuncs["title"],
	"pageStyle": reportFuncs["pageStyle"],
}

var comparisonTmpl = newPage("comparison", comparisonFuncs, `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>stormsim comparison: {{.Scenario}}</title>
<style>
{{pageStyle}}
{{.ChartStyle}}
.warn { background: #fdecea; }
.ok { background: #edf7ed; }
.notrun { background: #f3f3f3; color: #666; }
th.variant { border-bottom: 4px solid; }
ul.reasons li { margin: 0.3em 0; }
</style>
</head>
<body>
<h1>{{.Scenario}}: {{len .Variants}} variants compared</h1>
<p class="meta">seed {{.Seed}}: every variant saw the same arrivals and service times (common random numbers)</p>

<h2>Verdicts</h2>
<table id="comparison">
<tr><th></th>{{range $i, $v := .Variants}}<th class="variant" style="border-bottom-color: {{index $.Colors $i}}">{{$v.Name}}</th>{{end}}</tr>
<tr><td>verdict</td>{{range .Variants}}<td class="{{if .NotRun}}notrun{{else if bad .}}warn{{else}}ok{{end}}"><strong>{{.Verdict}}</strong></td>{{end}}</tr>
{{range $r := rows}}<tr><td>{{$r.Label}}</td>{{range $.Variants}}<td>{{cell $r .}}</td>{{end}}</tr>
{{end}}{{range $r := certaintyRows .Comparison}}<tr class="certainty"><td>{{$r.Label}}</td>{{range $.Variants}}<td>{{cell $r .}}</td>{{end}}</tr>
{{end}}{{range $r := effectRows .Comparison}}<tr class="effects"><td>{{$r.Label}}</td>{{range $.Variants}}<td>{{cell $r .}}</td>{{end}}</tr>
{{end}}</table>
<ul class="reasons">
{{range .Variants}}{{if .Reason}}<li><strong>{{.Name}}</strong> {{.Verdict}}: {{.Reason}}</li>
{{end}}{{end}}{{range $i, $v := .Variants}}{{with $.CertaintyVersus $i}}<li class="certainty"><strong>{{$v.Name}}</strong> certainty vs {{(index $.Variants 0).Name}}: {{.}}</li>
{{end}}{{end}}</ul>

<h2>Variants</h2>
<table>
<tr><th>variant</th><th class="text">what it changes</th></tr>
{{range .Variants}}<tr><td>{{.Name}}</td><td class="text"><code>{{.Changes}}</code></td></tr>
{{end}}</table>

{{template "faults" .Faults}}

{{with .Charts}}<h2>Overlaid</h2>
<p class="meta">One line per variant in its column's colour; fault windows shaded. A variant whose line is another's exactly is dashed over it and named "A = B" in the legend. Drag to zoom, double-click to reset.</p>
<div id="charts"></div>
<script>{{$.ChartScript}}</script>
<script>StormCharts.compare(document.getElementById("charts"), {{.}}, {{$.ChartOptions}});</script>
{{with $.Files}}<p class="meta">The same overlays as static plots, beside this page: {{range $i, $f := .}}{{if $i}}, {{end}}{{$f}}.png/.svg{{end}}.</p>{{end}}
{{end}}{{if .Figures}}<h2>{{if .Charts}}Plots{{else}}Overlaid{{end}}</h2>
{{if not .Charts}}<p class="meta">One line per variant in its column's colour; fault windows shaded. A variant whose line is another's exactly is dashed over it and named "A = B" in the legend.</p>
{{end}}{{template "figures" .Figures}}{{end}}
</body>
</html>
`)
