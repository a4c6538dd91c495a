package main

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/pflag"

	"github.com/stormsim/stormsim/analysis"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/plots"
)

func init() {
	register(&command{
		name:    "metastable",
		summary: "find the loads at which a scenario's trigger leaves it stuck in a retry storm",
		usage:   "SCENARIO [--param workload.rate --range lo:hi:step] [--variant ...] [--recovery-bound 30s] [flags]",
		example: `  stormsim metastable metastable-retry-storm
  stormsim metastable metastable-retry-storm --range 100:400:50 --out out/meta
  stormsim metastable metastable-retry-storm --range 100:400:50 --hysteresis --hold 10s --out out/meta`,
		new: func() subcommand { return new(metastableCommand) },
	})
}

// metastableCommand is `stormsim metastable`: its flags, and the run that uses them.
type metastableCommand struct {
	ef       experimentFlags
	param    string
	values   string
	rng      string
	cfg      analysis.DetectorConfig
	hyst     bool
	rampFlag string
	hold     time.Duration
	out      string
	progress bool
}

// flags declares the command's flags on fs.
func (c *metastableCommand) flags(fs *pflag.FlagSet) {
	fs.StringVar(&c.param, "param", "workload.rate", "the load `PATH` varied by --range/--values")
	fs.StringVar(&c.values, "values", "", "load levels, comma-separated (`a,b,c`)")
	fs.StringVar(&c.rng, "range", "", "load levels `from:to:step` (default: the scenario as written only)")
	fs.DurationVar(&c.cfg.RecoveryBound, "recovery-bound", analysis.DefaultRecoveryBound, "goodput must be back within this long after the trigger ends")
	fs.Float64Var(&c.cfg.Tolerance, "tolerance", analysis.DefaultTolerance, "a recovered interval has goodput ≥ (1−tolerance)×baseline")
	fs.Float64Var(&c.cfg.AmpTolerance, "amp-tolerance", analysis.DefaultAmpTolerance, "and amplification ≤ (1+amp-tolerance)×baseline")
	fs.IntVar(&c.cfg.Consecutive, "consecutive", analysis.DefaultConsecutive, "recovered intervals in a row needed to declare recovery")
	c.ef.declare(fs)
	fs.BoolVar(&c.hyst, "hysteresis", false, "also ramp the load up through the levels and back down, and plot goodput vs offered load on both paths")
	fs.StringVar(&c.rampFlag, "ramp", "", "hysteresis ramp levels of workload.rate, `from:to:step` (default: the --range/--values levels); go past capacity to trigger a storm")
	fs.DurationVar(&c.hold, "hold", 10*time.Second, "how long the hysteresis ramp holds each level")
	fs.StringVar(&c.out, "out", "", "write metastable.txt, metastable.csv and (with --hysteresis) hysteresis plots to `DIR`")
	fs.BoolVar(&c.progress, "progress", false, "show the progress bar even when stderr is not a terminal")
}

// run runs the command with the arguments left after the flags.
func (c *metastableCommand) run(ctx context.Context, args []string, w io.Writer) error {
	if len(args) != 1 {
		return &exitError{exitUsage, fmt.Errorf("want one scenario, got %d arguments", len(args))}
	}
	if c.values != "" && c.rng != "" {
		return &exitError{exitUsage, errors.New("give at most one of --values and --range")}
	}
	m := &analysis.Metastable{Detector: c.cfg}
	if c.values != "" || c.rng != "" {
		m.Param = c.param
		var err error
		if m.Values, err = levels(c.values, c.rng); err != nil {
			return &exitError{exitUsage, err}
		}
	}
	if err := c.cfg.Validate(); err != nil {
		return &exitError{exitUsage, err}
	}
	b, base, err := c.ef.builder(args[0])
	if err != nil {
		return err
	}
	if m.Variants, err = c.ef.variants(base, true); err != nil {
		return &exitError{exitUsage, err}
	}
	if _, err := analysis.TriggerOf(base); err != nil {
		return err
	}
	bar := newCountProgress(os.Stderr, c.progress, "metastable")
	rep, err := analysis.RunMetastable(ctx, simRunner(), b, m, analysis.SweepOptions{Workers: c.ef.workers, Progress: bar.update})
	bar.finish()
	if rep == nil {
		return err
	}
	if err := rep.WriteTable(w); err != nil {
		return err
	}
	if c.out != "" {
		if err := writeMetastable(c.out, rep); err != nil {
			return err
		}
	}
	if rep.Interrupted {
		return fmt.Errorf("%w: %d levels judged before the signal (%v)", errInterrupted, len(rep.Levels), err)
	}
	if err != nil {
		return err // levels whose runs failed, the others judged and written
	}
	if !c.hyst {
		return nil
	}
	return c.hysteresis(ctx, b, m.Variants, rep, w)
}

