package serve

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/stormsim/stormsim/internal/memnet"
	"github.com/stormsim/stormsim/load/driver"
	"github.com/stormsim/stormsim/load/edge"
	"github.com/stormsim/stormsim/load/internal/network"
	"github.com/stormsim/stormsim/load/transport"
	"github.com/stormsim/stormsim/model"
	"github.com/stormsim/stormsim/topology"
)

// DefaultListen is where services listen unless told otherwise: loopback,
// each on a port the kernel picks.
const DefaultListen = "127.0.0.1:0"

// ClusterOptions configures StartCluster.
type ClusterOptions struct {
	// Listen is host:port for the first service; the others take the next
	// ports in scenario order (or kernel-chosen ports when the port is 0).
	// Default 127.0.0.1:0.
	Listen string
	// AllowRemote permits a non-loopback listen address.
	AllowRemote bool
	// Epoch is time 0 of the run (fault windows); default: now.
	Epoch time.Time
	// Connections bounds each service's connections to each callee
	// (default 1024).
	Connections int
	// LedgerWindow bounds the committing service's side-effect ledger
	// (ServiceConfig.LedgerWindow); zero keeps the whole run's.
	LedgerWindow time.Duration
	// Tracing, if set, gives every attempt a server span at its callee
	// and a client span at its caller (nil: no tracing).
	Tracing *edge.Tracing
	// Protocol is what the services speak: ProtocolHTTP (default) or
	// ProtocolGRPC (each service a gRPC server, downstream calls over gRPC).
	Protocol string
	// TLS serves every service over TLS with a self-signed certificate
	// made at start (Cluster.CertPEM); callers trust only it.
	TLS bool
	// NATS is the URL of a NATS server with JetStream for the scenario's
	// topics; empty embeds one in-process on 127.0.0.1 (a random port,
	// its store in a temporary directory removed at Close).
	NATS string
	// network, if set, is the in-memory network services listen and dial
	// on instead of the host's (tests; load/internal/network).
	network *memnet.Network
}

// Cluster is a scenario's services running as HTTP (or gRPC) servers.
type Cluster struct {
	// Services in scenario order, a service's replicas one after the
	// other; URLs maps each name to its base URL (its first replica's),
	// ReplicaURLs each replicated service to its replicas' URLs.
	Services    []*Service
	URLs        map[string]string
	ReplicaURLs map[string][]string
	// Epoch is time 0 of the run.
	Epoch   time.Time
	servers []*http.Server
	done    []chan struct{}
	tr      *http.Transport
	// grpc is set when the services speak gRPC.
	grpc *grpcCluster
	// CertPEM is the self-signed certificate of a TLS cluster.
	CertPEM []byte
	// resetTimers close a replica's connections at the reset_connections
	// faults that hit it.
	resetTimers []*time.Timer
	// async is the real broker of the scenario's topics, nil without.
	async *asyncCluster
	// plan is the scenario's plan, which every service binds.
	plan *model.Plan
	// network is ClusterOptions.network: where the cluster's clients dial.
	network *memnet.Network
	// passed records the requests past an irrevocable step, when the
	// scenario has one (serveeffects.go).
	passed *passedSteps
}

// Plan returns the scenario's plan (model.Compile) that the cluster's
// services bound: the simulator binds the same value for the scenario.
func (c *Cluster) Plan() *model.Plan { return c.plan }

