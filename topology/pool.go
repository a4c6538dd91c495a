package topology

import (
	"strings"
	"time"
)

// Pool is a call edge's connection pool: each attempt holds one connection
// from the moment it is sent until its answer comes back (a timed-out
// attempt's connection is closed, as an HTTP/1.1 client must). An attempt
// that finds no idle connection opens one if fewer than Size exist and
// fewer than MaxConnecting are being opened, paying ConnectTime and then
// TLSTime; otherwise it waits, first come first served.
type Pool struct {
	// Size caps the connections open or opening on the edge (> 0).
	Size int `yaml:"size"`
	// ConnectTime is the TCP connect of a new connection (default 0).
	ConnectTime *Dist `yaml:"connect_time,omitempty"`
	// TLSTime is a new connection's handshake after the connect (default 0).
	TLSTime *Dist `yaml:"tls_time,omitempty"`
	// IdleTimeout closes a connection idle for longer; 0 keeps it open.
	IdleTimeout time.Duration `yaml:"idle_timeout,omitempty"`
	// MaxConnecting caps the connections being opened at once; 0 means Size.
	MaxConnecting int `yaml:"max_connecting,omitempty"`
}

// pool validates a call's connection pool and phase timeouts.
func (v *validator) pool(c *Call, p string) {
	v.nonNegative(p+".pool_timeout", c.PoolTimeout)
	v.nonNegative(p+".connect_timeout", c.ConnectTimeout)
	v.nonNegative(p+".tls_timeout", c.TLSTimeout)
	v.nonNegative(p+".first_byte_timeout", c.FirstByteTimeout)
	v.nonNegative(p+".queue_timeout", c.QueueTimeout)
	pl := c.Pool
	if c.QueueTimeout > 0 {
		switch {
		case pl == nil:
			v.add(p+".queue_timeout", "needs %s.pool: the queue is the wait for a slot of the pool (pool.size per replica)", p)
		case c.PoolTimeout > 0:
			v.add(p+".queue_timeout", "bounds the same wait as pool_timeout: keep one")
		}
	}
	if pl == nil {
		return
	}
	pp := p + ".pool"
	if pl.Size <= 0 {
		v.add(pp+".size", "must be > 0, got %d", pl.Size)
	}
	if pl.MaxConnecting < 0 {
		v.add(pp+".max_connecting", "must be ≥ 0, got %d", pl.MaxConnecting)
	}
	v.nonNegative(pp+".idle_timeout", pl.IdleTimeout)
	if pl.ConnectTime != nil {
		v.dist(pl.ConnectTime, pp+".connect_time")
	}
	if pl.TLSTime != nil {
		v.dist(pl.TLSTime, pp+".tls_time")
	}
}

// phaseWarnings flags the connection phase timeouts on a call without a
// pool: the simulator has no connection there to bound (load mode still
// enforces them). first_byte_timeout is not among them: without a pool
// the simulator bounds each attempt by it (sim's firstByteBound).
func phaseWarnings(at string, c *Call) []string {
	if c.Pool != nil {
		return nil
	}
	var keys []string
	for _, k := range []struct {
		name string
		d    time.Duration
	}{{"pool_timeout", c.PoolTimeout}, {"connect_timeout", c.ConnectTimeout}, {"tls_timeout", c.TLSTimeout}} {
		if k.d > 0 {
			keys = append(keys, at+"."+k.name)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	return []string{strings.Join(keys, ", ") + ": no effect in the simulator without " + at + ".pool (load mode enforces it); add a pool"}
}
