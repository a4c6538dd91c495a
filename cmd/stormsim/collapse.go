package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/stormsim/stormsim/collapse"
)

func init() {
	register(&command{
		name:    "collapse",
		summary: "estimate the probability of reaching a level (a queue, a flood of attempts) within a horizon",
		usage:   "SCENARIO --level EXPR --within T [--mean-time] [--precision P] [--method splitting|ctmc] [--horizon H] [flags]",
		example: `  stormsim collapse queue.yaml --level 'system(s)>=28' --within 1m --precision 0.5
  stormsim collapse queue.yaml --level 'queue(s)>=45' --within 1m --method ctmc --mean-time
  stormsim collapse metastable-retry-storm --set 'faults=[]' --set workload.rate=700 --level 'system(db)>=500' --within 24h --horizon 10s`,
		new: func() subcommand { return new(collapseCommand) },
	})
}

// collapseCommand is `stormsim collapse`: its flags, and the run that uses them.
type collapseCommand struct {
	sf        scenarioFlags
	level     string
	within    time.Duration
	meanTime  bool
	precision float64
	effort    int
	budget    uint64
	method    string
	horizon   time.Duration
	format    string
}

// flags declares the command's flags on fs.
func (c *collapseCommand) flags(fs *pflag.FlagSet) {
	fs.StringArrayVar(&c.sf.sets, "set", nil, "override a scenario value: `path=value` (repeatable)")
	fs.Uint64Var(&c.sf.seed, "seed", 0, "random seed (default: the scenario's)")
	c.sf.declareLimits(fs)
	fs.StringVar(&c.level, "level", "", "the level: system(S), queue(S), attempts_rate(S) or inflight, then >=N, e.g. `'system(db)>=500'`")
	fs.DurationVar(&c.within, "within", 0, "the horizon from the scenario's start, e.g. 1m or 24h (the arrival window is stretched to it)")
	fs.BoolVar(&c.meanTime, "mean-time", false, "also report the mean time to reach the level (mean_time_s)")
	fs.Float64Var(&c.precision, "precision", collapse.DefaultPrecision, "splitting: target relative half-width of the 95% interval")
	fs.IntVar(&c.effort, "effort", collapse.DefaultEffort, "splitting: runs per level in each batch (cheap levels get up to 5x as many)")
	fs.Uint64Var(&c.budget, "budget", collapse.DefaultMaxEvents, "splitting: most simulated events to spend, replays included")
	fs.DurationVar(&c.horizon, "horizon", 0, "splitting: simulate only this long and extrapolate to --within at the rate of the horizon's second half (default: all of --within)")
	fs.StringVar(&c.method, "method", "splitting", "splitting (simulation), or ctmc (the scenario's Markov chain, where it has one)")
	fs.StringVar(&c.format, "format", "text", "output format: text or json")
}

// run runs the command with the arguments left after the flags.
func (c *collapseCommand) run(ctx context.Context, args []string, w io.Writer) error {
	if len(args) != 1 {
		return &exitError{exitUsage, fmt.Errorf("want one scenario, got %d arguments", len(args))}
	}
	if c.level == "" || c.within <= 0 {
		return &exitError{exitUsage, errors.New("--level and a positive --within are required")}
	}
	lv, err := collapse.ParseLevel(c.level)
	if err != nil {
		return &exitError{exitUsage, fmt.Errorf("--level: %w", err)}
	}
	if c.format != "text" && c.format != "json" {
		return &exitError{exitUsage, fmt.Errorf("--format: want text or json, got %q", c.format)}
	}
	if c.method != "splitting" && c.method != "ctmc" {
		return &exitError{exitUsage, fmt.Errorf("--method: want splitting or ctmc, got %q", c.method)}
	}
	sc, err := loadScenario(args[0], c.sf.overrides())
	if err != nil {
		return err
	}
	opt := collapse.Options{Level: lv, Within: c.within, Precision: c.precision, Effort: c.effort,
		MaxEvents: c.budget, MeanTime: c.meanTime, Horizon: c.horizon}
	var est *collapse.Estimate
	if c.method == "ctmc" {
		est, err = collapse.Solve(sc, opt)
	} else {
		est, err = collapse.Split(ctx, sc, opt)
	}
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%w: %v", errInterrupted, err)
		}
		return err
	}
	if c.format == "text" {
		return est.WriteText(w)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(est)
}
