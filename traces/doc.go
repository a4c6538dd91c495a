// Package traces turns distributed traces into a stormsim scenario, and
// writes the traces that load mode emits.
//
// Reading: ReadFile decodes OTLP JSON (as the OpenTelemetry collector's
// file exporter writes it, one ExportTraceServiceRequest per line or a
// single document; decoded with the collector's pdata) and Jaeger's JSON
// export ({"data": [...]}) into one neutral form, a slice of Span.
//
// Inferring: Infer rebuilds from the spans what a scenario needs and says
// how sure it is:
//
//   - services from service.name; call edges from a client span and the
//     server span that is its child in another service;
//   - the entry and arrival rate from the root spans (a root that is not a
//     server span belongs to the external client, whose call to the entry
//     is then observed too);
//   - per attempt of a service (a server span), its logical calls: the
//     client spans to one callee, split by http.request.resend_count when
//     present (0 starts a call) and otherwise one call per callee, except
//     that spans starting within a millisecond of each other are fan-out;
//     calls overlapping in time form a parallel step;
//   - own time: an attempt's duration minus the union of its client spans,
//     fitted to a lognormal when the Kolmogorov–Smirnov distance is below
//     max(0.05, 1.36/√n) (the 5 % critical value), else kept empirical;
//   - per edge: attempts per call, the retried classes and the backoff
//     (gaps between a failed attempt's end and the next one's start),
//     hedges (an attempt started while an earlier one was in flight), and
//     the timeout (client spans that ended with deadline exceeded and no
//     answer);
//   - per service: its own error rate and class (failed attempts that made
//     no downstream call, so the failure was not a callee's).
//
// Every comparison of two timestamps uses spans of one service, so clock
// skew between services cannot bend the graph; it is detected and noted.
// What cannot be seen (queue lengths, worker counts, deadlines, replicas)
// is set to a stated default and listed in the Notes.
//
// Writing: FileExporter is an OpenTelemetry SpanExporter that writes OTLP
// JSON lines to a file, atomically at Shutdown (temp file + rename).
//
// All functions are pure over their inputs and safe for concurrent use on
// different values; FileExporter is safe for concurrent use.
package traces
