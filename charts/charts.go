package charts

import (
	_ "embed"
	"encoding/json"
	"html/template"
	"math"

	"github.com/stormsim/stormsim/metrics"
)

var (
	//go:embed uplot/uPlot.iife.min.js
	uplotJS string
	//go:embed uplot/uPlot.min.css
	uplotCSS string
	//go:embed charts.js
	chartsJS string
)

// Script returns uPlot followed by the chart module, for a <script>
// element of a self-contained page.
func Script() template.JS { return template.JS(uplotJS + "\n" + chartsJS) }

// Style returns uPlot's style sheet and the charts' own, for a <style>
// element.
func Style() template.CSS {
	return template.CSS(uplotCSS + "\n.stormchart { margin: 1em 0; }\n")
}

// Series is a time series as StormCharts.fromSeries reads it. Values that
// are not finite numbers are written as null (JSON has no NaN).
type Series struct {
	StartS    float64          `json:"start_s"`
	IntervalS float64          `json:"interval_s"`
	Columns   []string         `json:"columns"`
	Rows      [][]FiniteNumber `json:"rows"`
}

// FiniteNumber is a float64 written to JSON as a number, or null when it
// is NaN or infinite.
type FiniteNumber float64

// MarshalJSON writes the number, or null when it is not finite.
func (f FiniteNumber) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(v)
}

// SeriesOf converts a result's time series for the chart module; nil
// when there is none.
func SeriesOf(ts *metrics.TimeSeries) *Series {
	if ts == nil || len(ts.Rows) == 0 {
		return nil
	}
	s := &Series{StartS: ts.Start.Seconds(), IntervalS: ts.Interval.Seconds(), Columns: ts.Columns,
		Rows: make([][]FiniteNumber, len(ts.Rows))}
	for i, row := range ts.Rows {
		s.Rows[i] = make([]FiniteNumber, len(row))
		for j, v := range row {
			s.Rows[i][j] = FiniteNumber(v)
		}
	}
	return s
}
