// Package network picks the network a run listens and dials on: the
// host's, or, in tests, an in-memory one (internal/memnet).
package network

import (
	"context"
	"net"
	"net/http"

	"github.com/stormsim/stormsim/internal/memnet"
)

// A run listens and dials on the host's network, or, in tests, on an
// in-memory one (memnet) so that a testing/synctest bubble can run a whole
// scenario — services, driver and every connection between them — on its
// fake clock. A nil *memnet.Network is the host's network.

// ListenOn listens on addr on n (nil: a TCP socket).
func ListenOn(n *memnet.Network, addr string) (net.Listener, error) {
	if n == nil {
		return net.Listen("tcp", addr)
	}
	return n.Listen(addr)
}

// DialOn makes tr dial on n (nil: leaves tr's dialer).
func DialOn(n *memnet.Network, tr *http.Transport) *http.Transport {
	if n != nil {
		tr.DialContext = n.DialContext
	}
	return tr
}

// DialerOf is n's dialer (nil for the host's network: the transport's own).
func DialerOf(n *memnet.Network) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if n == nil {
		return nil
	}
	return n.DialContext
}
