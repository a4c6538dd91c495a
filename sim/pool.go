package sim

import (
	"fmt"
	"time"

	"github.com/stormsim/stormsim/dist"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/model"
	"github.com/stormsim/stormsim/policies"
	"github.com/stormsim/stormsim/topology"
)

// Where an attempt stands in its edge's connection pool (poolSlot.state).
const (
	poolNone       uint8 = iota // no pool, or done with it
	poolWaiting                 // queued for a connection
	poolConnecting              // opening its own new connection
	poolHolding                 // sent on a connection it holds until answered
)

// poolSlot is an attempt's place in its edge's connection pool.
type poolSlot struct {
	state uint8
	since time.Duration // when it asked for a connection (GetConn)
	epoch uint32        // the pool's epoch when it got its connection
	tmo   Timer         // the pool_timeout while it waits, then its first_byte_timeout
	conn  *pconn        // the connection it is opening
}

// pconn is a connection being opened; its attempt is nil once that
// attempt let go, and the connection then joins the pool when it is up.
type pconn struct {
	p   *connPool
	a   *attempt
	ok  bool // the handshake completes (else a phase timeout ends it)
	tls bool // it failed in the TLS phase
}

// connPool is one edge's pool of connections (topology.Pool). Idle
// connections are a stack of idle-since times, most recent last: the
// most recently used one is reused first, as net/http does, and those idle
// longer than idleTimeout are closed when next looked at (no timer needed).
type connPool struct {
	m                   *run
	e                   *edge
	size, maxConnecting int
	connect, tls        dist.Sampler
	hasConnect, hasTLS  bool
	idleTimeout         time.Duration
	idle                []time.Duration
	busy, connecting    int
	waiters             []poolWaiter
	head                int
	epoch               uint32
	sum                 metrics.PoolSummary
	hUp, hWaitTimeout   Handler
	hFirstByte          Handler
	slots               []*poolSlot // free slots
}

// slot takes a free poolSlot: an attempt holds one only while it deals
// with the pool, which keeps the attempt record small for edges without.
func (p *connPool) slot() *poolSlot {
	if n := len(p.slots); n > 0 {
		s := p.slots[n-1]
		p.slots = p.slots[:n-1]
		return s
	}
	return new(poolSlot)
}

// drop returns a's slot to the free list.
func (p *connPool) drop(a *attempt) {
	*a.pool = poolSlot{}
	p.slots = append(p.slots, a.pool)
	a.pool = nil
}

type poolWaiter struct {
	a   *attempt
	gen uint32
}

func newConnPool(m *run, e *edge, c *topology.Pool, field string) (*connPool, error) {
	p := &connPool{m: m, e: e, size: c.Size, maxConnecting: c.MaxConnecting, idleTimeout: c.IdleTimeout}
	if p.size <= 0 {
		return nil, fmt.Errorf("%s.pool.size: must be > 0, got %d", field, c.Size)
	}
	if p.maxConnecting <= 0 || p.maxConnecting > p.size {
		p.maxConnecting = p.size
	}
	var err error
	if p.connect, p.hasConnect, err = model.Delay(c.ConnectTime, field+".pool.connect_time"); err != nil {
		return nil, err
	}
	if p.tls, p.hasTLS, err = model.Delay(c.TLSTime, field+".pool.tls_time"); err != nil {
		return nil, err
	}
	p.hUp = func(_ *Engine, x any) { p.up(x.(*pconn)) }
	p.hWaitTimeout = func(_ *Engine, x any) { p.waitTimedOut(x.(*attempt)) }
	p.hFirstByte = func(_ *Engine, x any) { p.firstByteTimedOut(x.(*attempt)) }
	return p, nil
}

// acquire asks for a connection for attempt a, whose timeout is armed:
// it is sent at once on an idle one, opens a new one, or waits.
func (p *connPool) acquire(a *attempt) {
	now := p.m.eng.Now()
	a.pool = p.slot()
	*a.pool = poolSlot{state: poolWaiting, since: now}
	p.expire(now)
	if p.head == len(p.waiters) {
		if p.take(a) {
			return
		}
	}
	p.waiters = append(p.waiters, poolWaiter{a, a.gen})
	if d, _ := p.e.pe.Phases.PoolWait(); d > 0 {
		a.pool.tmo = p.m.eng.After(d, p.hWaitTimeout, a)
	}
}

