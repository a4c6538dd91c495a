package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/stormsim/stormsim/faultproxy"
	"github.com/stormsim/stormsim/inputfile"
	"github.com/stormsim/stormsim/topology"
)

func init() {
	register(&command{
		name:    "proxy",
		summary: "put per-request faults (lost replies, resets, 503s, latency) in front of a real HTTP service",
		usage:   "--upstream URL [--listen 127.0.0.1:0] [--faults FILE] [--fault YAML]... [--log FILE]",
		example: `  stormsim proxy --upstream http://127.0.0.1:8081 --listen 127.0.0.1:9081 --fault '{drop_response: 0.3}' --log drops.jsonl
  stormsim proxy --upstream http://127.0.0.1:8081 --faults faults.yaml --log -
  curl -X POST -H 'Idempotency-Key: k1' http://127.0.0.1:9081/orders`,
		new: func() subcommand { return new(proxyCommand) },
	})
}

// proxyCommand is `stormsim proxy`: its flags, and the run that uses them.
type proxyCommand struct {
	upstream  string
	listen    string
	metrics   string
	faults    string
	inline    []string
	seed      uint64
	logPath   string
	keyHeader string
	maxHold   time.Duration
	remote    bool
	h2c       bool
}

func (c *proxyCommand) flags(fs *pflag.FlagSet) {
	fs.StringVar(&c.upstream, "upstream", "", "the service's base `URL` (http://HOST:PORT), required")
	fs.StringVar(&c.listen, "listen", "127.0.0.1:0", "the proxy's `host:port` (port 0: any free port)")
	fs.StringVar(&c.metrics, "metrics-listen", "", "serve the proxy's Prometheus /metrics at `host:port` (default: next to the proxy on a free port)")
	fs.StringVar(&c.faults, "faults", "", "read the seed and faults from `FILE` (YAML: seed, faults: [{at, for, method, path, drop_response, drop, reset_before, reset_after, error_rate, retry_after, blackhole, latency_add, latency_reply}])")
	fs.StringArrayVar(&c.inline, "fault", nil, "add one fault, a `YAML` mapping such as '{drop_response: 0.3, drop: hold}' (repeatable; after those of --faults)")
	fs.Uint64Var(&c.seed, "seed", 0, "seed of the per-request draws (default: the faults file's, else 1)")
	fs.StringVar(&c.logPath, "log", "", "write one JSON line per request to `FILE` (renamed into place when the proxy stops), or - for stdout")
	fs.StringVar(&c.keyHeader, "key-header", "Idempotency-Key", "the idempotency key `header` the records name")
	fs.DurationVar(&c.maxHold, "max-hold", faultproxy.DefaultMaxHold, "longest a blackhole or a held drop keeps a connection")
	fs.BoolVar(&c.h2c, "h2c", false, "also accept HTTP/2 without TLS (gRPC's prior knowledge), forwarded over h2c; its drops and resets reset the stream")
	fs.BoolVar(&c.remote, "allow-remote", false, "allow a listen address off the loopback interface")
}

// loadFaults reads --faults and the --fault mappings into one fault set.
func (c *proxyCommand) loadFaults() (*topology.ProxyFaults, error) {
	pf := &topology.ProxyFaults{Seed: topology.DefaultSeed}
	if c.faults != "" {
		data, err := inputfile.Read(c.faults, topology.MaxFileSize)
		if err != nil {
			return nil, &exitError{exitUsage, err}
		}
		if pf, err = topology.ParseProxyFaults(c.faults, data); err != nil {
			return nil, &exitError{exitUsage, err}
		}
	}
	for i, s := range c.inline {
		name := fmt.Sprintf("--fault #%d", i+1)
		one, err := topology.ParseProxyFaults(name, []byte("faults:\n- "+strings.ReplaceAll(s, "\n", "\n  ")+"\n"))
		if ps, ok := errors.AsType[topology.Problems](err); ok {
			for i := range ps {
				ps[i].Line = 0 // a line of the flag's wrapping, not of anything the user wrote
			}
			return nil, &exitError{exitUsage, ps}
		}
		if err != nil {
			return nil, &exitError{exitUsage, err}
		}
		if len(one.Faults) != 1 {
			return nil, fmt.Errorf("%s: want one fault mapping, got %q", name, s)
		}
		pf.Faults = append(pf.Faults, one.Faults[0])
	}
	if c.seed != 0 {
		pf.Seed = c.seed
	}
	return pf, nil
}

func (c *proxyCommand) run(ctx context.Context, args []string, w io.Writer) (err error) {
	if len(args) != 0 {
		return &exitError{exitUsage, fmt.Errorf("takes no arguments, got %q", args)}
	}
	if c.upstream == "" {
		return &exitError{exitUsage, errors.New("--upstream URL is required")}
	}
	if c.maxHold <= 0 {
		return &exitError{exitUsage, fmt.Errorf("--max-hold: want a duration > 0, got %v", c.maxHold)}
	}
	pf, err := c.loadFaults()
	if err != nil {
		return err
	}
	lg, err := openProxyLog(c.logPath, w)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, lg.close(w)) }()
	p, err := faultproxy.New(faultproxy.Config{Upstream: c.upstream, Faults: pf.Faults, Seed: pf.Seed, Log: lg.w, KeyHeader: c.keyHeader, MaxHold: c.maxHold, H2C: c.h2c})
	if err != nil {
		return &exitError{exitUsage, err}
	}
	srv, err := faultproxy.Listen(p, c.listen, c.remote)
	if err != nil {
		return &exitError{exitUsage, err}
	}
	maddr := c.metrics
	if maddr == "" {
		maddr = strings.TrimPrefix(srv.URL, "http://")
		maddr = maddr[:strings.LastIndexByte(maddr, ':')] + ":0"
	}
	murl, err := srv.ListenMetrics(maddr)
	if err != nil {
		return errors.Join(err, srv.Close(context.Background()))
	}
	banner := w
	if c.logPath == "-" {
		banner = os.Stderr // stdout carries the records
	}
	fmt.Fprintf(banner, "proxy %s -> %s, %d faults, seed %d; metrics at %s/metrics; Ctrl-C stops\n", srv.URL, c.upstream, len(pf.Faults), pf.Seed, murl)
	<-ctx.Done()
	cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Close(cctx)
}

// proxyLog is where the records go: stdout, or a temporary file renamed
// over the --log path when the proxy stops.
type proxyLog struct {
	w    io.Writer
	f    *os.File
	path string
}

func openProxyLog(path string, stdout io.Writer) (*proxyLog, error) {
	switch path {
	case "":
		return &proxyLog{}, nil
	case "-":
		return &proxyLog{w: stdout}, nil
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("--log: %w", err)
	}
	return &proxyLog{w: f, f: f, path: path}, nil
}

// close renames the log into place and says so.
func (l *proxyLog) close(w io.Writer) error {
	if l.f == nil {
		return nil
	}
	tmp := l.f.Name()
	err := errors.Join(l.f.Sync(), l.f.Close())
	if err == nil {
		err = os.Rename(tmp, l.path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("--log %s: %w", l.path, err)
	}
	fmt.Fprintf(os.Stderr, "stopped; the request log is in %s\n", l.path)
	return nil
}