// hysteresis ramps the load up through the levels and back down under
// each variant, prints goodput on both paths and writes its plot and CSV.
func (c *metastableCommand) hysteresis(ctx context.Context, b analysis.Builder, variants []analysis.Variant, rep *analysis.MetastableReport, w io.Writer) error {
	ramp, err := c.ramp(rep)
	if err != nil {
		return err
	}
	hs, _, err := analysis.RunHysteresis(ctx, simRunner(), b, variants, ramp)
	if err != nil {
		return err
	}
	printHysteresis(w, hs)
	if c.out == "" {
		return nil
	}
	p, err := analysis.HysteresisPlot(hs)
	if err != nil {
		return err
	}
	if _, err := plots.Write(c.out, "hysteresis", p); err != nil {
		return err
	}
	return metrics.WriteFileAtomic(filepath.Join(c.out, "hysteresis.csv"), func(f io.Writer) error {
		return writeHysteresisCSV(f, hs)
	})
}

// ramp returns the hysteresis ramp: the --ramp levels, or else the
// metastability levels when they are rates.
func (c *metastableCommand) ramp(rep *analysis.MetastableReport) (analysis.Ramp, error) {
	var err error
	rampValues := rep.Values
	if c.rampFlag != "" {
		if rampValues, err = analysis.ParseRange(c.rampFlag); err != nil {
			return analysis.Ramp{}, &exitError{exitUsage, fmt.Errorf("--ramp: %w", err)}
		}
	} else if rep.Param != "workload.rate" {
		return analysis.Ramp{}, &exitError{exitUsage, errors.New("--hysteresis ramps workload.rate: give --ramp, or levels of --param workload.rate")}
	}
	levels := make([]float64, len(rampValues))
	for i, v := range rampValues {
		if levels[i], err = strconv.ParseFloat(v, 64); err != nil {
			return analysis.Ramp{}, &exitError{exitUsage, fmt.Errorf("--hysteresis: ramp level %q is not a rate", v)}
		}
	}
	return analysis.Ramp{Levels: levels, Hold: c.hold}, nil
}

// printHysteresis prints each variant's goodput at every level of the
// ramp, going up and coming down.
func printHysteresis(w io.Writer, hs []analysis.Hysteresis) {
	fmt.Fprintln(w, "\nhysteresis (goodput in req/s over the second half of each hold):")
	for _, h := range hs {
		fmt.Fprintf(w, "%s\n  up:  ", h.VariantName)
		for _, p := range h.Up {
			fmt.Fprintf(w, " %g→%.1f", p.Rate, p.Goodput)
		}
		fmt.Fprintf(w, "\n  down:")
		for _, p := range h.Down {
			fmt.Fprintf(w, " %g→%.1f", p.Rate, p.Goodput)
		}
		fmt.Fprintln(w)
	}
}

// writeMetastable writes the verdict table and one CSV line per level.
func writeMetastable(dir string, rep *analysis.MetastableReport) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := metrics.WriteFileAtomic(filepath.Join(dir, "metastable.txt"), rep.WriteTable); err != nil {
		return err
	}
	return metrics.WriteFileAtomic(filepath.Join(dir, "metastable.csv"), func(f io.Writer) error {
		cw := csv.NewWriter(f)
		cw.Write([]string{"param", "value", "variant", "status", "recovers", "time_to_recover_s", "baseline_goodput", "final_goodput_ratio", "goodput_rps", "amplification"})
		for _, lv := range rep.Levels {
			ttr := ""
			if lv.Verdict.Recovers || lv.Verdict.Late {
				ttr = strconv.FormatFloat(lv.Verdict.TimeToRecover.Seconds(), 'g', -1, 64)
			}
			cw.Write([]string{rep.Param, lv.Value, lv.VariantName, string(lv.Measures.Status), strconv.FormatBool(lv.Verdict.Recovers), ttr,
				strconv.FormatFloat(lv.Verdict.Baseline, 'g', 6, 64), strconv.FormatFloat(lv.Verdict.Final, 'g', 6, 64),
				strconv.FormatFloat(lv.Measures.GoodputRPS, 'g', 6, 64), strconv.FormatFloat(lv.Measures.Amplification, 'g', 6, 64)})
		}
		cw.Flush()
		return cw.Error()
	})
}

func writeHysteresisCSV(w io.Writer, hs []analysis.Hysteresis) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"variant", "path", "rate", "offered_rps", "goodput_rps"})
	for _, h := range hs {
		for _, path := range []struct {
			name string
			pts  []analysis.HysteresisPoint
		}{{"up", h.Up}, {"down", h.Down}} {
			for _, p := range path.pts {
				cw.Write([]string{h.VariantName, path.name, strconv.FormatFloat(p.Rate, 'g', -1, 64),
					strconv.FormatFloat(p.Offered, 'g', 6, 64), strconv.FormatFloat(p.Goodput, 'g', 6, 64)})
			}
		}
	}
	cw.Flush()
	return cw.Error()
}
