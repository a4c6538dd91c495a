// Package plots draws a run's metrics.Result as figures (gonum.org/v1/plot)
// and as a self-contained HTML report.
//
// Each plotter lives in its own file and turns a Result into a *plot.Plot,
// or returns ErrNoData when the result lacks its input:
//
//	Amplification  attempts/S ÷ offered per interval, per service
//	Queue          queue/S (time-weighted mean) and queue_max/S per service
//	Throughput     offered and goodput in requests/s, and failed + unknown
//	Latency        end-to-end p50/p99 per interval, log scale
//	LatencyCDF     cumulative distribution from the HDR histograms, log x
//	Breaker        breaker_state/A->B as steps (closed, open, half-open)
//	Budget         budget_level/A->B
//
// Time plots put each interval's value at its midpoint, in seconds, and
// shade the result's fault windows with their labels. A service keeps one
// colour in every plot of a run (Colors: the summary's service order over
// the Tableau 10 palette); an edge A->B takes B's colour.
//
// WriteAll draws every plot that has data as PNG (960×480) and SVG, each
// file written atomically; Overlay draws one series column for several
// variants of a scenario; WriteReport writes report.html with the summary
// tables and the SVGs inlined, so it needs no network and no other file.
//
// Output is a deterministic function of the Result. Plotters keep no state
// between calls and may run concurrently on distinct or read-only Results.
package plots
