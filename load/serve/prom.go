package serve

import (
	"net/http"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stormsim/stormsim/load/transport"
	"github.com/stormsim/stormsim/metrics"
)

// promHandler exposes the service's counters for Prometheus. Each service
// has its own registry, so several services in one process do not clash;
// the values are read from the same counters as /stats at scrape time.
func (s *Service) promHandler() http.Handler {
	reg := prometheus.NewRegistry()
	labels := prometheus.Labels{"service": s.name}
	counter := func(name, help string, get func(Counters) int64) {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: "stormsim", Name: name, Help: help, ConstLabels: labels,
		}, func() float64 { return float64(get(s.all.snapshot())) }))
	}
	counter("attempts_total", "Attempts that arrived at the service.", func(c Counters) int64 { return c.Attempts })
	counter("succeeded_total", "Attempts answered with success.", func(c Counters) int64 { return c.Succeeded })
	counter("failed_total", "Attempts answered with a failure after starting work.", func(c Counters) int64 { return c.Failed })
	counter("rejected_total", "Attempts refused before starting (queue full, limit, shed, expired).", func(c Counters) int64 { return c.Rejected })
	counter("shed_total", "Queued attempts dropped by overload control.", func(c Counters) int64 { return c.Shed })
	counter("timed_out_total", "Attempts whose caller was gone before the answer.", func(c Counters) int64 { return c.TimedOut })
	counter("wasted_total", "Attempts that completed work after their caller was gone.", func(c Counters) int64 { return c.Wasted })
	gauge := func(name, help string, get func(Stats) float64) {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "stormsim", Name: name, Help: help, ConstLabels: labels,
		}, func() float64 { return get(s.Stats()) }))
	}
	gauge("busy_workers", "Workers busy now.", func(st Stats) float64 { return float64(st.Busy) })
	gauge("queue_length", "Attempts waiting for a worker now.", func(st Stats) float64 { return float64(st.Queue) })
	gauge("executions", "Side-effect executions of write requests.", func(st Stats) float64 { return float64(st.Executions) })
	gauge("duplicates", "Side-effect executions beyond the first per logical request.", func(st Stats) float64 { return float64(st.Duplicates) })
	s.promLatency = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: "stormsim", Name: "attempt_latency_seconds", ConstLabels: labels,
		Help:    "Latency of the counted attempts the service answered, arrival to answer (the histogram behind /stats latency_ms).",
		Buckets: latencyBuckets,
	})
	reg.MustRegister(s.promLatency)
	s.registerEdgeCounters(reg)
	s.registerConsumer(reg)
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}

// latencyBuckets are the upper bounds (seconds) of /metrics' latency
// histogram: 1-2.5-5 steps from 0.5 ms, where loopback service times
// start, to one minute, beyond any scenario's usual deadline.
var latencyBuckets = []float64{
	0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
	0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
}

// registerEdgeCounters exposes each outgoing edge's policy counters,
// labelled by the service and the edge (the callee's name). Edges of one
// callee (several calls entries, fan-out) are summed, as /stats' edges
// are when a caller-callee pair is reported as one.
func (s *Service) registerEdgeCounters(reg *prometheus.Registry) {
	var callees []string
	for _, e := range s.outEdges {
		if !slices.Contains(callees, e.to) {
			callees = append(callees, e.to)
		}
	}
	for _, to := range callees {
		labels := prometheus.Labels{"service": s.name, "edge": to}
		sum := func() metrics.EdgeSummary {
			total := metrics.EdgeSummary{From: s.name, To: to}
			for _, e := range s.outEdges {
				if e.to == to {
					total.Add(e.ec.Summary(s.name, e.to))
				}
			}
			return total
		}
		counter := func(name, help string, get func(metrics.EdgeSummary) int64) {
			reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
				Namespace: "stormsim", Subsystem: "edge", Name: name, Help: help, ConstLabels: labels,
			}, func() float64 { return float64(get(sum())) }))
		}
		counter("calls_total", "Logical calls made on the edge.", func(e metrics.EdgeSummary) int64 { return e.Calls })
		counter("attempts_total", "Attempts sent on the edge, retries and hedges included.", func(e metrics.EdgeSummary) int64 { return e.Attempts })
		counter("retries_total", "Retries sent on the edge.", func(e metrics.EdgeSummary) int64 { return e.Retries })
		counter("hedges_total", "Hedged attempts sent on the edge.", func(e metrics.EdgeSummary) int64 { return e.HedgesSent })
		counter("budget_denied_total", "Retries the retry budget refused.", func(e metrics.EdgeSummary) int64 { return e.RetriesDenied })
		counter("breaker_rejected_total", "Calls the open circuit breaker failed fast.", func(e metrics.EdgeSummary) int64 { return e.BreakerFastFail })
		var recs []*transport.PhaseRecorder
		for _, e := range s.outEdges {
			if e.to == to {
				recs = append(recs, &e.ec.Phases)
			}
		}
		reg.MustRegister(transport.NewPhaseCollector(labels, recs))
	}
}
