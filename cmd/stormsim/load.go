package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/stormsim/stormsim/shard"

	"github.com/spf13/pflag"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/stormsim/stormsim/analysis"
	"github.com/stormsim/stormsim/inputfile"
	"github.com/stormsim/stormsim/load/driver"
	"github.com/stormsim/stormsim/load/serve"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/topology"
)

func init() {
	register(&command{
		name:    "load",
		summary: "drive a real HTTP or gRPC target open-loop through a client call policy",
		usage:   "--target URL [flags] | SCENARIO [flags]",
		example: `  stormsim load --target http://127.0.0.1:8080/ --rate 500 --duration 30s
  stormsim load --target http://127.0.0.1:8080/orders --method POST --body '{"n":1}' \
      --header 'Content-Type: application/json' --policy client.yaml --out out/load
  stormsim load --target http://127.0.0.1:8081/orders --method POST --rate 200/s -H 'Content-Type: application/json' \
      --body '{"sku":"sku-42","qty":{n}}' --retries 2 --timeout 500ms --output results.json
  echo 'GET http://127.0.0.1:8080/' | stormsim load --rate 300/s --duration 30s
  stormsim load experiments/retry-storm.yaml --format json
  stormsim load experiments/retry-storm.yaml --protocol grpc
  stormsim load --target grpc://127.0.0.1:9000/pkg.Orders/Create --data '{"id": 1}' --protoset orders.pb
  stormsim load --target http://127.0.0.1:8080/ --rate 4000 --shard 1/4 --start-at 2026-12-01T10:00:00Z --out shard-1`,
		new: func() subcommand { return new(loadCommand) },
	})
}

// loadCommand is `stormsim load`: its flags, and the run that uses them.
type loadCommand struct {
	sf        scenarioFlags
	target    string
	name      string
	rate      rateValue
	arrival   string
	duration  time.Duration
	maxReq    uint64
	method    string
	headers   []string
	body      string
	policy    string
	deadline  time.Duration
	propagate bool
	writes    float64
	keys      bool
	warmup    time.Duration
	workers   int
	conns     int
	maxLate   time.Duration
	grace     time.Duration
	format    string
	out       string
	progress  bool
	remote    bool
	traces    string
	client    string
	tlsf      tlsFlags
	sh        shard.Flags
	slo       sloFlag
	live      liveFlags
	gf        grpcLoadFlags
	nats      natsFlag
	x         loadExtras
	// fs tells which flags were given: in SCENARIO mode they override
	// the scenario (scenarioLoadSets).
	fs *pflag.FlagSet
}

