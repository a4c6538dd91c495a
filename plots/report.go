package plots

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html/template"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/stormsim/stormsim/charts"
	"github.com/stormsim/stormsim/metrics"
)

// ReportFile is the name of the report WriteReport writes.
const ReportFile = "report.html"

// WriteReport writes dir/report.html (atomically): a self-contained page
// with the run's summary tables, its time series drawn by the chart module
// the live view runs (package charts, inlined), and the given plots
// inlined. SVG files are embedded as markup, PNG files without an SVG
// twin as data URIs; nothing refers to the network or to other files, so
// the page opens anywhere, offline. plotFiles is typically what WriteAll
// returned.
func WriteReport(dir string, r *metrics.Result, plotFiles []string) error {
	figs, err := reportFigures(plotFiles)
	if err != nil {
		return err
	}
	data := reportData{Result: r, S: &r.Summary, Series: charts.SeriesOf(r.Series)}
	if data.Series != nil {
		data.ChartScript, data.ChartStyle = charts.Script(), charts.Style()
		data.ChartOptions = chartOptionsOf(r)
		// The interactive charts draw these series: a static twin would
		// draw each again, so it is left to its file.
		for _, f := range figs {
			if chartDrawn[f.Name] {
				data.Files = append(data.Files, f.Name)
			} else {
				data.Figures = append(data.Figures, f)
			}
		}
	} else {
		data.Figures = figs
	}
	return writePage(dir, reportTmpl, data)
}

// writePage executes t with data and writes the page as dir/report.html,
// atomically, creating dir if needed.
func writePage(dir string, t *template.Template, data any) error {
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		return fmt.Errorf("plots: %s: %w", t.Name(), err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("plots: %s: %w", t.Name(), err)
	}
	return metrics.WriteFileAtomic(filepath.Join(dir, ReportFile), func(w io.Writer) error {
		_, err := w.Write(buf.Bytes())
		return err
	})
}

// pageStyle is the style both pages share (report.html of a run and of a
// comparison): type, tables, figures, the verdict's colours.
const pageStyle = `body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Liberation Sans", sans-serif; color: #222; margin: 2em auto; max-width: 1100px; padding: 0 1em; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ddd; padding-bottom: 0.2em; }
.meta { color: #666; }
table { border-collapse: collapse; margin: 0.5em 0; }
th, td { padding: 0.25em 0.8em; border-bottom: 1px solid #eee; text-align: right; }
th { background: #f5f5f5; font-weight: 600; }
td:first-child, th:first-child, .text { text-align: left; }
figure { margin: 1.5em 0; }
figure svg, figure img { width: 100%; height: auto; border: 1px solid #eee; }`

type reportData struct {
	Result  *metrics.Result
	S       *metrics.Summary
	Figures []figureData
	// Series, ChartScript and ChartStyle draw the interactive charts with
	// the live page's chart module (package charts); nil without a series.
	Series       *charts.Series
	ChartScript  template.JS
	ChartStyle   template.CSS
	ChartOptions chartOptions
	// Files are the static plots the charts stand for, by name, written
	// beside the report as PNG and SVG.
	Files []string
}

// chartDrawn names the Standard plots whose series the interactive charts
// draw (charts.js: throughput, amplification, queue, latency, breaker,
// budget, unknown_intents).
var chartDrawn = map[string]bool{"throughput": true, "amplification": true, "queue": true, "latency": true, "breaker": true, "budget": true,
	"unknown_intents": true}

// chartOptions are the interactive charts' options (StormCharts' opts):
// each service's and edge's colour, the one the static plots give it
// (Colors), and the fault windows to shade.
type chartOptions struct {
	Colors map[string]string `json:"colors"`
	Faults []chartFault      `json:"faults"`
}

type chartFault struct {
	AtS   float64 `json:"at_s"`
	ForS  float64 `json:"for_s"`
	Label string  `json:"label"`
}

