package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/stormsim/stormsim/analysis"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/plots"
	"github.com/stormsim/stormsim/sim"
)

func init() {
	register(&command{
		name:    "run",
		summary: "simulate a scenario and print its summary",
		usage:   "SCENARIO|EXPERIMENT [flags]",
		example: `  stormsim run experiments/retry-storm.yaml
  stormsim run five-layer-chain --format json
  stormsim run retry-storm --set workload.rate=600 --seed 7 --out out/storm`,
		new: func() subcommand { return new(runCommand) },
	})
}

// runCommand is `stormsim run`: its flags, and the run that uses them.
type runCommand struct {
	sf       scenarioFlags
	format   string
	out      string
	progress bool
	slo      sloFlag
	live     liveFlags
}

// flags declares the command's flags on fs.
func (c *runCommand) flags(fs *pflag.FlagSet) {
	fs.StringArrayVar(&c.sf.sets, "set", nil, "override a scenario value: `path=value` (repeatable)")
	fs.Uint64Var(&c.sf.seed, "seed", 0, "random seed (default: the scenario's)")
	fs.StringVar(&c.sf.duration, "duration", "", "arrival window, e.g. 30s (default: the scenario's)")
	c.sf.declareLimits(fs)
	fs.StringVar(&c.format, "format", "text", "output format: text or json")
	fs.StringVar(&c.out, "out", "", "write summary.json, timeseries.csv, histograms and plots to `DIR`")
	fs.BoolVar(&c.progress, "progress", false, "show a progress bar even when stderr is not a terminal")
	c.slo.declare(fs)
	c.live.declare(fs, true, true)
}

// run runs the command with the arguments left after the flags.
func (c *runCommand) run(ctx context.Context, args []string, w io.Writer) error {
	if len(args) != 1 {
		return &exitError{exitUsage, fmt.Errorf("want one scenario, got %d arguments", len(args))}
	}
	if c.format != "text" && c.format != "json" {
		return &exitError{exitUsage, fmt.Errorf("--format: want text or json, got %q", c.format)}
	}
	sc, err := loadScenario(args[0], c.sf.overrides())
	if err != nil {
		return err
	}
	if err := c.slo.parse(sc); err != nil {
		return err
	}
	lv, err := c.live.start(ctx, sc.Name, false)
	if err != nil {
		return err
	}
	defer lv.close()
	bar := newSimProgress(os.Stderr, c.progress, sc.Name)
	res, err := sim.Run(ctx, sc, sim.Options{Version: version, Progress: bar.update, OnRow: lv.onRow(ctx, sc.Interval)})
	bar.finish()
	lv.srv.End()
	if err != nil {
		return err
	}
	res.Summary.Verdict = analysis.Assess(sc, res)
	if err := c.slo.judge(res); err != nil {
		return err
	}
	return sloOutcome(emitResult(w, res, c.format, c.out), res.Summary.SLO)
}

// emitResult prints a result and writes its files; it maps a partial run to
// the matching exit status after everything has been written.
func emitResult(w io.Writer, res *metrics.Result, format, out string) error {
	if out != "" {
		if err := os.MkdirAll(out, 0o755); err != nil {
			return err
		}
		if err := metrics.Save(out, res); err != nil {
			return err
		}
		files, err := plots.WriteAll(out, res)
		if err != nil {
			return fmt.Errorf("plots: %w", err)
		}
		if err := plots.WriteReport(out, res, files); err != nil {
			return fmt.Errorf("report: %w", err)
		}
	}
	switch format {
	case "json":
		if err := metrics.WriteJSON(w, &res.Summary); err != nil {
			return err
		}
	default:
		metrics.FormatText(w, &res.Summary)
		if out != "" {
			fmt.Fprintf(w, "\nwrote %s\n", filepath.Join(out, "report.html"))
		}
	}
	switch res.Summary.Status {
	case metrics.StatusInterrupted:
		return fmt.Errorf("%w: partial results written", errInterrupted)
	case metrics.StatusDiverged:
		d := res.Summary.Diverged
		msg := "the simulated system diverged"
		if d != nil {
			msg = fmt.Sprintf("the simulated system diverged at %.1fs: %s", d.AtS, d.Reason)
			if d.Service != "" {
				msg += fmt.Sprintf(" (largest queue: %s, %d waiting)", d.Service, d.Queue)
			}
		}
		return &exitError{exitDiverged, fmt.Errorf("%s (results up to then written)", msg)}
	}
	return nil
}
