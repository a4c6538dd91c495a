// Package memnet is an in-memory network for tests: listeners and dials
// joined by net.Pipe, with no socket and no kernel in between. Inside a
// testing/synctest bubble a connection blocked on it is durably blocked
// (net.Pipe waits on channels), so the bubble's fake clock can advance
// while servers and clients wait for each other — which real sockets,
// whose waits the bubble cannot see, never allow.
//
// A Network is safe for concurrent use; its zero value is ready.
package memnet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
)

// ErrRefused is what dialling an address nobody listens on returns.
var ErrRefused = errors.New("memnet: connection refused")

// Network holds the listeners of one test, by address.
type Network struct {
	mu   sync.Mutex
	ls   map[string]*Listener
	port int
}

// Listen listens on addr (host:port); port 0 takes the next free one.
func (n *Network) Listen(addr string) (net.Listener, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("memnet: listen %q: %w", addr, err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ls == nil {
		n.ls = map[string]*Listener{}
	}
	if port == "0" {
		for {
			n.port++
			addr = net.JoinHostPort(host, strconv.Itoa(40000+n.port))
			if n.ls[addr] == nil {
				break
			}
		}
	}
	if n.ls[addr] != nil {
		return nil, fmt.Errorf("memnet: listen %s: address in use", addr)
	}
	l := &Listener{n: n, addr: addr, conns: make(chan net.Conn), done: make(chan struct{})}
	n.ls[addr] = l
	return l, nil
}

// DialContext connects to the listener at addr, as net.Dialer.DialContext
// does (the network name is ignored).
func (n *Network) DialContext(ctx context.Context, _, addr string) (net.Conn, error) {
	n.mu.Lock()
	l := n.ls[addr]
	n.mu.Unlock()
	if l == nil {
		return nil, fmt.Errorf("memnet: dial %s: %w", addr, ErrRefused)
	}
	client, server := net.Pipe()
	c, s := &conn{Conn: client, local: addrOf("127.0.0.1:1"), remote: addrOf(addr)}, &conn{Conn: server, local: addrOf(addr), remote: addrOf("127.0.0.1:1")}
	select {
	case l.conns <- s:
		return c, nil
	case <-l.done:
		return nil, fmt.Errorf("memnet: dial %s: %w", addr, ErrRefused)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Listener is a Network's listener: Accept returns the server side of
// each dialled connection.
type Listener struct {
	n     *Network
	addr  string
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

// Accept waits for the next connection.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close stops listening; connections already accepted stay open.
func (l *Listener) Close() error {
	l.once.Do(func() {
		close(l.done)
		l.n.mu.Lock()
		delete(l.n.ls, l.addr)
		l.n.mu.Unlock()
	})
	return nil
}

// Addr is the address listened on.
func (l *Listener) Addr() net.Addr { return addrOf(l.addr) }

// conn is a pipe end with the addresses of a TCP connection.
type conn struct {
	net.Conn
	local, remote net.Addr
}

func (c *conn) LocalAddr() net.Addr  { return c.local }
func (c *conn) RemoteAddr() net.Addr { return c.remote }

// addrOf is an address of network "tcp", so that code expecting one
// (host:port) reads it as it reads a socket's.
type addrOf string

func (a addrOf) Network() string { return "tcp" }
func (a addrOf) String() string  { return string(a) }
