// Package driver is stormsim's open-loop load driver (Run): it sends the
// logical requests of an arrival process to one target, each through the
// client's call policy (an edge.EdgeClient), and records what happened.
//
// The arrivals (model.Arrivals, the simulator's arrival process; for a
// target, TargetArrivals) give the intended send time of every logical
// request and whether it is a write, drawn from the stream the model derives
// from the seed, so a scenario and seed offer the same requests at the same
// times in both modes: the n-th request of a constant rate r is due at n/r
// rounded to the nanosecond, and a rate step restarts the phase at the step
// (the driver's former pacers truncated, and integrated the rate across
// steps; the model's rule is the one kept). One scheduler goroutine
// sleeps until each due time and hands the request to a fixed pool of
// Workers sender goroutines through a bounded channel; the HTTP transport
// holds at most Connections connections. The schedule never waits for
// answers (open loop), and latency is measured from the intended time, not
// from the actual send, so a stalled target shows in the percentiles
// instead of being hidden by a driver that stopped sending (no coordinated
// omission). When every sender is busy the scheduler waits at most
// Options.MaxLateness past a request's due time; a request not handed off by then
// is not sent and counts as unsent (a failed logical request). Requests
// sent more than Options.LateThreshold after their due time count as late.
//
// When the schedule ends, calls in flight may take what their policy
// allows (the deadline, or every attempt's timeout plus the waits between
// attempts) plus Grace, then are aborted as unknown; with neither deadline
// nor timeout, Grace alone. Cancelling Run's context stops the schedule;
// calls in flight get Grace to finish and are then aborted; the result is
// marked interrupted. Memory grows with concurrency, not with the number of
// requests or the run's length: outcomes stream into HDR histograms and
// per-interval counters, and an interval's latency histogram is folded into
// its quantiles once completions have moved two intervals past it.
//
// Run is safe for concurrent use. A model.Arrivals is not (the driver's
// single scheduler goroutine owns it: give each run its own). A target must
// be on the loopback interface unless Options.AllowRemote is set.
package driver
