package serve

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/stormsim/stormsim/load/driver"
	"github.com/stormsim/stormsim/load/internal/network"
	"github.com/stormsim/stormsim/load/transport"
	"github.com/stormsim/stormsim/topology"
)

// SelfSigned makes a self-signed certificate for 127.0.0.1, ::1 and
// localhost, valid for a day, for `serve --tls`: handshakes are in the
// path as in production, and only loopback clients that were given the
// certificate (its PEM) trust it.
func SelfSigned(now time.Time) (tls.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("load: tls key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("load: tls serial: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "stormsim serve"},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("load: tls certificate: %w", err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, certPEM, nil
}

// ClientTLS is a client configuration trusting only the certificates in
// pemCerts (a `serve --tls` certificate).
func ClientTLS(pemCerts []byte) (*tls.Config, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemCerts) {
		return nil, fmt.Errorf("load: no PEM certificate found")
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// connResetter tracks one server's connections so a reset_connections
// fault can close them all, as a deploy does: idle ones at once, busy ones
// after their answer (Connection: close), matching the simulator.
type connResetter struct {
	mu    sync.Mutex
	epoch uint64
	conns map[net.Conn]*connEpoch
}

type connEpoch struct {
	conn  net.Conn
	epoch uint64
	idle  bool
}

type connKey struct{}

func newConnResetter() *connResetter { return &connResetter{conns: map[net.Conn]*connEpoch{}} }

// install hooks r into srv and wraps its handler.
func (r *connResetter) install(srv *http.Server) {
	srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		r.mu.Lock()
		ce := &connEpoch{conn: c, epoch: r.epoch}
		r.conns[c] = ce
		r.mu.Unlock()
		return context.WithValue(ctx, connKey{}, ce)
	}
	srv.ConnState = func(c net.Conn, st http.ConnState) {
		r.mu.Lock()
		defer r.mu.Unlock()
		ce := r.conns[c]
		switch st {
		case http.StateClosed, http.StateHijacked:
			delete(r.conns, c)
		case http.StateIdle:
			if ce != nil {
				ce.idle = true
				if ce.epoch != r.epoch {
					c.Close()
				}
			}
		case http.StateActive:
			if ce != nil {
				ce.idle = false
			}
		}
	}
	h := srv.Handler
	srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if ce, ok := req.Context().Value(connKey{}).(*connEpoch); ok {
			r.mu.Lock()
			stale := ce.epoch != r.epoch
			r.mu.Unlock()
			if stale {
				w.Header().Set("Connection", "close")
			}
		}
		h.ServeHTTP(w, req)
	})
}

// reset closes every connection: idle ones now, busy ones when answered.
func (r *connResetter) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.epoch++
	for c, ce := range r.conns {
		if ce.idle {
			c.Close()
		}
	}
}

// scheduleResets arms r's reset at each instant of at (offsets from
// epoch).
func scheduleResets(r *connResetter, at []time.Duration, epoch time.Time) []*time.Timer {
	var ts []*time.Timer
	for _, t := range at {
		ts = append(ts, time.AfterFunc(time.Until(epoch.Add(t)), r.reset))
	}
	return ts
}

// clientFor is the driver's HTTP client toward cluster cl: nil (Run makes
// its own) unless the cluster serves TLS or the client edge has a
// connection pool, whose size then bounds the driver's connections, as
// the simulator's pool does.
func clientFor(cl *Cluster, pool *topology.Pool, conns int) (*http.Client, int) {
	if pool != nil {
		conns = pool.Size
	}
	if cl.CertPEM == nil && pool == nil {
		return nil, conns
	}
	if conns <= 0 {
		conns = driver.DefaultWorkers // Run's default: one connection per worker
	}
	tr := network.DialOn(cl.network, transport.NewHTTPTransport(conns))
	if pool != nil && pool.IdleTimeout > 0 {
		tr.IdleConnTimeout = pool.IdleTimeout
	}
	if cl.CertPEM != nil {
		tr.TLSClientConfig = cl.tr.TLSClientConfig.Clone()
	}
	return &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}, conns
}