// flags declares the command's flags on fs.
func (c *loadCommand) flags(fs *pflag.FlagSet) {
	c.fs = fs
	fs.StringVar(&c.target, "target", "", "URL to drive (loopback only unless --allow-remote)")
	fs.StringVar(&c.name, "name", "", "--target mode: the target's service `NAME` in the results and traces, the name tune --hops NAME=results:DIR reads (default: its host:port)")
	c.rate = 50
	fs.Var(&c.rate, "rate", "logical requests per second: 300, 300/s, 1000/1m (SCENARIO: sets workload.rate)")
	fs.StringVar(&c.arrival, "arrival", "constant", "arrival process: constant or poisson (SCENARIO: sets workload.arrival)")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "how long to schedule requests (SCENARIO: sets duration)")
	fs.Uint64Var(&c.maxReq, "max-requests", 0, "stop after this many logical requests (0: no limit)")
	fs.StringVar(&c.method, "method", "GET", "HTTP method (--target only)")
	fs.StringArrayVarP(&c.headers, "header", "H", nil, "extra header `'Name: value'` (repeatable)")
	fs.StringVar(&c.body, "body", "", "request body; @FILE reads it from a file")
	fs.StringVar(&c.policy, "policy", "", "read the client call policy from `FILE` (YAML: timeout, retry, budget, breaker, hedge, throttle, honor_pushback, propagate_deadline)")
	fs.DurationVar(&c.deadline, "deadline", 0, "end-to-end deadline of each logical request (0: none)")
	fs.BoolVar(&c.propagate, "propagate-deadline", true, "send the remaining deadline in X-Stormsim-Deadline-Ms (with --deadline)")
	fs.Float64Var(&c.writes, "write-fraction", 0, "share of logical requests that are non-idempotent writes")
	fs.BoolVar(&c.keys, "idempotency-keys", false, "send an Idempotency-Key with every write")
	fs.DurationVar(&c.warmup, "warmup", 0, "requests due before this are sent but not counted")
	fs.IntVar(&c.workers, "workers", driver.DefaultWorkers, "sender goroutines: the bound on logical requests in flight")
	fs.IntVar(&c.conns, "connections", 0, "TCP connections to the target (default: --workers); for gRPC, the HTTP/2 connections calls are spread over (default 1)")
	fs.DurationVar(&c.maxLate, "max-lateness", 0, "a request not sent within this of its due time is counted unsent (default: the deadline, else 5s)")
	fs.DurationVar(&c.grace, "grace", driver.DefaultGrace, "after the schedule (or Ctrl-C), how long requests in flight may still take beyond what their deadline or timeouts allow")
	fs.StringArrayVar(&c.sf.sets, "set", nil, "SCENARIO mode: override a scenario value `path=value` (repeatable)")
	fs.Uint64Var(&c.sf.seed, "seed", 0, "random seed (default: 1, or the scenario's)")
	fs.StringVar(&c.format, "format", "text", "output format: text or json")
	fs.StringVar(&c.out, "out", "", "write summary.json, timeseries.csv, histograms and plots to `DIR`")
	fs.BoolVar(&c.progress, "progress", false, "show the live progress line even when stderr is not a terminal")
	fs.BoolVar(&c.remote, "allow-remote", false, "allow a target (or listen address) off the loopback interface")
	fs.StringVar(&c.traces, "traces", "", "write OpenTelemetry spans (OTLP JSON lines) to `FILE`: one per attempt, at caller and callee")
	fs.StringVar(&c.client, "http-client", "lean", "the driver's client: lean (its own HTTP/1.1 client for an http:// target, its own HTTP/2 gRPC client for a grpc:// one; fewest allocations) or net (net/http's, grpc-go's); https://, --traces and what the lean gRPC client does not cover (a service config, phase timeouts) always use net")
	c.tlsf.loadFlags(fs)
	c.slo.declare(fs)
	c.gf.declare(fs)
	c.nats.declare(fs)
	c.sh.Register(fs)
	c.sh.RegisterStartAt(fs)
	c.live.declare(fs, false, false)
	c.x.declare(fs)
}

// run runs the command with the arguments left after the flags.
func (c *loadCommand) run(ctx context.Context, args []string, w io.Writer) error {
	if c.format != "text" && c.format != "json" {
		return &exitError{exitUsage, fmt.Errorf("--format: want text or json, got %q", c.format)}
	}
	if c.client != "lean" && c.client != "net" {
		return &exitError{exitUsage, fmt.Errorf("--http-client: want lean or net, got %q", c.client)}
	}
	if err := c.x.applyWorkers(c.fs, &c.workers); err != nil {
		return &exitError{exitUsage, err}
	}
	if c.target == "-" || (c.target == "" && len(args) == 0 && stdinHasTargets()) {
		if err := c.readStdinTarget(); err != nil {
			return err
		}
	}
	bar := newLoadProgress(os.Stderr, c.progress)
	if len(args) == 1 && c.target == "" {
		return c.runScenario(ctx, args[0], bar, w)
	}
	if len(args) != 0 || c.target == "" {
		return &exitError{exitUsage, errors.New("want --target URL or one SCENARIO")}
	}
	if c.nats.url != "" {
		return &exitError{exitUsage, errors.New("--nats applies to a SCENARIO (its topics), not to --target")}
	}
	opt, err := c.options()
	if err != nil {
		return err
	}
	if err := c.gf.target(ctx, c.fs, &opt); err != nil {
		return err
	}
	// A target's one service is named by its URL: per-service terms have
	// nothing to name.
	if err := c.slo.parse(nil); err != nil {
		return err
	}
	if c.remote {
		if u, err := url.Parse(c.target); err == nil && driver.CheckLoopback(u.Host) != nil {
			fmt.Fprintf(os.Stderr, "stormsim load: --allow-remote: will send %s %s at %g req/s for %v (%d senders, at most %d connections)\n",
				opt.Method, c.target, c.rate, c.duration, opt.Workers, max(opt.Connections, opt.Workers))
		}
	}
	lv, err := c.live.start(ctx, "load "+c.target, c.remote)
	if err != nil {
		return err
	}
	defer lv.close()
	bar.start("load", c.duration)
	opt.Progress = bar.update
	if opt.Tracing, err = openTracing(c.traces); err != nil {
		return err
	}
	opt.OnRow = lv.onRow(ctx, opt.Interval)
	res, err := c.runTarget(ctx, opt)
	bar.finish()
	lv.srv.End()
	if err = errors.Join(err, closeTracing(opt.Tracing)); err != nil {
		return err
	}
	res.RunID = runIDFrom(ctx)
	// A target has no scenario: no trigger to recover from, but the
	// verdict still says how many requests were lost.
	res.Summary.Verdict = analysis.Assess(&topology.Scenario{Duration: c.duration, Warmup: c.warmup}, res)
	if err := c.slo.judge(res); err != nil {
		return err
	}
	return sloOutcome(emitLoadResult(w, res, c.format, c.out), res.Summary.SLO)
}

