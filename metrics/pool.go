package metrics

// PoolSummary is what one edge's connection pool did (simulator), or what
// load mode's connection trace saw: how often an attempt waited for a
// connection and for how long, how many new connections were opened
// (each a connect and, with TLS, a handshake), and the attempts that
// failed before they were sent, by phase.
type PoolSummary struct {
	// Acquired counts attempts that got a connection; Waited those of them
	// that did not find an idle one at once.
	Acquired int64 `json:"acquired"`
	Waited   int64 `json:"waited"`
	// WaitMeanMs is the mean time from asking for a connection to holding
	// one (GetConn→GotConn, a new connection's connect and handshake
	// included) over Acquired; WaitTotalMs its sum, kept for merges.
	WaitMeanMs  float64 `json:"wait_mean_ms"`
	WaitTotalMs float64 `json:"wait_total_ms"`
	WaitMaxMs   float64 `json:"wait_max_ms"`
	// Handshakes counts connections opened to the end.
	Handshakes int64 `json:"handshakes"`
	// PoolTimeouts, ConnectTimeouts and TLSTimeouts count attempts that
	// failed not_sent in that phase.
	PoolTimeouts    int64 `json:"pool_timeouts"`
	ConnectTimeouts int64 `json:"connect_timeouts"`
	TLSTimeouts     int64 `json:"tls_timeouts"`
	// Resets counts connections closed by a reset_connections fault.
	Resets int64 `json:"resets"`
}

// Add adds o's counts to p and recomputes the mean.
func (p *PoolSummary) Add(o PoolSummary) {
	p.Acquired += o.Acquired
	p.Waited += o.Waited
	p.WaitTotalMs += o.WaitTotalMs
	p.WaitMaxMs = max(p.WaitMaxMs, o.WaitMaxMs)
	p.Handshakes += o.Handshakes
	p.PoolTimeouts += o.PoolTimeouts
	p.ConnectTimeouts += o.ConnectTimeouts
	p.TLSTimeouts += o.TLSTimeouts
	p.Resets += o.Resets
	p.WaitMeanMs = 0
	if p.Acquired > 0 {
		p.WaitMeanMs = p.WaitTotalMs / float64(p.Acquired)
	}
}

// AddPool adds a pool's summary to the edge's, creating it if absent.
func (e *EdgeSummary) AddPool(o PoolSummary) {
	if e.Pool == nil {
		e.Pool = &PoolSummary{}
	}
	e.Pool.Add(o)
}
