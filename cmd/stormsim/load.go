package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/stormsim/stormsim/shard"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/stormsim/stormsim/load"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/topology"
)

func init() {
	register(&command{
		name:    "load",
		summary: "drive a real HTTP target open-loop through a client call policy",
		usage:   "--target URL [flags] | SCENARIO [flags]",
		example: `  stormsim load --target http://127.0.0.1:8080/ --rate 500 --duration 30s
  stormsim load --target http://127.0.0.1:8080/orders --method POST --body '{"n":1}' \
      --header 'Content-Type: application/json' --policy client.yaml --out out/load
  stormsim load experiments/retry-storm.yaml --format json
  stormsim load --target http://127.0.0.1:8080/ --rate 4000 --shard 1/4 --start-at 2026-12-01T10:00:00Z --out shard-1`,
		setup: func(fs *pflag.FlagSet) func(context.Context, []string, io.Writer) error {
			var sf scenarioFlags
			target := fs.String("target", "", "URL to drive (loopback only unless --allow-remote)")
			rate := fs.Float64("rate", 50, "logical requests per second")
			arrival := fs.String("arrival", "constant", "arrival process: constant or poisson")
			duration := fs.Duration("duration", 10*time.Second, "how long to schedule requests")
			maxReq := fs.Uint64("max-requests", 0, "stop after this many logical requests (0: no limit)")
			method := fs.String("method", "GET", "HTTP method")
			headers := fs.StringArray("header", nil, "extra header `'Name: value'` (repeatable)")
			body := fs.String("body", "", "request body; @FILE reads it from a file")
			policy := fs.String("policy", "", "read the client call policy from `FILE` (YAML: timeout, retry, budget, breaker, hedge, throttle, honor_pushback, propagate_deadline)")
			deadline := fs.Duration("deadline", 0, "end-to-end deadline of each logical request (0: none)")
			propagate := fs.Bool("propagate-deadline", true, "send the remaining deadline in X-Stormsim-Deadline-Ms (with --deadline)")
			writes := fs.Float64("write-fraction", 0, "share of logical requests that are non-idempotent writes")
			keys := fs.Bool("idempotency-keys", false, "send an Idempotency-Key with every write")
			warmup := fs.Duration("warmup", 0, "requests due before this are sent but not counted")
			workers := fs.Int("workers", load.DefaultWorkers, "sender goroutines: the bound on logical requests in flight")
			conns := fs.Int("connections", 0, "TCP connections to the target (default: --workers)")
			maxLate := fs.Duration("max-lateness", 0, "a request not sent within this of its due time is counted unsent (default: the deadline, else 5s)")
			grace := fs.Duration("grace", load.DefaultGrace, "after the schedule (or Ctrl-C), how long requests in flight may still take beyond what their deadline or timeouts allow")
			fs.StringArrayVar(&sf.sets, "set", nil, "SCENARIO mode: override a scenario value `path=value` (repeatable)")
			fs.Uint64Var(&sf.seed, "seed", 0, "random seed (default: 1, or the scenario's)")
			format := fs.String("format", "text", "output format: text or json")
			out := fs.String("out", "", "write summary.json, timeseries.csv, histograms and plots to `DIR`")
			progress := fs.Bool("progress", false, "show the live progress line even when stderr is not a terminal")
			remote := fs.Bool("allow-remote", false, "allow a target (or listen address) off the loopback interface")
			var sh shard.Flags
			sh.Register(fs)
			sh.RegisterStartAt(fs)
			return func(ctx context.Context, args []string, w io.Writer) error {
				if *format != "text" && *format != "json" {
					return &exitError{exitUsage, fmt.Errorf("--format: want text or json, got %q", *format)}
				}
				bar := newLoadProgress(os.Stderr, *progress)
				if len(args) == 1 && *target == "" {
					sc, err := loadScenario(args[0], sf.overrides())
					if err != nil {
						return err
					}
					bar.start("load", sc.Duration)
					res, err := load.RunScenario(ctx, sc, load.ScenarioOptions{
						Workers: *workers, Connections: *conns, AllowRemote: *remote, Version: version, Progress: bar.update, Grace: *grace,
					})
					bar.finish()
					if err != nil {
						return err
					}
					return emitLoadResult(w, res, *format, *out)
				}
				if len(args) != 0 || *target == "" {
					return &exitError{exitUsage, errors.New("want --target URL or one SCENARIO")}
				}
				spec, err := sh.Spec(os.LookupEnv)
				if err != nil {
					return &exitError{exitUsage, err}
				}
				opt := load.Options{
					Target: *target, Method: *method, Duration: *duration, MaxRequests: *maxReq, Deadline: *deadline,
					WriteFraction: *writes, IdempotencyKeys: *keys, Warmup: *warmup, Workers: *workers,
					Connections: *conns, MaxLateness: *maxLate, Grace: *grace, Seed: sf.seed, Version: version, AllowRemote: *remote,
					Scenario: "load " + *target,
				}
				if opt.Seed == 0 {
					opt.Seed = 1
				}
				if opt.Header, err = parseHeaders(*headers); err != nil {
					return &exitError{exitUsage, err}
				}
				if opt.Body, err = readBody(*body); err != nil {
					return err
				}
				if *policy != "" {
					if opt.Policy, err = readPolicy(*policy); err != nil {
						return err
					}
				}
				if *propagate && *deadline > 0 {
					opt.Policy.PropagateDeadline = true
				}
				if *rate <= 0 {
					return &exitError{exitUsage, fmt.Errorf("--rate: must be > 0, got %v", *rate)}
				}
				switch *arrival {
				case "constant":
					opt.Pacer = load.ConstantPacer{Rate: *rate, Duration: *duration}
				case "poisson":
					if opt.Pacer, err = load.NewPoissonPacer(*rate, nil, *duration, rand.New(rand.NewPCG(opt.Seed, 1))); err != nil {
						return err
					}
				default:
					return &exitError{exitUsage, fmt.Errorf("--arrival: want constant or poisson, got %q", *arrival)}
				}
				if *remote {
					if u, err := url.Parse(*target); err == nil && load.CheckLoopback(u.Host) != nil {
						fmt.Fprintf(os.Stderr, "stormsim load: --allow-remote: will send %s %s at %g req/s for %v (%d senders, at most %d connections)\n",
							opt.Method, *target, *rate, *duration, opt.Workers, max(opt.Connections, opt.Workers))
					}
				}
				// The shards keep the one scenario name: merge joins parts of one run.
				opt.Shard = spec
				// Shards share a start time so their schedules interleave
				// into the requested one instead of drifting apart.
				if !sh.StartAt.IsZero() {
					if _, err := sh.StartAt.Delay(time.Now(), shard.DefaultMaxLate); err != nil {
						return &exitError{exitUsage, err}
					}
					opt.Epoch = sh.StartAt.Epoch(time.Now())
				}
				bar.start("load", *duration)
				opt.Progress = bar.update
				res, err := load.Run(ctx, opt)
				bar.finish()
				if err != nil {
					return err
				}
				return emitLoadResult(w, res, *format, *out)
			}
		},
	})
}

