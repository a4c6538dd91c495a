package serve

import (
	"net"
	"sync"
	"time"
)

// h2Preface opens every HTTP/2 connection (RFC 9113 §3.4), gRPC's among
// them; an HTTP/1 request starts with its method instead.
const h2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// splitListener serves two protocols on one port: connections that open
// with the HTTP/2 preface go to h2 (a gRPC server), all others to h1 (the
// service's HTTP server: /stats, /metrics, HTTP attempts). Closing either
// closes ln; a connection that says nothing for serverReadHeaderTimeout is
// closed.
func splitListener(ln net.Listener) (h1, h2 net.Listener) {
	sp := &protoSplit{base: ln, done: make(chan struct{})}
	sp.h1 = &subListener{sp: sp, conns: make(chan net.Conn)}
	sp.h2 = &subListener{sp: sp, conns: make(chan net.Conn)}
	go sp.accept()
	return sp.h1, sp.h2
}

type protoSplit struct {
	base   net.Listener
	h1, h2 *subListener
	done   chan struct{} // closed when base stops accepting
	once   sync.Once
}

func (sp *protoSplit) accept() {
	defer close(sp.done)
	for {
		c, err := sp.base.Accept()
		if err != nil {
			return
		}
		go sp.route(c)
	}
}

// route reads as much of the preface as the connection sends, up to the
// first byte that differs from it, and hands the connection on with those
// bytes to be read again.
func (sp *protoSplit) route(c net.Conn) {
	buf := make([]byte, len(h2Preface))
	n := 0
	_ = c.SetReadDeadline(time.Now().Add(serverReadHeaderTimeout))
	for n < len(buf) {
		m, err := c.Read(buf[n:])
		n += m
		if string(buf[:n]) != h2Preface[:n] || err != nil {
			break
		}
	}
	_ = c.SetReadDeadline(time.Time{})
	if n == 0 {
		c.Close()
		return
	}
	to := sp.h1
	if n == len(buf) && string(buf) == h2Preface {
		to = sp.h2
	}
	select {
	case to.conns <- &peekedConn{Conn: c, buf: buf[:n]}:
	case <-sp.done:
		c.Close()
	}
}

func (sp *protoSplit) close() error {
	var err error
	sp.once.Do(func() { err = sp.base.Close() })
	return err
}

// subListener is one protocol's side of a split listener.
type subListener struct {
	sp    *protoSplit
	conns chan net.Conn
}

func (l *subListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.sp.done:
		return nil, net.ErrClosed
	}
}

func (l *subListener) Close() error   { return l.sp.close() }
func (l *subListener) Addr() net.Addr { return l.sp.base.Addr() }

// peekedConn replays the bytes read to route it before the rest.
type peekedConn struct {
	net.Conn
	buf []byte
}

func (c *peekedConn) Read(p []byte) (int, error) {
	if len(c.buf) > 0 {
		n := copy(p, c.buf)
		c.buf = c.buf[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}