// runScenario drives the entry of a scenario's services, served by
// 'stormsim serve', with the scenario's workload and client policy.
func (c *loadCommand) runScenario(ctx context.Context, path string, bar *loadProgress, w io.Writer) error {
	sets, err := scenarioLoadSets(c.fs)
	if err != nil {
		return &exitError{exitUsage, err}
	}
	sc, err := loadScenario(path, append(c.sf.overrides(), sets...))
	if err != nil {
		return err
	}
	if err := c.nats.check(c.remote); err != nil {
		return err
	}
	if err := c.slo.parse(sc); err != nil {
		return err
	}
	spec, err := c.sh.Spec(os.LookupEnv)
	if err != nil {
		return &exitError{exitUsage, err}
	}
	var epoch time.Time
	if !c.sh.StartAt.IsZero() {
		if _, err := c.sh.StartAt.Delay(time.Now(), shard.DefaultMaxLate); err != nil {
			return &exitError{exitUsage, err}
		}
		epoch = c.sh.StartAt.Epoch(time.Now())
	}
	lv, err := c.live.start(ctx, "load "+sc.Name, c.remote)
	if err != nil {
		return err
	}
	defer lv.close()
	tr, err := openTracing(c.traces)
	if err != nil {
		return err
	}
	sopt := serve.ScenarioOptions{
		Workers: c.workers, Connections: c.conns, AllowRemote: c.remote, Version: version, Progress: bar.update, Grace: c.grace,
		MaxRequests: c.maxReq, Shard: spec, Epoch: epoch, Tracing: tr, NetHTTP: c.client == "net", TLS: c.tlsf.on, OnRow: lv.onRow(ctx, sc.Interval), NATS: c.nats.url,
	}
	if err := c.gf.scenario(sc, &sopt); err != nil {
		return errors.Join(err, closeTracing(tr))
	}
	bar.start("load", sc.Duration)
	res, err := serve.RunScenario(ctx, sc, sopt)
	bar.finish()
	lv.srv.End()
	if err = errors.Join(err, closeTracing(tr)); err != nil {
		return err
	}
	res.RunID = runIDFrom(ctx)
	res.Summary.Verdict = analysis.Assess(sc, res)
	if err := c.slo.judge(res); err != nil {
		return err
	}
	if err := emitLoadResult(w, res, c.format, c.out); err != nil {
		return err
	}
	if err := c.gf.compareNative(ctx, sc, res, w, c.format); err != nil {
		return err
	}
	return sloOutcome(nil, res.Summary.SLO)
}