// emitLoadResult is emitResult plus, in text, the driver's own account:
// the schedule it kept and how attempts failed at the transport level.
func emitLoadResult(w io.Writer, res *metrics.Result, format, out string) error {
	err := emitResult(w, res, format, out)
	if l := res.Summary.Load; format == "text" && l != nil {
		fmt.Fprintf(w, "\nload       target %.1f req/s, offered %.1f req/s; late %d (>%gms), unsent %d; at most %d in flight (%d senders, %d connections)\n",
			l.TargetRPS, l.OfferedRPS, l.Late, l.LateThresholdMs, l.Unsent, l.MaxInFlight, l.Workers, l.Connections)
		fmt.Fprintf(w, "attempts   %d sent; no answer: %d connect failures, %d timeouts, %d resets, %d canceled, %d other\n",
			l.Attempts, l.ConnectFailures, l.Timeouts, l.Resets, l.Canceled, l.OtherErrors)
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

// readBody returns the body flag's bytes, reading @FILE.
func readBody(s string) ([]byte, error) {
	if f, ok := strings.CutPrefix(s, "@"); ok {
		b, err := os.ReadFile(f)
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
	data, err := os.ReadFile(path)
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
	last  load.Progress
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
	return fmt.Sprintf("%6.0f/s ok %5.1f%% amp %.2f p99 %v", p.Rate, ok, amp, p.P99.Round(time.Millisecond))
}

// update is a load.Options.Progress callback.
func (lp *loadProgress) update(p load.Progress) {
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
