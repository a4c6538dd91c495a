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

// promBucketStep keeps every 8th log bucket (powers of two of µs) as a
// Prometheus bucket.
const promBucketStep = 8

func (c *phaseCollector) Collect(ch chan<- prometheus.Metric) {
	var notSent, transparent int64
	for _, r := range c.recs {
		notSent += r.notSent.Load()
		transparent += r.grpcTransparent.Load()
	}
	ch <- prometheus.MustNewConstMetric(c.ns, prometheus.CounterValue, float64(notSent))
	ch <- prometheus.MustNewConstMetric(c.grpcTransparent, prometheus.CounterValue, float64(transparent))
	for p := PhasePool; p < NumPhases; p++ {
		var n, failed int64
		var sum float64
		buckets := map[float64]uint64{}
		for _, r := range c.recs {
			h := &r.hist[p]
			n += h.n.Load()
			sum += float64(h.sumNs.Load()) / 1e9
			failed += r.failed[p].Load()
			var cum uint64
			for i := range h.counts {
				cum += uint64(h.counts[i].Load())
				if (i+1)%promBucketStep == 0 {
					buckets[phaseBound(i)/1000] += cum
				}
			}
		}
		ch <- prometheus.MustNewConstHistogram(c.hist, uint64(n), sum, buckets, p.String())
		ch <- prometheus.MustNewConstMetric(c.failed, prometheus.CounterValue, float64(failed), p.String())
	}
}
