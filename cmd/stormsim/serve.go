package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/stormsim/stormsim/load/driver"
	"github.com/stormsim/stormsim/load/serve"
	"github.com/stormsim/stormsim/load/transport"
)

func init() {
	register(&command{
		name:    "serve",
		summary: "run a scenario's services as real HTTP or gRPC servers on loopback",
		usage:   "SCENARIO [--listen 127.0.0.1:0] [--protocol http|grpc]",
		example: `  stormsim serve experiments/retry-storm.yaml
  stormsim serve retry-storm --listen 127.0.0.1:9000   # services on 9000, 9001, ...
  curl http://127.0.0.1:9000/stats
  stormsim serve retry-storm --protocol grpc --listen 127.0.0.1:9000   # grpc://127.0.0.1:9000/stormsim.v1.Emulated/Call`,
		new: func() subcommand { return new(serveCommand) },
	})
}

// serveCommand is `stormsim serve`: its flags, and the run that uses them.
type serveCommand struct {
	sf     scenarioFlags
	listen string
	remote bool
	traces string
	live   liveFlags
	proto  string
	tls    tlsFlags
	nats   natsFlag
}

// flags declares the command's flags on fs.
func (c *serveCommand) flags(fs *pflag.FlagSet) {
	fs.StringVar(&c.listen, "listen", serve.DefaultListen, "first service's `host:port` (the next services take the next ports; port 0: any free port)")
	fs.BoolVar(&c.remote, "allow-remote", false, "allow a listen address off the loopback interface")
	fs.StringVar(&c.proto, "protocol", serve.ProtocolHTTP, "what the services speak: http, or grpc (any unary method; reflection describes "+transport.GRPCMethod+"; /stats and /metrics still answer HTTP/1 on the same port)")
	fs.StringArrayVar(&c.sf.sets, "set", nil, "override a scenario value: `path=value` (repeatable)")
	fs.Uint64Var(&c.sf.seed, "seed", 0, "random seed (default: the scenario's)")
	fs.StringVar(&c.traces, "traces", "", "write OpenTelemetry spans (OTLP JSON lines) to `FILE` when stopped: one per attempt, at caller and callee")
	c.live.declare(fs, false, false)
	c.tls.serveFlags(fs)
	c.nats.declare(fs)
}

// run runs the command with the arguments left after the flags.
func (c *serveCommand) run(ctx context.Context, args []string, w io.Writer) (err error) {
	if len(args) != 1 {
		return &exitError{exitUsage, fmt.Errorf("want one scenario, got %d arguments", len(args))}
	}
	if c.proto != serve.ProtocolHTTP && c.proto != serve.ProtocolGRPC {
		return &exitError{exitUsage, fmt.Errorf("--protocol: want http or grpc, got %q", c.proto)}
	}
	sc, err := loadScenario(args[0], c.sf.overrides())
	if err != nil {
		return err
	}
	// serve runs the callee machine for real; what only the simulator
	// runs is refused at its line, by the rule k8s render uses too.
	if probs := sc.SimulatorOnly(); len(probs) > 0 {
		return probs
	}
	if err := c.nats.check(c.remote); err != nil {
		return err
	}
	if c.remote {
		if err := driver.CheckLoopback(c.listen); err != nil {
			fmt.Fprintf(os.Stderr, "stormsim serve: --allow-remote: %d services of %s will accept connections on %s\n", len(sc.Services), sc.Name, c.listen)
		}
	}
	lv, err := c.live.start(ctx, "serve "+sc.Name, c.remote)
	if err != nil {
		return err
	}
	defer lv.close()
	tr, err := openTracing(c.traces)
	if err != nil {
		return err
	}
	cl, err := serve.StartCluster(sc, serve.ClusterOptions{Listen: c.listen, AllowRemote: c.remote,
		// A server that runs indefinitely keeps a bounded ledger.
		LedgerWindow: serve.DefaultLedgerWindow, Tracing: tr, Protocol: c.proto, TLS: c.tls.on, NATS: c.nats.url})
	if err != nil {
		return errors.Join(err, closeTracing(tr))
	}
	if err := c.tls.writeCert(cl.CertPEM); err != nil {
		return errors.Join(err, cl.Close(context.Background()), closeTracing(tr))
	}
	defer func() { err = errors.Join(err, closeTracing(tr)) }()
	if onRow := lv.onRow(ctx, sc.Interval); onRow != nil {
		defer cl.Watch(sc.Interval, onRow)()
	}
	fmt.Fprintf(w, "serving %s (fault windows count from now); Ctrl-C stops\n", sc.Name)
	for _, s := range cl.Services {
		name, u := s.Name(), cl.URLs[s.Name()]
		if urls := cl.ReplicaURLs[name]; len(urls) > 1 {
			name, u = fmt.Sprintf("%s#%d", name, s.Replica()), urls[s.Replica()]
		}
		if c.proto == serve.ProtocolGRPC {
			// The port answers HTTP/1 too: stats and metrics are there.
			if addr, _, err := transport.ParseGRPCTarget(u); err == nil {
				fmt.Fprintf(w, "  %-16s %s   (stats: http://%s/stats, metrics: http://%s/metrics)\n", name, u, addr, addr)
				continue
			}
		}
		fmt.Fprintf(w, "  %-16s %s   (stats: %s, metrics: %s)\n", name, u, siblingURL(u, "/stats"), siblingURL(u, "/metrics"))
	}
	if u, embedded := cl.NATS(); u != "" {
		where := "external"
		if embedded {
			where = "embedded"
		}
		fmt.Fprintf(w, "  topics on NATS JetStream %s (%s); each consumer's counts under consumer in its /stats\n", u, where)
	}
	<-ctx.Done()
	cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := cl.Close(cctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// siblingURL is a service URL with its path replaced by path.
func siblingURL(service, path string) string {
	u, err := url.Parse(service)
	if err != nil {
		return service
	}
	u.Path = path
	return u.String()
}
