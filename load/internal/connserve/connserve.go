// Package connserve accepts a listener's connections and serves each on a
// goroutine of its own until the server is closed: the accept loop the
// benchmarks' lean targets (httpecho's HTTP/1.1, healthecho's gRPC) share.
package connserve

import (
	"errors"
	"net"
	"sync"
)

// ErrClosed is what Serve returns once Close has stopped it.
var ErrClosed = errors.New("server closed")

// Server tracks the connections it serves so that Close can end them all.
// The zero value is ready to use; a Server serves one listener.
type Server struct {
	mu    sync.Mutex
	conns map[net.Conn]struct{}
	ln    net.Listener
	done  bool
	wg    sync.WaitGroup
}

// Serve accepts connections on ln and runs serve for each on its own
// goroutine, closing the connection when serve returns, until Close is
// called or ln fails; it returns ErrClosed after Close. A temporary accept
// error (a timeout) is retried.
func (s *Server) Serve(ln net.Listener, serve func(net.Conn)) error {
	s.mu.Lock()
	if s.done {
		s.mu.Unlock()
		return ErrClosed
	}
	s.ln = ln
	s.conns = make(map[net.Conn]struct{})
	s.mu.Unlock()
	for {
		c, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			done := s.done
			s.mu.Unlock()
			if done {
				return ErrClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		s.mu.Lock()
		if s.done {
			s.mu.Unlock()
			c.Close()
			return ErrClosed
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			serve(c)
			c.Close()
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
		}()
	}
}

// Close stops Serve, closes every open connection and waits for their
// goroutines to end.
func (s *Server) Close() error {
	s.mu.Lock()
	s.done = true
	var err error
	if s.ln != nil {
		err = s.ln.Close()
	}
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return err
}
