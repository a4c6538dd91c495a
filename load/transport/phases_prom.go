package transport

import (
	"github.com/prometheus/client_golang/prometheus"
)

// phaseCollector exposes the phases of one service's calls to one callee
// as Prometheus histograms (stormsim_edge_phase_seconds{phase}) and counts
// failures by phase and not-sent attempts, read from the edges' recorders
// at each scrape.
type phaseCollector struct {
	recs             []*PhaseRecorder
	hist, failed, ns *prometheus.Desc
	grpcTransparent  *prometheus.Desc
}

// NewPhaseCollector returns the collector of the phases recs recorded
// (one service's edges to one callee), each series labelled with labels.
func NewPhaseCollector(labels prometheus.Labels, recs []*PhaseRecorder) prometheus.Collector {
	return &phaseCollector{
		recs: recs,
		hist: prometheus.NewDesc("stormsim_edge_phase_seconds",
			"Duration of each phase of the edge's HTTP or gRPC attempts (pool_wait, dns, connect, tls, write, first_byte, read).",
			[]string{"phase"}, labels),
		failed: prometheus.NewDesc("stormsim_edge_failed_in_phase_total",
			"Failed attempts of the edge by the phase they failed in.", []string{"phase"}, labels),
		ns: prometheus.NewDesc("stormsim_edge_not_sent_total",
			"Attempts of the edge that failed before any byte was written (the callee never saw them).", nil, labels),
		grpcTransparent: prometheus.NewDesc("stormsim_edge_grpc_transparent_retries_total",
			"Streams grpc-go sent again beneath the edge's gRPC attempts because they never reached the callee (transparent retry).", nil, labels),
	}
}

func (c *phaseCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.hist
	ch <- c.failed
	ch <- c.ns
	ch <- c.grpcTransparent
}

// promBuckets is how many Prometheus buckets a phase has: upper bounds at
// the powers of two of µs, 2^0 … 2^27 µs (the phase histogram's range).
const promBuckets = 28

func (c *phaseCollector) Collect(ch chan<- prometheus.Metric) {
	var notSent, transparent int64
	for _, r := range c.recs {
		notSent += r.notSent.Load()
		transparent += r.grpcTransparent.Load()
	}
	ch <- prometheus.MustNewConstMetric(c.ns, prometheus.CounterValue, float64(notSent))
	ch <- prometheus.MustNewConstMetric(c.grpcTransparent, prometheus.CounterValue, float64(transparent))
	for p := PhasePool; p < NumPhases; p++ {
		var failed int64
		for _, r := range c.recs {
			failed += r.failed[p].Load()
		}
		n, sum, buckets := mergedPhase(c.recs, p)
		ch <- prometheus.MustNewConstHistogram(c.hist, uint64(n), sum, buckets, p.String())
		ch <- prometheus.MustNewConstMetric(c.failed, prometheus.CounterValue, float64(failed), p.String())
	}
}

// mergedPhase merges phase p's histograms of recs into one and returns its
// count, its sum in seconds and its cumulative Prometheus buckets: at each
// bound 2^k µs, the samples of the HDR buckets that start at or below it
// (the bound is a bucket's start, so the count is exact to the histogram's
// 1 %).
func mergedPhase(recs []*PhaseRecorder, p Phase) (n int64, sumS float64, buckets map[float64]uint64) {
	merged := newPhaseHistogram()
	for _, r := range recs {
		h, rn, rs := r.hist[p].snapshot()
		if h == nil {
			continue
		}
		merged.Merge(h)
		n += rn
		sumS += rs
	}
	buckets = make(map[float64]uint64, promBuckets)
	bars := merged.Distribution()
	var cum uint64
	i := 0
	for k := range promBuckets {
		bound := int64(1) << k
		for ; i < len(bars) && bars[i].From <= bound; i++ {
			cum += uint64(bars[i].Count)
		}
		buckets[float64(bound)/1e6] = cum
	}
	return n, sumS, buckets
}
