// Package charts holds the browser code that draws a run's charts: uPlot
// 1.6.32, vendored under uplot/ with its licence (uplot/VERSION says where
// it came from), and charts.js, the one chart module that both the live
// page (package live) and report.html (package plots) run, so what a user
// watched during a run is what the report shows afterwards.
//
// Everything is embedded with go:embed and inlined into the pages: they
// load nothing from the network.
//
// charts.js defines window.StormCharts. new StormCharts(element) draws
// into element; add(row) appends one interval (an object with the fields
// of timeseries.csv: t_s, interval_s and the columns); addPoint(point)
// adds one finished point of a sweep or capacity search;
// StormCharts.fromSeries(element, series) draws a whole series at once
// (the JSON of Series).
package charts
