package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/tune"
)

func init() {
	register(&command{
		name:    "tune",
		summary: "recommend timeouts, retries, hedging and a retry budget from measured latency",
		usage:   "--deadline D --hops NAME=SOURCE,... [flags]",
		example: `  stormsim tune --deadline 2s --hops gateway=gw.txt,orders=orders.csv:latency_ms,db=vegeta:db.json
  stormsim tune --deadline 1s --hops edge=results:out/load,store=results:out/load --format json
  stormsim tune --deadline 2s --hops gateway=gw.txt,orders=o.txt,db=db.txt --verify chain.yaml --out out/tune

Against a real server (measure, tune, verify):
  stormsim load --target http://127.0.0.1:8080/orders --name orders --out out/orders --traces out/orders.jsonl
  stormsim tune --deadline 1s --hops orders=results:out/orders      (or orders=traces:out/orders.jsonl)
  stormsim tune --deadline 1s --hops orders=results:out/orders --verify orders.yaml

Sources (top-down, one per hop): FILE (numbers in --unit, one per line),
FILE:COLUMN (a CSV column), vegeta:FILE (vegeta encode --to json),
results:DIR[#SERVICE] (a stormsim results directory; a load --target run's
service is its --name, else its host:port), scenario:FILE[#SERVICE]
(the unloaded latency a scenario's service times imply), traces:FILE[#SERVICE]
(successful server spans in OTLP JSON or Jaeger JSON traces, else the client
spans naming SERVICE as peer.service, as load --target --traces writes them).`,
		new: func() subcommand { return new(tuneCommand) },
	})
}

// tuneCommand is `stormsim tune`: its flags, and the run that uses them.
type tuneCommand struct {
	hops        []string
	deadline    time.Duration
	unit        string
	pct         string
	hedgePct    string
	maxAmp      float64
	response    time.Duration
	maxAttempts int
	samples     int
	seed        uint64
	format      string
	out         string
	verify      string
	sets        []string
	phases      phaseTuneFlags
}

// flags declares the command's flags on fs.
func (c *tuneCommand) flags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&c.hops, "hops", nil, "hops top-down as `NAME=SOURCE`, comma-separated or repeated")
	fs.DurationVar(&c.deadline, "deadline", 0, "end-to-end deadline of a request at the top (required)")
	fs.StringVar(&c.unit, "unit", "ms", "unit of plain numbers: ns, us, ms or s")
	fs.StringVar(&c.pct, "percentile", "p99.9", "attempt timeout at this latency percentile")
	fs.StringVar(&c.hedgePct, "hedge-percentile", "p95", "hedge delay at this latency percentile")
	fs.Float64Var(&c.maxAmp, "max-amplification", 1.2, "worst-case load amplification the retry budget allows")
	fs.DurationVar(&c.response, "response", 0, "time each hop reserves for its response to travel back")
	fs.IntVar(&c.maxAttempts, "max-attempts", 3, "most attempts recommended at the retry owner")
	fs.IntVar(&c.samples, "samples", 100000, "samples drawn from a scenario: source")
	fs.Uint64Var(&c.seed, "seed", 1, "seed of the samples drawn from a scenario: source")
	fs.StringVar(&c.format, "format", "text", "output format: text or json")
	fs.StringVar(&c.out, "out", "", "write plan.txt, plan.json and a latency CDF plot per hop to `DIR`")
	fs.StringVar(&c.verify, "verify", "", "simulate `SCENARIO` as written and with the plan applied, side by side")
	fs.StringArrayVar(&c.sets, "set", nil, "override a value of the --verify scenario: `path=value` (repeatable)")
	c.phases.declare(fs)
}

// run runs the command with the arguments left after the flags.
func (c *tuneCommand) run(ctx context.Context, args []string, w io.Writer) error {
	if len(args) != 0 {
		return &exitError{exitUsage, fmt.Errorf("unexpected arguments %q (hops go in --hops)", args)}
	}
	if c.phases.dir != "" {
		return c.phases.run(w, c.format)
	}
	if len(c.hops) == 0 {
		return &exitError{exitUsage, fmt.Errorf("--hops: give at least one NAME=SOURCE")}
	}
	if c.deadline <= 0 {
		return &exitError{exitUsage, fmt.Errorf("--deadline: required and > 0")}
	}
	if c.format != "text" && c.format != "json" {
		return &exitError{exitUsage, fmt.Errorf("--format: want text or json, got %q", c.format)}
	}
	lo, opt, err := c.options()
	if err != nil {
		return &exitError{exitUsage, err}
	}
	hs, err := tune.ParseHops(c.hops, lo)
	if err != nil {
		return err
	}
	plan, err := tune.Recommend(hs, opt)
	if err != nil {
		return err
	}
	var cmp *tune.Comparison
	if c.verify != "" {
		sc, err := loadScenario(c.verify, c.sets)
		if err != nil {
			return err
		}
		cmp, err = tune.Verify(ctx, sc, plan, simRunner())
		if err != nil {
			return err
		}
	}
	return c.emit(w, plan, cmp)
}

// options returns how to read the hops' samples and what to recommend,
// from the flags.
func (c *tuneCommand) options() (tune.LoadOptions, tune.Options, error) {
	u, err := tune.ParseUnit(c.unit)
	if err != nil {
		return tune.LoadOptions{}, tune.Options{}, fmt.Errorf("--unit: %w", err)
	}
	q, err := parsePercentile(c.pct)
	if err != nil {
		return tune.LoadOptions{}, tune.Options{}, fmt.Errorf("--percentile: %w", err)
	}
	hq, err := parsePercentile(c.hedgePct)
	if err != nil {
		return tune.LoadOptions{}, tune.Options{}, fmt.Errorf("--hedge-percentile: %w", err)
	}
	return tune.LoadOptions{Unit: u, ScenarioSamples: c.samples, Seed: c.seed}, tune.Options{
		Deadline: c.deadline, Percentile: q, HedgePercentile: hq,
		MaxAmplification: c.maxAmp, Response: c.response, MaxAttempts: c.maxAttempts,
	}, nil
}

// emit writes the plan (and the verification, when run) under --out, then
// prints them as text or JSON.
func (c *tuneCommand) emit(w io.Writer, plan *tune.Plan, cmp *tune.Comparison) error {
	if c.out != "" {
		if _, err := plan.Save(c.out); err != nil {
			return err
		}
		if cmp != nil {
			if err := metrics.WriteFileAtomic(filepath.Join(c.out, "verify.txt"), cmp.WriteText); err != nil {
				return err
			}
		}
	}
	if c.format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Plan   *tune.Plan       `json:"plan"`
			Verify *tune.Comparison `json:"verify,omitempty"`
		}{plan, cmp})
	}
	if err := plan.WriteText(w); err != nil {
		return err
	}
	if cmp != nil {
		fmt.Fprintln(w)
		if err := cmp.WriteText(w); err != nil {
			return err
		}
	}
	if c.out != "" {
		fmt.Fprintf(w, "\nwrote %s\n", c.out)
	}
	return nil
}

// parsePercentile reads "p99.9", "99.9" or "99.9%" as the quantile 0.999.
func parsePercentile(s string) (float64, error) {
	t := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(s), "p"), "%")
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || !(v > 0 && v < 100) {
		return 0, fmt.Errorf("want a percentile such as p99.9 (between 0 and 100), got %q", s)
	}
	return v / 100, nil
}
