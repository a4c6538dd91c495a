package analysis

import (
	"math"

	"github.com/stormsim/stormsim/metrics"
)

// Measures are the figures of one run that comparisons and sweeps report,
// taken from its summary.
type Measures struct {
	// Status is the run's status: complete, diverged or interrupted.
	Status    metrics.Status
	Offered   int64
	Succeeded int64
	Failed    int64
	Unknown   int64
	// GoodputRPS is succeeded logical requests per second.
	GoodputRPS float64
	// P50Ms and P99Ms are end-to-end latency quantiles of succeeded
	// requests; NaN (no data) when nothing succeeded, never 0, which would
	// make a collapsed system look fast.
	P50Ms float64
	P99Ms float64
	// P99AllMs is the p99 over every offered request, failed and unknown
	// ones at their time to their outcome (latency_all_ms); NaN when the
	// result does not have it.
	P99AllMs float64
	// Amplification is the largest service amplification (attempts that
	// reached a service per offered logical request).
	Amplification float64
	// PeakAmplification is the verdict's: the largest attempts at one
	// service in one interval per request offered in that interval
	// (metrics.PeakBasis); NaN when not assessed.
	PeakAmplification float64
	Duplicates        int64
	// PeakQueue is the largest queue length seen at any service.
	PeakQueue int64
	// Verdict is the run's outcome for a table ("recovered in 3 s", "not
	// recovered", "diverged at 12.5 s", "interrupted at 20 s", "not run"),
	// from its summary's verdict (metrics.OutcomeText); Reason the
	// verdict's one-line why, if any.
	Verdict string
	Reason  string
	// NotRun reports a run interrupted before it offered a request after
	// warm-up: it has no figures at all.
	NotRun bool
	// HasCertainty reports a run of a scenario that converges: Certainty
	// is its summary's (sweepcertainty.go).
	HasCertainty bool
	Certainty    metrics.Certainty
}

// MeasuresOf extracts the measures of a result's summary.
func MeasuresOf(r *metrics.Result) Measures {
	s := &r.Summary
	m := Measures{
		Status:        s.Status,
		Offered:       s.Requests.Offered,
		Succeeded:     s.Requests.Succeeded,
		Failed:        s.Requests.Failed,
		Unknown:       s.Requests.Unknown,
		GoodputRPS:    s.GoodputRPS,
		P50Ms:         s.LatencyMs.P50,
		P99Ms:         s.LatencyMs.P99,
		Amplification: s.Amplification,
		Duplicates:    s.Duplicates,
	}
	if m.Succeeded == 0 {
		m.P50Ms, m.P99Ms = math.NaN(), math.NaN()
	}
	m.P99AllMs = math.NaN()
	if l := s.LatencyAllMs; l != nil && l.Count > 0 {
		m.P99AllMs = l.P99
	}
	for _, svc := range s.Services {
		m.PeakQueue = max(m.PeakQueue, svc.QueueMax)
	}
	if m.Status == "" {
		m.Status = metrics.StatusComplete
	}
	m.certaintyOf(s.Certainty)
	m.Verdict = metrics.OutcomeText(s)
	m.NotRun = m.Verdict == metrics.OutcomeNotRun
	m.PeakAmplification = math.NaN()
	if v := s.Verdict; v != nil {
		m.Reason = v.Reason
		if v.PeakService != "" {
			m.PeakAmplification = v.PeakAmplification
		}
	}
	return m
}

// measureColumns are the numeric measures in CSV and aggregate order, with
// their accessors.
var measureColumns = []measureColumn{
	{"offered", func(m *Measures) float64 { return float64(m.Offered) }, func(m *Measures, v float64) { m.Offered = int64(v) }},
	{"succeeded", func(m *Measures) float64 { return float64(m.Succeeded) }, func(m *Measures, v float64) { m.Succeeded = int64(v) }},
	{"failed", func(m *Measures) float64 { return float64(m.Failed) }, func(m *Measures, v float64) { m.Failed = int64(v) }},
	{"unknown", func(m *Measures) float64 { return float64(m.Unknown) }, func(m *Measures, v float64) { m.Unknown = int64(v) }},
	{"goodput_rps", func(m *Measures) float64 { return m.GoodputRPS }, func(m *Measures, v float64) { m.GoodputRPS = v }},
	{"p50_ms", func(m *Measures) float64 { return m.P50Ms }, func(m *Measures, v float64) { m.P50Ms = v }},
	{"p99_ms", func(m *Measures) float64 { return m.P99Ms }, func(m *Measures, v float64) { m.P99Ms = v }},
	{"amplification", func(m *Measures) float64 { return m.Amplification }, func(m *Measures, v float64) { m.Amplification = v }},
	{"duplicates", func(m *Measures) float64 { return float64(m.Duplicates) }, func(m *Measures, v float64) { m.Duplicates = int64(v) }},
	{"peak_queue", func(m *Measures) float64 { return float64(m.PeakQueue) }, func(m *Measures, v float64) { m.PeakQueue = int64(v) }},
}