// take gives a an idle connection or starts opening one for it, if it can.
func (p *connPool) take(a *attempt) bool {
	if n := len(p.idle); n > 0 {
		p.idle = p.idle[:n-1]
		p.got(a)
		return true
	}
	if p.busy+p.connecting >= p.size || p.connecting >= p.maxConnecting {
		return false
	}
	p.connecting++
	a.pool.state = poolConnecting
	c := &pconn{p: p, a: a, ok: true}
	a.pool.conn = c
	ph := p.e.pe.Phases
	r := p.e.pe.Rand
	var d time.Duration
	if p.hasConnect {
		d = p.connect.Sample(r)
	}
	if ph.Connect > 0 && d > ph.Connect {
		c.ok, d = false, ph.Connect
	} else {
		var h time.Duration
		if p.hasTLS {
			h = p.tls.Sample(r)
		}
		if ph.TLS > 0 && h > ph.TLS {
			c.ok, c.tls, h = false, true, ph.TLS
		}
		d += h
	}
	p.m.eng.After(d, p.hUp, c)
	return true
}

// got makes a hold a connection and sends it.
func (p *connPool) got(a *attempt) {
	now := p.m.eng.Now()
	p.busy++
	p.m.eng.Stop(a.pool.tmo) // its pool_timeout, if it waited
	a.pool.state, a.pool.epoch, a.pool.conn, a.pool.tmo = poolHolding, p.epoch, nil, Timer{}
	if d := p.e.pe.Phases.FirstByte; d > 0 {
		// Sent now: the answer must come back within first_byte_timeout
		// (the simulator's reply is one piece, its first byte).
		a.pool.tmo = p.m.eng.After(d, p.hFirstByte, a)
	}
	if a.counted {
		w := now - a.pool.since
		p.sum.Acquired++
		if w > 0 {
			p.sum.Waited++
		}
		ms := float64(w) / float64(time.Millisecond)
		p.sum.WaitTotalMs += ms
		p.sum.WaitMaxMs = max(p.sum.WaitMaxMs, ms)
	}
	p.m.transmit(a)
}

// up runs when connection c finished opening, or its phase timeout ran out.
func (p *connPool) up(c *pconn) {
	p.connecting--
	a := c.a
	if !c.ok {
		if a != nil {
			if a.counted {
				if c.tls {
					p.sum.TLSTimeouts++
				} else {
					p.sum.ConnectTimeouts++
				}
			}
			p.m.eng.Stop(a.pool.tmo)
			p.drop(a)
			p.m.notSent(a)
		}
		p.pump()
		return
	}
	if a != nil && a.counted || a == nil {
		p.sum.Handshakes++
	}
	if a == nil {
		p.release(p.epoch)
		return
	}
	p.got(a)
	p.pump()
}

// waitTimedOut fails an attempt whose pool_timeout ran out while it waited
// or opened a connection (GetConn→GotConn, as net/http counts it), or
// whose queue_timeout ran out in a proxy's per-server queue: then the
// proxy answers 503 itself (PhaseTimeouts.PoolWait decides the class).
func (p *connPool) waitTimedOut(a *attempt) {
	a.pool.tmo = Timer{}
	if a.pool.state == poolConnecting {
		// The wait covers the connection it started opening, which
		// carries on and joins the pool when up.
		a.pool.conn.a = nil
	}
	if a.counted {
		p.sum.PoolTimeouts++
	}
	p.drop(a)
	_, o := p.e.pe.Phases.PoolWait()
	a.waitOut = true
	p.m.unsent(a, o)
}

// firstByteTimedOut times out a sent attempt whose answer did not come
// within first_byte_timeout: a timeout, as the attempt's own would be.
func (p *connPool) firstByteTimedOut(a *attempt) {
	a.pool.tmo = Timer{}
	m, cr, k := p.m, a.caller, a.k
	m.abandon(a, true, true)
	act := cr.pc.TimedOut(m.eng.Now(), k)
	m.apply(cr, &act)
}

// firstByteBound is the attempt timeout of an edge without a pool whose
// first_byte_timeout is firstByte. Its attempts are sent the moment they
// start (no pool wait, connect or handshake) and the simulator's reply is
// one piece, so the first byte is the answer: first_byte_timeout bounds
// the same span as timeout, and running out is the same timeout (as
// firstByteTimedOut is with a pool). The tighter of the two is the bound.
func firstByteBound(timeout, firstByte time.Duration) time.Duration {
	if firstByte > 0 && (timeout <= 0 || firstByte < timeout) {
		return firstByte
	}
	return timeout
}