func chartOptionsOf(r *metrics.Result) chartOptions {
	o := chartOptions{Colors: map[string]string{}, Faults: []chartFault{}}
	cs := NewColors(r)
	hex := func(name string) string {
		c := color.NRGBAModel.Convert(cs.Of(name)).(color.NRGBA)
		return string(cssColor(c))
	}
	for _, s := range r.Summary.Services {
		o.Colors[s.Name] = hex(s.Name)
	}
	for _, e := range r.Summary.Edges {
		o.Colors[e.From+"->"+e.To] = hex(e.From + "->" + e.To)
	}
	for _, f := range r.Faults {
		label := f.Label
		if label == "" {
			label = "fault: " + f.Service
		}
		o.Faults = append(o.Faults, chartFault{AtS: f.At.Seconds(), ForS: f.For.Seconds(), Label: label})
	}
	return o
}

type figureData struct {
	Name string
	SVG  template.HTML
	PNG  template.URL
}

// xmlProlog matches what precedes the <svg> element in a standalone SVG
// file (XML declaration, comments), which is not allowed inside HTML.
var xmlProlog = regexp.MustCompile(`(?s)^.*?(<svg[\s>])`)

func reportFigures(files []string) ([]figureData, error) {
	hasSVG := map[string]bool{}
	for _, f := range files {
		if strings.EqualFold(filepath.Ext(f), ".svg") {
			hasSVG[strings.TrimSuffix(f, filepath.Ext(f))] = true
		}
	}
	var out []figureData
	for _, f := range files {
		ext := strings.ToLower(filepath.Ext(f))
		base := strings.TrimSuffix(f, filepath.Ext(f))
		if ext != ".svg" && (ext != ".png" || hasSVG[base]) {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("plots: report: %w", err)
		}
		fd := figureData{Name: filepath.Base(base)}
		if ext == ".svg" {
			loc := xmlProlog.FindSubmatchIndex(b)
			if loc == nil {
				return nil, fmt.Errorf("plots: report: %s: no <svg> element", f)
			}
			// The SVG is our own gonum output, so it is trusted markup.
			fd.SVG = template.HTML(b[loc[2]:])
		} else {
			fd.PNG = template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(b))
		}
		out = append(out, fd)
	}
	return out, nil
}

// phaseRow is one line of the report's phase table.
type phaseRow struct {
	Name string
	metrics.PhaseStat
	Failed int64
}

var reportFuncs = template.FuncMap{
	// hasConn says whether any edge has a connection pool or phases.
	"hasConn": func(edges []metrics.EdgeSummary) bool {
		for _, e := range edges {
			if e.Pool != nil || e.Phases != nil {
				return true
			}
		}
		return false
	},
	// phaseRows lists an edge's measured phases in the order they happen,
	// then the whole time of cold and warm attempts.
	"phaseRows": func(ph *metrics.PhaseReport) []phaseRow {
		var rows []phaseRow
		for _, name := range append(append([]string{}, metrics.PhaseNames...), metrics.PhaseCold, metrics.PhaseWarm) {
			if st, ok := ph.Phases[name]; ok {
				rows = append(rows, phaseRow{Name: name, PhaseStat: st, Failed: ph.FailedIn[name]})
			}
		}
		return rows
	},
	"num": func(x float64) string {
		switch ax := max(x, -x); {
		case ax >= 100:
			return strconv.FormatFloat(x, 'f', 0, 64)
		case ax >= 10:
			return strconv.FormatFloat(x, 'f', 1, 64)
		case ax >= 1 || ax == 0:
			return strconv.FormatFloat(x, 'f', 2, 64)
		}
		return strconv.FormatFloat(x, 'f', 3, 64)
	},
	"pct": func(x float64) string { return strconv.FormatFloat(100*x, 'f', 1, 64) + "%" },
	"share": func(n, of int64) string {
		if of == 0 {
			return "–"
		}
		return strconv.FormatFloat(100*float64(n)/float64(of), 'f', 1, 64) + "%"
	},
	"secs": func(d interface{ Seconds() float64 }) string {
		return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + " s"
	},
	"unmeasured": func(s *metrics.Summary, name string) bool {
		return s.Load != nil && slices.Contains(s.Load.Unmeasured, name)
	},
	"answers": func(st map[string]int64) int64 {
		var n int64
		for _, v := range st {
			n += v
		}
		return n
	},
	"noAnswer": func(l *metrics.LoadReport) int64 {
		return l.ConnectFailures + l.Timeouts + l.Resets + l.Canceled + l.OtherErrors
	},
	"title": func(name string) string {
		return strings.ReplaceAll(name, "_", " ")
	},
	"pageStyle": func() template.CSS { return pageStyle },
	// queryLoad says whether any service received status or fact queries.
	"hasEffects": func(s *metrics.Summary) bool {
		return s.Irrevocable != nil || s.TotalEffects() != nil || s.TotalVersionedWrites() != nil
	},
	"effectServices": func(svcs []metrics.ServiceSummary) bool {
		return slices.ContainsFunc(svcs, func(v metrics.ServiceSummary) bool { return v.Effects != nil })
	},
	"versionedServices": func(svcs []metrics.ServiceSummary) bool {
		return slices.ContainsFunc(svcs, func(v metrics.ServiceSummary) bool { return v.VersionedWrites != nil })
	},
	"queryLoad": func(svcs []metrics.ServiceSummary) bool {
		for _, v := range svcs {
			if v.Queries > 0 || v.FactQueries > 0 {
				return true
			}
		}
		return false
	},
}