// options returns the load run the flags describe against --target; a
// flag error is a usage error.
func (c *loadCommand) options() (driver.Options, error) {
	spec, err := c.sh.Spec(os.LookupEnv)
	if err != nil {
		return driver.Options{}, &exitError{exitUsage, err}
	}
	opt := driver.Options{
		Target: c.target, Method: c.method, Duration: c.duration, MaxRequests: c.maxReq, Deadline: c.deadline,
		IdempotencyKeys: c.keys, Warmup: c.warmup, Workers: c.workers,
		Connections: c.conns, MaxLateness: c.maxLate, Grace: c.grace, Seed: c.sf.seed, Version: version, AllowRemote: c.remote,
		Scenario: "load " + c.target, NetHTTP: c.client == "net", ServiceName: c.name,
	}
	if opt.Seed == 0 {
		opt.Seed = 1
	}
	if strings.ContainsAny(c.name, ",#= \t") || c.fs.Changed("name") && c.name == "" {
		return opt, &exitError{exitUsage, fmt.Errorf("--name: want a service name without spaces, ',', '#' or '=' (tune --hops NAME=results:DIR#NAME reads it), got %q", c.name)}
	}
	if opt.Client, err = c.tlsf.client(c.target, c.conns, c.workers); err != nil {
		return opt, err
	}
	if opt.Header, err = parseHeaders(c.headers); err != nil {
		return opt, &exitError{exitUsage, err}
	}
	if opt.Body, err = readBody(c.body); err != nil {
		return opt, err
	}
	if c.policy != "" {
		if opt.Policy, err = readPolicy(c.policy); err != nil {
			return opt, err
		}
	}
	if call, ok, err := c.x.quickPolicy(c.fs, c.policy); err != nil {
		return opt, &exitError{exitUsage, err}
	} else if ok {
		opt.Policy = call
	}
	if opt.Request, err = c.x.requestTemplate(c.fs, c.method); err != nil {
		return opt, &exitError{exitUsage, err}
	}
	if c.propagate && c.deadline > 0 {
		opt.Policy.PropagateDeadline = true
	}
	if c.rate <= 0 {
		return opt, &exitError{exitUsage, fmt.Errorf("--rate: must be > 0, got %v", c.rate)}
	}
	// The simulator's arrival process, from the run's seed: a scenario
	// with this workload offers the same requests at the same times.
	if opt.Arrivals, err = driver.TargetArrivals(topology.Arrival(c.arrival), float64(c.rate), c.writes, c.duration, opt.Seed); err != nil {
		return opt, &exitError{exitUsage, fmt.Errorf("--arrival/--rate/--write-fraction: %w", err)}
	}
	// The shards keep the one scenario name: merge joins parts of one run.
	opt.Shard = spec
	// Shards share a start time so their schedules interleave
	// into the requested one instead of drifting apart.
	if !c.sh.StartAt.IsZero() {
		if _, err := c.sh.StartAt.Delay(time.Now(), shard.DefaultMaxLate); err != nil {
			return opt, &exitError{exitUsage, err}
		}
		opt.Epoch = c.sh.StartAt.Epoch(time.Now())
	}
	return opt, nil
}

// scenarioFlagPaths maps the load flags that describe the workload onto
// the scenario paths they set in SCENARIO mode.
var scenarioFlagPaths = []struct{ flag, path string }{
	{"rate", "workload.rate"}, {"arrival", "workload.arrival"}, {"duration", "duration"},
	{"deadline", "workload.deadline"}, {"write-fraction", "workload.write_fraction"},
	{"idempotency-keys", "workload.idempotency_keys"}, {"warmup", "warmup"},
}

// targetOnlyFlags shape the requests sent to a --target; a scenario's
// services define their own, so in SCENARIO mode they are refused rather
// than silently ignored.
var targetOnlyFlags = []string{"method", "header", "body", "policy", "propagate-deadline", "max-lateness", "data", "data-file", "protoset", "grpc-service-config", "name"}

// scenarioLoadSets returns the scenario overrides the load flags given on
// the command line stand for in SCENARIO mode, or a usage error naming a
// flag that has no meaning there.
func scenarioLoadSets(fs *pflag.FlagSet) ([]string, error) {
	for _, name := range append(targetOnlyFlags[:len(targetOnlyFlags):len(targetOnlyFlags)], loadExtraFlags...) {
		if fs.Changed(name) {
			return nil, fmt.Errorf("--%s applies to --target only: a scenario's services and workload.client define the requests (use --set)", name)
		}
	}
	var sets []string
	for _, m := range scenarioFlagPaths {
		if fs.Changed(m.flag) {
			sets = append(sets, m.path+"="+fs.Lookup(m.flag).Value.String())
		}
	}
	return sets, nil
}

