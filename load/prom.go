package load

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
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
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}
