package faultproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/stormsim/stormsim/load/driver"
)

// Server is a Proxy listening on an address.
type Server struct {
	// URL is the proxy's base URL (http://HOST:PORT).
	URL         string
	Proxy       *Proxy
	srv         *http.Server
	errc        chan error
	msrv        *http.Server // ListenMetrics's, if started
	mdone       chan error
	allowRemote bool
	closeOnce   sync.Once
	closeErr    error
}

// Listen starts serving p on addr (HOST:PORT; port 0 picks a free one).
// An address off the loopback interface is refused unless allowRemote.
func Listen(p *Proxy, addr string, allowRemote bool) (*Server, error) {
	if !allowRemote {
		if err := driver.CheckLoopback(addr); err != nil {
			return nil, fmt.Errorf("faultproxy: listen %s: %w", addr, err)
		}
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("faultproxy: %w", err)
	}
	s := &Server{URL: "http://" + l.Addr().String(), Proxy: p, errc: make(chan error, 1), allowRemote: allowRemote}
	s.srv = &http.Server{
		Handler:           p,
		MaxHeaderBytes:    p.maxHeader,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	if p.h2c {
		s.srv.Protocols = new(http.Protocols)
		s.srv.Protocols.SetHTTP1(true)
		s.srv.Protocols.SetUnencryptedHTTP2(true)
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

// ListenMetrics serves the proxy's /metrics on addr (an address of its
// own, so that the upstream's paths, its own /metrics included, all go
// through the proxy) and returns its base URL. Close stops it too.
func (s *Server) ListenMetrics(addr string) (string, error) {
	if s.msrv != nil {
		return "", errors.New("faultproxy: metrics already served")
	}
	if !s.allowRemote {
		if err := driver.CheckLoopback(addr); err != nil {
			return "", fmt.Errorf("faultproxy: metrics %s: %w", addr, err)
		}
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("faultproxy: metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", s.Proxy.Metrics())
	s.msrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	s.mdone = make(chan error, 1)
	go func() {
		err := s.msrv.Serve(l)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		s.mdone <- err
	}()
	return "http://" + l.Addr().String(), nil
}

// Close stops the server: holds end, connections close after their
// request, within ctx. When it returns without error every request has
// been recorded (the log and Config.OnRecord have all of them), those
// whose connection the proxy took over to drop or hold included. Calls
// after the first return the first's result.
func (s *Server) Close(ctx context.Context) error {
	s.closeOnce.Do(func() {
		s.Proxy.Close()
		errs := []error{shutdown(ctx, s.srv), <-s.errc}
		if s.msrv != nil {
			errs = append(errs, shutdown(ctx, s.msrv), <-s.mdone)
		}
		served := make(chan struct{})
		go func() { s.Proxy.handlers.Wait(); close(served) }()
		select {
		case <-served:
		case <-ctx.Done():
			errs = append(errs, fmt.Errorf("faultproxy: requests still being served: %w", ctx.Err()))
		}
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// shutdown shuts srv down within ctx, then closes what is left.
func shutdown(ctx context.Context, srv *http.Server) error {
	err := srv.Shutdown(ctx)
	if err != nil {
		srv.Close()
	}
	return err
}
