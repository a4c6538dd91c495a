package connserve

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// TestCloseEndsConnections: Close makes Serve return ErrClosed, closes a
// connection still being served (its handler's read ends) and waits for
// the handler to return.
func TestCloseEndsConnections(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var s Server
	started, returned := make(chan struct{}), make(chan struct{})
	served := make(chan error, 1)
	go func() {
		served <- s.Serve(ln, func(c net.Conn) {
			close(started)
			io.Copy(io.Discard, c) // until Close closes c
			close(returned)
		})
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	select {
	case <-started:
	case <-time.After(5 * time.Second):
		t.Fatal("the connection was not served")
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case <-returned: // Close waited for it
	default:
		t.Fatal("Close returned before the connection's handler")
	}
	if err := <-served; !errors.Is(err, ErrClosed) {
		t.Fatalf("Serve returned %v, want ErrClosed", err)
	}
	if err := s.Serve(ln, func(net.Conn) {}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Serve after Close returned %v, want ErrClosed", err)
	}
}
