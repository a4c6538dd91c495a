// Package metrics holds what a run measured and moves it in and out of
// files: the Result and its JSON Summary (a public contract: fields are
// added, never renamed), per-interval time series, and HDR latency
// histograms in microseconds. The simulator and load mode produce a Result;
// plots, reports and merges consume it.
//
// # Vocabulary
//
// vocab.go names what writers and readers share: a run's Status
// (complete, interrupted, diverged) and the time-series columns, run-wide
// (ColOffered, ColGoodput, ...; RunColumns in order) and per entity
// (Column(MetricQueue, "db") = "queue/db"). EdgeSummaryOf is the one
// conversion of an edge's policy counters into its summary.
//
// # Files
//
// Save writes a results directory, every file atomically (WriteFileAtomic:
// temporary file, fsync, rename), and Load reads it back:
//
//	summary.json     WriteJSON: indented, struct field order, floats rounded
//	                 to 6 significant digits so one run prints one byte string
//	timeseries.csv   WriteCSV: t_s, interval_s, then one column per series,
//	                 9 significant digits
//	histograms.json  each histogram's geometry and non-zero buckets as
//	                 [index, count] pairs: lossless and compact
//	faults.json      the fault windows, start and length in seconds (at_s,
//	                 for_s; the nanoseconds "at"/"for" of older versions
//	                 are still read)
//
// # Formulas
//
// A service's amplification is attempts / requests.offered; the summary's is
// the largest. goodput_rps is succeeded / window_s. utilization is busy
// worker-time / (workers × sim_time_s); queue_mean is the time-weighted mean
// queue length over sim_time_s.
//
// # Merging
//
// Merge combines parts that partition one run's requests (shards). Counters
// and histograms add exactly and derived figures are recomputed from them,
// so a merge of shards writes the same summary.json and histograms.json as
// the unsharded run. Time-series columns merge by kind (KindOf): sums,
// maxima, means, and succeeded-weighted latency percentiles; only the last
// is approximate when two parts share an interval.
//
// # Zero values and concurrency
//
// A zero Summary is valid and prints as zeros; a nil Series, Latency or
// ServiceLatency means "not measured" and is skipped by Save. Nothing here
// keeps global state: functions are safe to call concurrently on distinct
// values, and a Result must not be written while another goroutine reads it.
package metrics
