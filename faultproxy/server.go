package faultproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/stormsim/stormsim/load"
)

// Server is a Proxy listening on an address.
type Server struct {
	// URL is the proxy's base URL (http://HOST:PORT).
	URL   string
	Proxy *Proxy
	srv   *http.Server
	errc  chan error
}

// Listen starts serving p on addr (HOST:PORT; port 0 picks a free one).
// An address off the loopback interface is refused unless allowRemote.
func Listen(p *Proxy, addr string, allowRemote bool) (*Server, error) {
	if !allowRemote {
		if err := load.CheckLoopback(addr); err != nil {
			return nil, fmt.Errorf("faultproxy: listen %s: %w", addr, err)
		}
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("faultproxy: %w", err)
	}
	s := &Server{URL: "http://" + l.Addr().String(), Proxy: p, errc: make(chan error, 1)}
	s.srv = &http.Server{
		Handler:           p,
		MaxHeaderBytes:    p.maxHeader,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	go func() {
		err := s.srv.Serve(l)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		s.errc <- err
	}()
	return s, nil
}

// Close stops the server: holds end, connections close after their
// request, within ctx.
func (s *Server) Close(ctx context.Context) error {
	s.Proxy.Close()
	err := s.srv.Shutdown(ctx)
	if err != nil {
		s.srv.Close()
	}
	return errors.Join(err, <-s.errc)
}