// release returns a connection got in epoch: to the first waiter, else to
// the idle stack; one from before a reset is closed instead.
func (p *connPool) release(epoch uint32) {
	if epoch != p.epoch {
		p.pump()
		return
	}
	p.idle = append(p.idle, p.m.eng.Now())
	p.pump()
}

// pump serves waiters while connections are idle or may be opened.
func (p *connPool) pump() {
	for p.head < len(p.waiters) {
		w := p.waiters[p.head]
		if w.a.gen != w.gen || w.a.pool == nil || w.a.pool.state != poolWaiting {
			p.head++ // it left (timed out or abandoned)
			continue
		}
		if !p.take(w.a) {
			break
		}
		p.head++
	}
	if p.head == len(p.waiters) {
		p.waiters, p.head = p.waiters[:0], 0
	} else if p.head > 1024 && p.head*2 > len(p.waiters) {
		n := copy(p.waiters, p.waiters[p.head:])
		p.waiters, p.head = p.waiters[:n], 0
	}
}

// expire closes idle connections idle longer than the idle timeout.
func (p *connPool) expire(now time.Duration) {
	if p.idleTimeout <= 0 {
		return
	}
	i := 0
	for i < len(p.idle) && now-p.idle[i] > p.idleTimeout {
		i++
	}
	if i > 0 {
		p.idle = p.idle[:copy(p.idle, p.idle[i:])]
	}
}

// reset closes every connection (reset_connections): idle ones at once,
// busy ones when their attempt is answered. Connections being opened
// complete against the new instance.
func (p *connPool) reset() {
	p.sum.Resets += int64(len(p.idle) + p.busy)
	p.idle = p.idle[:0]
	p.busy = 0 // those in use are closed when released
	p.epoch++
}

// answered lets go of a's connection when its answer reached the caller.
func (m *run) poolAnswered(a *attempt) {
	if a.pool.state != poolHolding {
		return
	}
	p := a.edge.pools[a.svc.rep]
	m.eng.Stop(a.pool.tmo)
	epoch := a.pool.epoch
	if epoch == p.epoch {
		p.busy--
	}
	p.drop(a)
	p.release(epoch)
}

// poolAbandon runs when a's caller gives up on it. An attempt that was
// not yet sent leaves the pool and is freed (the connection it was
// opening joins the pool when up); a sent one's connection is closed, as
// an HTTP/1.1 client must. It reports whether a was never sent.
func (m *run) poolAbandon(a *attempt) bool {
	p := a.edge.pools[a.svc.rep]
	switch a.pool.state {
	case poolWaiting:
		m.eng.Stop(a.pool.tmo)
	case poolConnecting:
		m.eng.Stop(a.pool.tmo)
		a.pool.conn.a = nil
	case poolHolding:
		m.eng.Stop(a.pool.tmo)
		if a.pool.epoch == p.epoch {
			p.busy--
		}
		p.drop(a)
		p.pump()
		return false
	default:
		return false
	}
	p.drop(a)
	m.releaseServer(a)
	p.pump()
	return true
}

// notSent answers a's caller with NotSent: a never left it.
func (m *run) notSent(a *attempt) { m.unsent(a, policies.NotSent) }

// unsent answers a's caller with o for an attempt that never reached its
// callee: NotSent, or a proxy queue's Unavailable.
func (m *run) unsent(a *attempt, o policies.Outcome) {
	a.answer, a.retryAfter, a.dontRetry = o, 0, false
	m.deliver(a)
}

// transmit puts a on the network toward its callee.
func (m *run) transmit(a *attempt) {
	if e := a.edge; e.hasNet {
		a.ev = m.eng.After(e.delay(a.svc), m.hAttArrive, a)
		return
	}
	m.arrive(a)
}

// resetConnections closes every pooled connection to replica s (a deploy
// of that replica): each edge's pool to it, and no other replica's.
func (m *run) resetConnections(s *service) {
	for _, e := range m.edges {
		if e.pools != nil && e.callee == s.reps[0] {
			e.pools[s.rep].reset()
		}
	}
}
