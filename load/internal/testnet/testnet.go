// Package testnet holds the sockets the load packages' tests share: a
// loopback port that refuses connections (ClosedPort) and a raw TCP
// server whose connections a test scripts byte by byte (ServeConns).
// Everything listens on 127.0.0.1 and is closed when the test ends.
package testnet

import (
	"net"
	"sync"
	"testing"
)

// ServeConns accepts connections on a loopback port the kernel picks and
// runs handle on each, in its own goroutine, closing the connection when
// handle returns. It returns the address; the listener closes, and every
// handler is waited for, when the test ends.
func ServeConns(tb testing.TB, handle func(net.Conn)) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	var wg sync.WaitGroup
	tb.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				handle(c)
			}()
		}
	}()
	return ln.Addr().String()
}