// StartCluster starts every service of sc on its own loopback listener,
// each replica of a replicated service on one of its own.
func StartCluster(sc *topology.Scenario, opt ClusterOptions) (*Cluster, error) {
	if opt.Listen == "" {
		opt.Listen = DefaultListen
	}
	host, portS, err := net.SplitHostPort(opt.Listen)
	if err != nil {
		return nil, fmt.Errorf("load: listen address %q: %w", opt.Listen, err)
	}
	if !opt.AllowRemote {
		if err := driver.CheckLoopback(host); err != nil {
			return nil, fmt.Errorf("load: listen address %w", err)
		}
	}
	port, err := strconv.Atoi(portS)
	nListen := 0
	for i := range sc.Services {
		nListen += sc.Services[i].ReplicaCount()
	}
	if err != nil || port < 0 || port+nListen > 65536 {
		return nil, fmt.Errorf("load: listen address %q: bad port", opt.Listen)
	}
	for i, f := range sc.Faults {
		if f.RefuseConnections {
			return nil, fmt.Errorf("load: faults[%d].refuse_connections: a dead server is the simulator's; serve cannot refuse one replica's connections (stop the replica, or point the caller at a closed port)", i)
		}
	}
	if opt.Epoch.IsZero() {
		opt.Epoch = time.Now()
	}
	if opt.Connections <= 0 {
		opt.Connections = 1024
	}
	if opt.Protocol != "" && opt.Protocol != ProtocolHTTP && opt.Protocol != ProtocolGRPC {
		return nil, fmt.Errorf("load: protocol %q: want http or grpc", opt.Protocol)
	}
	if opt.TLS && opt.Protocol == ProtocolGRPC {
		return nil, fmt.Errorf("load: TLS serves HTTP only, not protocol grpc")
	}
	plan, err := model.Compile(sc)
	if err != nil {
		return nil, fmt.Errorf("load: %s: %w", scenarioName(sc), err)
	}
	c := &Cluster{URLs: map[string]string{}, ReplicaURLs: map[string][]string{}, Epoch: opt.Epoch, tr: network.DialOn(opt.network, transport.NewHTTPTransport(opt.Connections)), plan: plan, network: opt.network,
		passed: newPassedSteps(sc)}
	lns := make([]net.Listener, 0, nListen)
	fail := func(err error) (*Cluster, error) {
		for _, ln := range lns {
			ln.Close()
		}
		c.tr.CloseIdleConnections()
		if c.grpc != nil {
			c.grpc.closeClients()
		}
		_ = c.async.close()
		return nil, err
	}
	conns := newConnLimit(serveConnBudget())
	scheme := "http://"
	var serverTLS *tls.Config
	if opt.TLS {
		cert, certPEM, err := SelfSigned(time.Now())
		if err != nil {
			return fail(err)
		}
		if c.tr.TLSClientConfig, err = ClientTLS(certPEM); err != nil {
			return fail(err)
		}
		c.CertPEM, scheme = certPEM, "https://"
		serverTLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	for _, svc := range sc.Services {
		for r := range svc.ReplicaCount() {
			p := 0
			if port != 0 {
				p = port + len(lns)
			}
			ln, err := network.ListenOn(opt.network, net.JoinHostPort(host, strconv.Itoa(p)))
			if err != nil {
				return fail(fmt.Errorf("load: service %s: %w", svc.Name, err))
			}
			ln = conns.listen(ln)
			if serverTLS != nil {
				ln = tls.NewListener(ln, serverTLS)
			}
			lns = append(lns, ln)
			// Work is served on every path but /stats and /metrics; a service
			// named like one of them gets a trailing slash.
			path := "/" + svc.Name
			if path == "/stats" || path == "/metrics" {
				path += "/"
			}
			u := scheme + ln.Addr().String() + path
			if opt.Protocol == ProtocolGRPC {
				u = "grpc://" + ln.Addr().String() + "/" + transport.GRPCMethod
			}
			if r == 0 {
				c.URLs[svc.Name] = u
			}
			if svc.ReplicaCount() > 1 {
				c.ReplicaURLs[svc.Name] = append(c.ReplicaURLs[svc.Name], u)
			}
		}
	}
	client := &http.Client{Transport: c.tr}
	if opt.Protocol == ProtocolGRPC {
		dial := network.DialerOf(opt.network)
		gc, err := transport.NewGRPCClient(transport.GRPCClientOptions{Dial: dial})
		if err != nil {
			return fail(err)
		}
		c.grpc = &grpcCluster{client: gc, tracing: opt.Tracing, dial: dial}
	}
	if c.async, err = startAsync(sc, opt.NATS); err != nil {
		return fail(err)
	}
	for _, sp := range plan.Services {
		svc := sp.Config
		cl := client
		if opt.Tracing != nil {
			cl = &http.Client{Transport: opt.Tracing.Transport(svc.Name, "", c.tr)}
		}
		var tr transport.Transport = transport.NewHTTP(cl, false)
		if c.grpc != nil {
			gc, err := c.grpc.clientOf(svc.Name)
			if err != nil {
				return fail(err)
			}
			tr = gc
		}
		var first *Service
		for r := range svc.ReplicaCount() {
			s, err := NewService(sc, svc.Name, ServiceConfig{Epoch: opt.Epoch, URLs: c.URLs, Transport: tr, Commits: sp.Commits,
				LedgerWindow: opt.LedgerWindow, Replica: r, First: first, ReplicaURLs: c.ReplicaURLs,
				Topics: c.async.topicMap(), Plan: plan, passed: c.passed})
			if err != nil {
				for _, s := range c.Services {
					s.Close()
				}
				return fail(err)
			}
			if r == 0 {
				first = s
			}
			c.Services = append(c.Services, s)
		}
	}
	if c.grpc != nil {
		// gRPC and HTTP (/stats, /metrics) share each service's port.
		grpcLns := make([]net.Listener, len(lns))
		for i, ln := range lns {
			lns[i], grpcLns[i] = splitListener(ln)
		}
		c.grpc.serve(c.Services, grpcLns)
	}
	for i, s := range c.Services {
		srv := &http.Server{
			Handler:           opt.Tracing.Handler(s.name, s),
			ReadHeaderTimeout: serverReadHeaderTimeout,
			ReadTimeout:       serverReadTimeout,
			WriteTimeout:      serverWriteTimeout,
			IdleTimeout:       serverIdleTimeout,
			MaxHeaderBytes:    maxHeaderBytes,
		}
		// Only a replica hit by a reset_connections fault pays for tracking.
		if at := s.node.Resets; len(at) > 0 {
			r := newConnResetter()
			r.install(srv)
			c.resetTimers = append(c.resetTimers, scheduleResets(r, at, opt.Epoch)...)
		}
		done := make(chan struct{})
		c.servers = append(c.servers, srv)
		c.done = append(c.done, done)
		go func(ln net.Listener) {
			defer close(done)
			_ = srv.Serve(ln)
		}(lns[i])
	}
	return c, nil
}

// Replicas returns the running replicas of the service named name.
func (c *Cluster) Replicas(name string) []*Service {
	var out []*Service
	for _, s := range c.Services {
		if s.name == name {
			out = append(out, s)
		}
	}
	return out
}

// Service returns the running service named name (its first replica), or nil.
func (c *Cluster) Service(name string) *Service {
	for _, s := range c.Services {
		if s.name == name {
			return s
		}
	}
	return nil
}

// Close stops the services: work held for nobody ends, servers shut down
// (waiting up to ctx for handlers), and idle connections close.
func (c *Cluster) Close(ctx context.Context) error {
	for _, s := range c.Services {
		s.Close()
	}
	for _, t := range c.resetTimers {
		t.Stop()
	}
	var errs []error
	if c.grpc != nil {
		errs = append(errs, c.grpc.close(ctx))
	}
	for _, srv := range c.servers {
		if err := srv.Shutdown(ctx); err != nil {
			errs = append(errs, srv.Close())
		}
	}
	for _, d := range c.done {
		<-d
	}
	c.tr.CloseIdleConnections()
	errs = append(errs, c.async.close())
	return errors.Join(errs...)
}

// CommittingService names the service that executes writes' side effects,
// by the one rule of both modes (model.Committer).
func CommittingService(sc *topology.Scenario) string {
	if i := sc.Committer(); i >= 0 {
		return sc.Services[i].Name
	}
	return ""
}
