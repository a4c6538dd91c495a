package faultproxy

import (
	"encoding/json"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Record is what the proxy did with one request: the JSON line of its log.
// Times are milliseconds since the proxy's epoch; a time not reached is 0.
type Record struct {
	Seq       uint64 `json:"seq"`
	RequestID string `json:"request_id,omitempty"`
	Attempt   int    `json:"attempt,omitempty"`
	Key       string `json:"key,omitempty"`
	Method    string `json:"method"`
	Path      string `json:"path"`
	// Fault is the outcome's name (Fault.String); Drop the drop mode of a
	// drop_response; Source who decided ("faults[0]", "rule", ...).
	Fault  string `json:"fault"`
	Drop   string `json:"drop,omitempty"`
	Source string `json:"source,omitempty"`
	// UpstreamStatus is the upstream's answer (0: not forwarded, or no
	// answer); Status what the client was sent (0: nothing), and Delivered
	// whether that was the upstream's answer.
	UpstreamStatus int  `json:"upstream_status,omitempty"`
	Status         int  `json:"status,omitempty"`
	Delivered      bool `json:"delivered"`
	// AtMS is the arrival, ForwardedMS when the request was written to
	// the upstream, AnsweredMS when its answer had been read, DoneMS when
	// the proxy was done with the request.
	AtMS           float64 `json:"at_ms"`
	ForwardedMS    float64 `json:"forwarded_ms,omitempty"`
	AnsweredMS     float64 `json:"answered_ms,omitempty"`
	DoneMS         float64 `json:"done_ms"`
	LatencyAddMS   float64 `json:"latency_add_ms,omitempty"`
	LatencyReplyMS float64 `json:"latency_reply_ms,omitempty"`
	// Error says what failed: the upstream, or the client gone.
	Error string `json:"error,omitempty"`

	forwarded bool // the upstream answered, traced or not
	abort     bool // reset the HTTP/2 stream once recorded
}

// Forwarded reports whether the request was written to the upstream.
func (r *Record) Forwarded() bool { return r.ForwardedMS > 0 || r.forwarded }

// record logs, counts and hands on rec.
func (p *Proxy) record(rec *Record) {
	p.metrics.count(rec.Fault)
	if rec.Forwarded() {
		p.metrics.forwarded.Inc()
	}
	if rec.Delivered {
		p.metrics.delivered.Inc()
	}
	if p.log != nil {
		b, err := json.Marshal(rec)
		if err == nil {
			b = append(b, '\n')
			p.logMu.Lock()
			p.log.Write(b)
			p.logMu.Unlock()
		}
	}
	if p.onRecord != nil {
		p.onRecord(*rec)
	}
}

// metrics are the proxy's Prometheus counters, in a registry of its own
// so several proxies in one process do not clash.
type metrics struct {
	reg       *prometheus.Registry
	requests  *prometheus.CounterVec
	byFault   map[string]prometheus.Counter // requests' counters, resolved once
	forwarded prometheus.Counter
	delivered prometheus.Counter
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "stormsim", Subsystem: "proxy", Name: "requests_total",
			Help: "Requests that arrived at the proxy, by the fault applied (none: forwarded and delivered as answered).",
		}, []string{"fault"}),
		forwarded: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "stormsim", Subsystem: "proxy", Name: "forwarded_total",
			Help: "Requests written to the upstream.",
		}),
		delivered: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "stormsim", Subsystem: "proxy", Name: "delivered_total",
			Help: "Upstream answers delivered to the client.",
		}),
	}
	m.byFault = make(map[string]prometheus.Counter, len(faultNames))
	for _, n := range faultNames {
		m.byFault[n] = m.requests.WithLabelValues(n) // every fault listed, from 0
	}
	m.reg.MustRegister(m.requests, m.forwarded, m.delivered)
	return m
}

// count counts a request with fault.
func (m *metrics) count(fault string) {
	if c, ok := m.byFault[fault]; ok {
		c.Inc()
		return
	}
	m.requests.WithLabelValues(fault).Inc()
}

// Metrics returns the handler of the proxy's /metrics (Prometheus text).
func (p *Proxy) Metrics() http.Handler {
	return promhttp.HandlerFor(p.metrics.reg, promhttp.HandlerOpts{})
}