// pagePartials are the parts both pages draw alike: the fault windows'
// table (given the windows) and the inline figures (given figureData).
const pagePartials = `{{define "faults"}}{{if .}}<h2>Faults</h2>
<table>
<tr><th>service</th><th>from</th><th>for</th><th class="text">what</th></tr>
{{range .}}<tr><td>{{.Service}}</td><td>{{secs .At}}</td><td>{{secs .For}}</td><td class="text">{{.Label}}</td></tr>
{{end}}</table>{{end}}{{end}}{{define "figures"}}{{range .}}<figure id="fig-{{.Name}}">
{{if .SVG}}{{.SVG}}{{else}}<img alt="{{title .Name}}" src="{{.PNG}}">{{end}}
</figure>
{{end}}{{end}}`

// newPage parses a page's template with the shared partials.
func newPage(name string, funcs template.FuncMap, text string) *template.Template {
	return template.Must(template.Must(template.New(name).Funcs(funcs).Parse(pagePartials)).Parse(text))
}

var reportTmpl = newPage("report", reportFuncs, `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>stormsim report: {{.S.Scenario}}</title>
<style>
{{pageStyle}}
.warn { background: #fdecea; border-left: 4px solid #d62728; padding: 0.6em 1em; }
.ok { background: #edf7ed; border-left: 4px solid #59a14f; padding: 0.6em 1em; }
#verdict p { margin: 0.2em 0; }
{{.ChartStyle}}
</style>
</head>
<body>
<h1>{{.S.Scenario}}</h1>
<p class="meta">seed {{.S.Seed}}{{with .S.Version}} · stormsim {{.}}{{end}} · {{.S.Clock}} {{num .S.SimTimeS}} s · status {{or .S.Status "–"}}</p>
{{with .S.Diverged}}<p class="warn">The run diverged at {{num .AtS}} s: {{.Reason}}{{with .Service}} ({{.}} queue {{$.S.Diverged.Queue}}){{end}}. Figures after that point are incomplete.</p>{{end}}
{{with .S.Verdict}}<div id="verdict" class="{{if .Bad}}warn{{else}}ok{{end}}">
<p><strong>{{.Headline}}</strong></p>
<p>{{.Amplification}}</p>
<p>{{.Losses}}</p>
</div>{{end}}
{{with .S.SLO}}<p id="slo" class="{{if .Met}}ok{{else}}warn{{end}}">SLO <code>{{.Expr}}</code>: {{.Line}}</p>{{end}}

<h2>Summary</h2>
<table>
<tr><th>logical requests</th><th>count</th><th>share</th></tr>
<tr><td>offered</td><td>{{.S.Requests.Offered}}</td><td></td></tr>
<tr><td>succeeded</td><td>{{.S.Requests.Succeeded}}</td><td>{{share .S.Requests.Succeeded .S.Requests.Offered}}</td></tr>
<tr><td>failed</td><td>{{.S.Requests.Failed}}</td><td>{{share .S.Requests.Failed .S.Requests.Offered}}</td></tr>
<tr><td>unknown</td><td>{{.S.Requests.Unknown}}</td><td>{{share .S.Requests.Unknown .S.Requests.Offered}}</td></tr>
</table>
<table>
<tr><th>figure</th><th>value</th></tr>
<tr><td>goodput</td><td>{{num .S.GoodputRPS}} req/s</td></tr>
<tr><td>amplification (busiest service)</td><td>{{num .S.Amplification}}×</td></tr>
<tr><td>duplicate executions</td><td>{{.S.Duplicates}}</td></tr>
</table>
<table>
<tr><th>end-to-end latency (ms)</th><th>mean</th><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>max</th></tr>
<tr><td>succeeded requests ({{.S.Requests.Succeeded}})</td><td>{{num .S.LatencyMs.Mean}}</td><td>{{num .S.LatencyMs.P50}}</td><td>{{num .S.LatencyMs.P90}}</td><td>{{num .S.LatencyMs.P99}}</td><td>{{num .S.LatencyMs.P999}}</td><td>{{num .S.LatencyMs.Max}}</td></tr>
{{with .S.LatencyFailedMs}}<tr><td>failed requests ({{.Count}})</td><td>{{num .Mean}}</td><td>{{num .P50}}</td><td>{{num .P90}}</td><td>{{num .P99}}</td><td>{{num .P999}}</td><td>{{num .Max}}</td></tr>
{{end}}{{with .S.LatencyUnknownMs}}<tr><td>unknown requests ({{.Count}})</td><td>{{num .Mean}}</td><td>{{num .P50}}</td><td>{{num .P90}}</td><td>{{num .P99}}</td><td>{{num .P999}}</td><td>{{num .Max}}</td></tr>
{{end}}{{with .S.LatencyAllMs}}<tr><td>all requests ({{.Count}}), each at its time to its outcome</td><td>{{num .Mean}}</td><td>{{num .P50}}</td><td>{{num .P90}}</td><td>{{num .P99}}</td><td>{{num .P999}}</td><td>{{num .Max}}</td></tr>
{{end}}
</table>

{{with .S.Certainty}}<h2 id="certainty">Certainty</h2>
<p class="meta">How the writes converged after UNKNOWN: the time from an intent's first attempt to a known outcome, what made it known, and the load the confirming added.</p>
<table>
<tr><th>time to certainty (ms)</th><th>mean</th><th>p50</th><th>p99</th><th>max</th></tr>
<tr><td>{{.Certain}} of {{.Intents}} intents became certain</td>{{if .Certain}}<td>{{num .MeanMs}}</td><td>{{num .P50Ms}}</td><td>{{num .P99Ms}}</td><td>{{num .MaxMs}}</td>{{else}}<td>–</td><td>–</td><td>–</td><td>–</td>{{end}}</tr>
</table>
<table>
<tr><th>resolved by</th><th>intents</th><th>share</th></tr>
{{range .ResolvedBy.Resolutions}}<tr><td>{{.Name}}</td><td>{{.Intents}}</td><td>{{share .Intents $.S.Certainty.Intents}}</td></tr>
{{end}}</table>
<table>
<tr><th>figure</th><th>value</th></tr>
<tr><td>alerts (unknown past alert_after)</td><td>{{.Alerts}}</td></tr>
<tr><td>unknown at once, at most</td><td>{{.UnknownMax}}</td></tr>
<tr><td>manual queue: longest, at the end</td><td>{{.ManualQueueMax}}, {{.ManualQueueEnd}}</td></tr>
<tr><td>status queries (per intent that queried)</td><td>{{.Queries}} ({{num .QueriesPerIntent}})</td></tr>
{{with .Resubmits}}<tr><td>resubmits after NOT_FOUND</td><td>{{.}}</td></tr>
{{end}}{{with .Recoveries}}<tr><td>recovery tasks: succeeded, failed_final, resumed, unknown</td><td>{{.Succeeded}}, {{.Failed}}, {{.Resumed}}, {{.Unknown}}</td></tr>
{{end}}{{with .Reconciliation}}<tr><td>reconciliation: runs, items, repaired, repaired twice, failed, to manual</td><td>{{.Runs}}, {{.Items}}, {{.Repaired}}, {{.Rerepaired}}, {{.Failed}}, {{.ToManual}}</td></tr>
{{end}}</table>
{{if queryLoad $.S.Services}}<table>
<tr><th>query load</th><th>attempts</th><th>status queries</th><th>share of attempts</th><th>fact queries</th></tr>
{{range $.S.Services}}{{if or .Queries .FactQueries}}<tr><td>{{.Name}}</td><td>{{.Attempts}}</td><td>{{.Queries}}</td><td>{{share .Queries .Attempts}}</td><td>{{.FactQueries}}</td></tr>
{{end}}{{end}}</table>{{end}}
{{end}}
{{if hasEffects .S}}<h2 id="effects">Effects</h2>
<p class="meta">What the writes did beyond each request's own outcome: intents past an irrevocable step that their caller saw as unknown, external effects delivered twice or absorbed by key, and versioned writes that conflicted or lost another writer's update.</p>
{{with .S.Irrevocable}}<table>
<tr><th>irrevocable step</th><th>intents sent</th><th>unknown to their caller</th><th>share</th></tr>
<tr><td>passed</td><td>{{.Sent}}</td><td>{{.Unknown}}</td><td>{{share .Unknown .Sent}}</td></tr>
</table>{{end}}
{{if effectServices .S.Services}}<table>
<tr><th>external effect</th><th>sent</th><th>delivered</th><th>duplicates</th><th>absorbed by key</th></tr>
{{range .S.Services}}{{$n := .Name}}{{with .Effects}}<tr><td>{{$n}}</td><td>{{.Sent}}</td><td>{{.Delivered}}</td><td>{{.Duplicates}}</td><td>{{.Absorbed}}</td></tr>
{{end}}{{end}}</table>{{end}}
{{if versionedServices .S.Services}}<table>
<tr><th>versioned writes</th><th>writes</th><th>conflicts</th><th>conflict rate</th><th>redone</th><th>lost updates</th><th>aborted</th></tr>
{{range .S.Services}}{{$n := .Name}}{{with .VersionedWrites}}<tr><td>{{$n}}</td><td>{{.Writes}}</td><td>{{.Conflicts}}</td><td>{{pct .ConflictRate}}</td><td>{{.Redone}}</td><td>{{.LostUpdates}}</td><td>{{.Aborted}}</td></tr>
{{end}}{{end}}</table>{{end}}
{{end}}
{{if .S.Services}}<h2>Services</h2>
<table>
<tr><th>service</th><th>attempts</th><th>amp</th><th>ok</th><th>failed</th><th>rejected</th><th>timed out</th><th>wasted</th><th>util</th><th>queue mean</th><th>queue max</th><th>p50 ms</th><th>p99 ms</th></tr>
{{range .S.Services}}<tr><td>{{.Name}}</td><td>{{.Attempts}}</td><td>{{num .Amplification}}</td><td>{{.Succeeded}}</td><td>{{.Failed}}</td><td>{{.Rejected}}</td><td>{{.TimedOut}}</td><td>{{.Wasted}}</td>{{if unmeasured $.S .Name}}<td>–</td><td>–</td><td>–</td><td>–</td><td>–</td>{{else}}<td>{{pct .Utilization}}</td><td>{{num .QueueMean}}</td><td>{{.QueueMax}}</td><td>{{num .LatencyMs.P50}}</td><td>{{num .LatencyMs.P99}}</td>{{end}}</tr>
{{end}}</table>{{end}}
{{with .S.Load}}{{if .Statuses}}<h2>HTTP answers</h2>
<table>
<tr><th>status</th><th>answers</th><th>share</th></tr>
{{range $code, $n := .Statuses}}<tr><td>{{$code}}</td><td>{{$n}}</td><td>{{share $n (answers $.S.Load.Statuses)}}</td></tr>
{{end}}<tr><td>no answer (connect, timeout, reset, canceled, other)</td><td>{{noAnswer .}}</td><td></td></tr>
</table>{{end}}{{end}}

{{if .S.Edges}}<h2>Calls</h2>
<table>
<tr><th>edge</th><th>calls</th><th>attempts</th><th>retries</th><th>denied (budget)</th><th>denied (deadline)</th><th>breaker fast-fails</th><th>hedges sent / won</th><th>ok</th><th>failed</th><th>unknown</th></tr>
{{range .S.Edges}}<tr><td>{{.From}} → {{.To}}</td><td>{{.Calls}}</td><td>{{.Attempts}}</td><td>{{.Retries}}</td><td>{{.RetriesDenied}}</td><td>{{.RetriesDeadline}}</td><td>{{.BreakerFastFail}}</td><td>{{.HedgesSent}} / {{.HedgesWon}}</td><td>{{.Succeeded}}</td><td>{{.Failed}}</td><td>{{.Unknown}}</td></tr>
{{end}}</table>{{end}}

{{if hasConn .S.Edges}}<h2>Where the time went</h2>
<p>Connection pools (simulator) and the phases of each attempt (load mode). Attempts that failed before any byte was written (not sent) cannot have reached the callee.</p>
{{range $e := .S.Edges}}{{with $e.Pool}}<table>
<tr><th>pool {{$e.From}} → {{$e.To}}</th><th>acquired</th><th>waited</th><th>mean wait (ms)</th><th>max wait (ms)</th><th>handshakes</th><th>not sent: pool / connect / tls</th><th>resets</th></tr>
<tr><td></td><td>{{.Acquired}}</td><td>{{.Waited}}</td><td>{{num .WaitMeanMs}}</td><td>{{num .WaitMaxMs}}</td><td>{{.Handshakes}}</td><td>{{.PoolTimeouts}} / {{.ConnectTimeouts}} / {{.TLSTimeouts}}</td><td>{{.Resets}}</td></tr>
</table>{{end}}{{with $e.Phases}}<table>
<tr><th>phases {{$e.From}} → {{$e.To}}</th><th>attempts</th><th>mean (ms)</th><th>p50 (ms)</th><th>p99 (ms)</th><th>max (ms)</th><th>failed in it</th></tr>
{{range phaseRows .}}<tr><td>{{.Name}}</td><td>{{.Count}}</td><td>{{num .MeanMs}}</td><td>{{num .P50Ms}}</td><td>{{num .P99Ms}}</td><td>{{num .MaxMs}}</td><td>{{.Failed}}</td></tr>
{{end}}<tr><td colspan="7">not sent {{.NotSent}}; {{.NewConnections}} new connections, {{.Handshakes}} handshakes, {{.Reused}} attempts on a reused one, {{.Waited}} waited for one{{with .GRPCTransparentRetries}}; {{.}} streams grpc-go sent again itself, unseen by the callee (transparent retry){{end}}</td></tr>
</table>{{end}}{{end}}{{end}}

{{template "faults" .Result.Faults}}

{{with .Series}}<h2>Charts</h2>
<p class="meta">The charts of the live view (--live), drawn from timeseries.csv.</p>
<div id="charts"></div>
<script>{{$.ChartScript}}</script>
<script>StormCharts.fromSeries(document.getElementById("charts"), {{.}}, {{$.ChartOptions}});</script>
{{with $.Files}}<p class="meta">The same series as static plots, beside this page: {{range $i, $f := .}}{{if $i}}, {{end}}{{$f}}.png/.svg{{end}}.</p>{{end}}
{{end}}
{{if .Figures}}<h2>Plots</h2>
{{template "figures" .Figures}}{{end}}
</body>
</html>
`)
