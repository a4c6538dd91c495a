// Package live serves a run's charts to browsers while the run happens.
//
// A Server listens on one address (loopback unless allowed otherwise) and
// serves two things:
//
//   - / a self-contained page (uPlot and the chart module of package
//     charts, inlined; nothing from the network) whose charts grow as
//     the run goes: offered vs goodput, attempts per hop, queue per
//     service, latency percentiles, breaker and budget state, the intents
//     unknown and the manual queue when the run follows its writes after
//     UNKNOWN (the columns metrics.ColUnknownIntents, ColManualQueue); for sweeps
//     and capacity searches, the points as they finish.
//   - /events the run as server-sent events: "interval" events carry one
//     JSON object per interval with the fields of timeseries.csv (t_s,
//     interval_s and the columns metrics names; RunRow adds a first field
//     "run" for the runs of a comparison); "point" events carry a
//     finished point (Point); "skipped" tells a viewer that fell behind
//     how many events it lost; "end" closes the stream when the run ends.
//     Events carry ids, so a browser that reconnects resumes where it was.
//
// The run publishes (Row, RunRow, Point) and never waits for a viewer;
// WaitViewer lets it start once someone watches. Events go
// into one shared log of bounded length and size, and each viewer reads
// it at its own pace from its own cursor. A viewer that falls further
// behind than the log holds skips the oldest events (and is told so); a
// viewer whose connection stops taking data is dropped after
// Options.WriteTimeout. So memory is bounded by the log plus a constant per
// viewer, however many viewers there are and however slow, and the run
// is never slowed by them. A viewer that connects late is sent the log
// first: the run so far, up to the log's bounds.
//
// Pacer paces a simulation against the wall clock (--live-speed 10x), so
// a storm that simulates in a second can be watched forming.
//
// A Server is safe for concurrent use. A nil *Server ignores every call,
// so callers need not test whether the live view is on.
package live
