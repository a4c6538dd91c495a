package metrics

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Result holds everything one run produced: the summary, the per-interval
// time series and the latency histograms. The simulator and load mode both
// produce it; plots, reports and merges consume it.
type Result struct {
	Summary Summary
	// Series is the per-interval time series.
	Series *TimeSeries
	// Latency is the end-to-end latency of succeeded logical requests, in µs.
	Latency *hdrhistogram.Histogram
	// ServiceLatency is each service's attempt latency (arrival to answer), in µs.
	ServiceLatency map[string]*hdrhistogram.Histogram
	// ServiceOKLatency is each service's latency of the attempts it
	// completed successfully, in µs: how long a useful answer takes.
	// Refusals (answered at once) and failures are left out, so this, not
	// ServiceLatency, is what timeouts and hedge delays are tuned from.
	// nil when the producer did not record it.
	ServiceOKLatency map[string]*hdrhistogram.Histogram
	// Certainty is the time to certainty of the writes that became
	// certain, in µs (nil unless the scenario configures convergence).
	Certainty *hdrhistogram.Histogram
	// Faults are the scenario's fault windows, for shading plots.
	Faults []FaultWindow
	// RunID identifies the run for Save's ManifestFile (shards of one run
	// share it); empty, Save derives one from the files' content.
	RunID string
}

// FaultWindow is one fault for display: what, where, when. In JSON
// (faults.json) its times are seconds: at_s, for_s.
type FaultWindow struct {
	Service string
	At      time.Duration
	For     time.Duration
	Label   string
}

// faultJSON is FaultWindow's JSON form; At and For are the nanoseconds
// older versions wrote, still accepted.
type faultJSON struct {
	Service string   `json:"service"`
	AtS     *float64 `json:"at_s,omitempty"`
	ForS    *float64 `json:"for_s,omitempty"`
	At      *int64   `json:"at,omitempty"`
	For     *int64   `json:"for,omitempty"`
	Label   string   `json:"label"`
}

// MarshalJSON writes the window with its times in seconds.
func (f FaultWindow) MarshalJSON() ([]byte, error) {
	at, dur := f.At.Seconds(), f.For.Seconds()
	return json.Marshal(faultJSON{Service: f.Service, AtS: &at, ForS: &dur, Label: f.Label})
}

// UnmarshalJSON reads seconds (at_s, for_s) or the nanoseconds (at, for)
// of older versions; unknown keys are errors.
func (f *FaultWindow) UnmarshalJSON(b []byte) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	var j faultJSON
	if err := d.Decode(&j); err != nil {
		return err
	}
	secs := func(s *float64, ns *int64, name string) (time.Duration, error) {
		switch {
		case s != nil:
			if !(*s >= 0 && *s < math.MaxInt64/1e9) {
				return 0, fmt.Errorf("%s_s: want seconds ≥ 0, got %v", name, *s)
			}
			return time.Duration(math.Round(*s * 1e9)), nil
		case ns != nil:
			return time.Duration(*ns), nil
		}
		return 0, fmt.Errorf("%s_s: required", name)
	}
	var err error
	if f.At, err = secs(j.AtS, j.At, "at"); err != nil {
		return err
	}
	if f.For, err = secs(j.ForS, j.For, "for"); err != nil {
		return err
	}
	f.Service, f.Label = j.Service, j.Label
	return nil
}

// TimeSeries is a table of per-interval values: one row per interval
// starting at Start + i·Interval, one column per named series. Column names
// follow "metric" for run-wide series (offered, goodput, succeeded, failed,
// unknown, latency_p50_ms, latency_p99_ms) and "metric/entity" for
// per-service or per-edge ones (attempts/db, queue/db, inflight/db,
// utilization/db, breaker_state/gateway->db, budget_level/gateway->db).
// vocab.go names them all.
type TimeSeries struct {
	Start    time.Duration
	Interval time.Duration
	Columns  []string
	Rows     [][]float64
}

// Column returns the index of a column, or -1.
func (ts *TimeSeries) Column(name string) int {
	for i, c := range ts.Columns {
		if c == name {
			return i
		}
	}
	return -1
}

// Values returns one column as a slice (nil if absent).
func (ts *TimeSeries) Values(name string) []float64 {
	i := ts.Column(name)
	if i < 0 {
		return nil
	}
	out := make([]float64, len(ts.Rows))
	for r, row := range ts.Rows {
		out[r] = row[i]
	}
	return out
}

// NewLatencyHistogram returns a histogram of latencies in microseconds from
// 1 µs to 2^40 µs (12.7 days) with 3 significant digits, the resolution
// every latency in stormsim is recorded at. The range covers what a run
// produces, so a request that took two hours is recorded as two hours;
// the summaries' mean and max are exact whatever the range.
func NewLatencyHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, LatencyHighestUs, 3)
}

// LatencyHighestUs is the highest latency the histograms hold, in µs
// (12.7 days), also the largest range Decode accepts from a file.
const LatencyHighestUs = 1 << 40

// RecordLatency records d (clamped into the histogram's range).
func RecordLatency(h *hdrhistogram.Histogram, d time.Duration) {
	us := int64(d / time.Microsecond)
	if us < 1 {
		us = 1
	}
	if max := h.HighestTrackableValue(); us > max {
		us = max
	}
	_ = h.RecordValue(us)
}

// LatencyOf summarizes a µs histogram in milliseconds: quantiles, and the
// mean and max of the buckets' values (within the histogram's precision).
// Producers that saw every value report the exact mean and max with
// WithExact.
func LatencyOf(h *hdrhistogram.Histogram) Latency {
	if h == nil || h.TotalCount() == 0 {
		return Latency{}
	}
	ms := func(us int64) float64 { return float64(us) / 1000 }
	return Latency{
		Mean: h.Mean() / 1000,
		P50:  ms(h.ValueAtQuantile(50)),
		P90:  ms(h.ValueAtQuantile(90)),
		P99:  ms(h.ValueAtQuantile(99)),
		P999: ms(h.ValueAtQuantile(99.9)),
		Max:  ms(h.Max()),
	}
}

// WithExact returns l with the exact mean and max of the n values it
// summarizes, sumUs being their sum in whole microseconds (the unit the
// histograms record in): the histogram's bucket estimates are off by up to
// its precision, and a summary's mean and max need not be. A quantile is
// clamped to the exact max: the histogram reads a quantile as its bucket's
// highest equivalent value, which can lie above every value recorded (one
// request of 7200.5 s read as a p50 of 7201.6 s), and no quantile of a set
// exceeds its largest member. Every summary's quantiles pass through here
// (and through exactOfParts, its twin for merged shards).
func (l Latency) WithExact(sumUs, n int64, max time.Duration) Latency {
	if n <= 0 {
		return l
	}
	l.Count, l.SumUs = n, sumUs
	l.Mean = float64(sumUs) / float64(n) / 1000
	l.Max = float64(max) / 1e6
	return l.clampedToMax()
}

// clampedToMax returns l with no quantile above its max (WithExact).
func (l Latency) clampedToMax() Latency {
	for _, q := range []*float64{&l.P50, &l.P90, &l.P99, &l.P999} {
		*q = min(*q, l.Max)
	}
	return l
}