// emitLoadResult is emitResult plus, in text, the driver's own account:
// the schedule it kept and how attempts failed at the transport level.
func emitLoadResult(w io.Writer, res *metrics.Result, format, out string) error {
	err := emitResult(w, res, format, out)
	if l := res.Summary.Load; format == "text" && l != nil {
		fmt.Fprintf(w, "\nload       target %.1f req/s, offered %.1f req/s; late %d (>%gms), unsent %d; at most %d in flight (%d senders, %d connections)\n",
			l.TargetRPS, l.OfferedRPS, l.Late, l.LateThresholdMs, l.Unsent, l.MaxInFlight, l.Workers, l.Connections)
		fmt.Fprintf(w, "attempts   %d sent: %d answered, %d without an answer (%d connect failures, %d timeouts, %d resets, %d canceled, %d other)\n",
			l.Attempts, l.Answered, l.Attempts-l.Answered, l.ConnectFailures, l.Timeouts, l.Resets, l.Canceled, l.OtherErrors)
	}
	return err
}

// parseHeaders parses 'Name: value' strings.
func parseHeaders(hs []string) (http.Header, error) {
	h := http.Header{}
	for _, s := range hs {
		name, value, ok := strings.Cut(s, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" || strings.ContainsAny(name, " \t") {
			return nil, fmt.Errorf("--header %q: want 'Name: value'", s)
		}
		h.Add(name, strings.TrimSpace(value))
	}
	return h, nil
}

// maxBodyFile bounds --body @FILE: every request carries the whole body,
// and an emulated service accepts at most 1 MiB of it.
const maxBodyFile = 16 << 20

// readBody returns the body flag's bytes, reading @FILE.
func readBody(s string) ([]byte, error) {
	if f, ok := strings.CutPrefix(s, "@"); ok {
		b, err := inputfile.Read(f, maxBodyFile)
		if err != nil {
			return nil, fmt.Errorf("--body: %w", err)
		}
		return b, nil
	}
	return []byte(s), nil
}

// readPolicy reads a client call policy: the keys of a scenario's
// workload.client (unknown keys are errors, reported with their line).
func readPolicy(path string) (topology.Call, error) {
	data, err := inputfile.Read(path, topology.MaxFileSize)
	if err != nil {
		return topology.Call{}, fmt.Errorf("--policy: %w", err)
	}
	return topology.ParseCall(path, data)
}

// loadProgress is the live line of a load run: elapsed time, dispatched
// rate, success share, amplification and p99. It is a no-op unless stderr
// is a terminal or --progress is given.
type loadProgress struct {
	w     io.Writer
	force bool
	p     *mpb.Progress
	bar   *mpb.Bar
	last  driver.Progress
}

func newLoadProgress(w io.Writer, force bool) *loadProgress {
	return &loadProgress{w: w, force: force || isTerminal(w)}
}

// start shows the line for a run of d; the text must fit 80 columns,
// mpb's width when the output is not a terminal.
func (lp *loadProgress) start(name string, d time.Duration) {
	if !lp.force {
		return
	}
	lp.p = mpb.New(mpb.WithOutput(lp.w), mpb.WithWidth(80), mpb.WithRefreshRate(250*time.Millisecond), mpb.WithAutoRefresh())
	lp.bar = lp.p.AddBar(int64(d/time.Millisecond),
		mpb.PrependDecorators(decor.Name(name+" ", decor.WCSyncSpaceR), decor.Percentage(decor.WCSyncSpace)),
		mpb.AppendDecorators(decor.Any(func(decor.Statistics) string { return lp.line() })),
	)
}

func (lp *loadProgress) line() string {
	p := lp.last
	done := p.Succeeded + p.Failed + p.Unknown
	ok, amp := 0.0, 0.0
	if done > 0 {
		ok = 100 * float64(p.Succeeded) / float64(done)
		amp = float64(p.Attempts) / float64(done)
	}
	// Open loop: the schedule ends when its duration has elapsed.
	left := max(p.Duration-p.Elapsed, 0).Round(time.Second)
	return fmt.Sprintf("%6.0f/s ok %5.1f%% amp %.2f p99 %v ETA %v", p.Rate, ok, amp, p.P99.Round(time.Millisecond), left)
}

// update is a load.Options.Progress callback.
func (lp *loadProgress) update(p driver.Progress) {
	if lp.bar == nil {
		return
	}
	lp.last = p
	lp.bar.SetCurrent(int64(min(p.Elapsed, p.Duration) / time.Millisecond))
}

func (lp *loadProgress) finish() {
	if lp.bar == nil {
		return
	}
	lp.bar.SetTotal(-1, true)
	lp.p.Wait()
}
