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
	"github.com/stormsim/stormsim/topology"
)

func init() {
	register(&command{
		name:    "compare",
		summary: "run a scenario under several policy variants with the same seed, side by side",
		usage:   "SCENARIO [--variant NAME:path=value,... | --variant NAME=FILE]... [flags]",
		example: `  stormsim compare experiments/retry-storm.yaml
  stormsim compare retry-storm --variant nobudget:services.orders.calls.db.retry.max_attempts=1
  stormsim compare retry-storm --variant alt=other.yaml --out out/compare`,
		setup: func(fs *pflag.FlagSet) func(context.Context, []string, io.Writer) error {
			var ef experimentFlags
			ef.declare(fs)
			out := fs.String("out", "", "write compare.txt, each variant's summary and series, and overlay plots to `DIR`")
			return func(ctx context.Context, args []string, w io.Writer) error {
				if len(args) != 1 {
					return &exitError{exitUsage, fmt.Errorf("want one scenario, got %d arguments", len(args))}
				}
				b, base, err := ef.builder(args[0])
				if err != nil {
					return err
				}
				variants, err := ef.variants(base, true)
				if err != nil {
					return &exitError{exitUsage, err}
				}
				c, err := analysis.Compare(ctx, simRunner(), b, variants, ef.workers)
				if err != nil {
					return err
				}
				if err := c.WriteTable(w); err != nil {
					return err
				}
				if *out == "" {
					return nil
				}
				if err := writeComparison(*out, c); err != nil {
					return err
				}
				fmt.Fprintf(w, "\nwrote %s\n", *out)
				return nil
			}
		},
	})
}

// writeComparison writes the table, each variant's result in a
// subdirectory, and overlays of goodput, amplification and queues.
func writeComparison(dir string, c *analysis.Comparison) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := metrics.WriteFileAtomic(filepath.Join(dir, "compare.txt"), c.WriteTable); err != nil {
		return err
	}
	results := map[string]*metrics.Result{}
	var order []string
	for _, col := range c.Columns {
		sub := filepath.Join(dir, col.Variant.Name)
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return err
		}
		if err := metrics.Save(sub, col.Result); err != nil {
			return fmt.Errorf("variant %s: %w", col.Variant.Name, err)
		}
		results[col.Variant.Name] = col.Result
		order = append(order, col.Variant.Name)
	}
	type overlay struct{ name, column, label string }
	overlays := []overlay{{"goodput", "goodput", "goodput (req/s)"}}
	for _, svc := range c.Columns[0].Result.Summary.Services {
		overlays = append(overlays,
			overlay{"amplification_" + svc.Name, "amplification/" + svc.Name, "attempts at " + svc.Name + " per offered request"},
			overlay{"queue_" + svc.Name, "queue/" + svc.Name, "queue length at " + svc.Name})
	}
	for _, o := range overlays {
		_, err := plots.Overlay(dir, o.name, results, o.column,
			plots.WithOrder(order...), plots.WithYLabel(o.label), plots.WithTitle(c.Scenario+": "+o.label))
		if err != nil {
			return fmt.Errorf("overlay %s: %w", o.name, err)
		}
	}
	return nil
}

// experimentFlags are the flags shared by compare, sweep and metastable.
type experimentFlags struct {
	scenarioFlags
	variantArgs []string
	noDeclared  bool
	workers     int
}

func (f *experimentFlags) declare(fs *pflag.FlagSet) {
	fs.StringArrayVar(&f.variantArgs, "variant", nil, "add a variant: `NAME:path=value,...` (overrides) or NAME=FILE (another scenario file, run with the same seed); repeatable")
	fs.BoolVar(&f.noDeclared, "no-declared", false, "ignore the variants the scenario declares (variants:)")
	fs.StringArrayVar(&f.sets, "set", nil, "override a scenario value for every variant: `path=value` (repeatable)")
	fs.Uint64Var(&f.seed, "seed", 0, "random seed (default: the scenario's)")
	fs.StringVar(&f.duration, "duration", "", "arrival window, e.g. 30s (default: the scenario's)")
	fs.IntVar(&f.workers, "workers", 0, "runs in parallel (default: all cores)")
}

// builder loads the scenario once and returns a Builder that lays a
// variant's overrides (and a sweep's) over it, re-validating each time.
func (f *experimentFlags) builder(arg string) (analysis.Builder, *topology.Scenario, error) {
	global := f.overrides()
	base, err := loadScenario(arg, global)
	if err != nil {
		return nil, nil, err
	}
	b := analysis.ScenarioBuilder(base, func(path string, sets []string) (*topology.Scenario, error) {
		return loadScenario(path, append(append([]string(nil), global...), sets...))
	})
	return b, base, nil
}

// variants returns the baseline, the scenario's declared variants (unless
// --no-declared or declared is false) and the --variant ones.
func (f *experimentFlags) variants(base *topology.Scenario, declared bool) ([]analysis.Variant, error) {
	var flags []analysis.Variant
	for _, s := range f.variantArgs {
		v, err := analysis.ParseVariant(s)
		if err != nil {
			return nil, fmt.Errorf("--variant: %w", err)
		}
		flags = append(flags, v)
	}
	var decl []topology.Variant
	if declared && !f.noDeclared {
		decl = base.Variants
	}
	vs, err := analysis.Variants(decl, flags)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", base.File, err)
	}
	return vs, nil
}

// simRunner runs scenarios on the simulator.
func simRunner() analysis.Runner {
	return analysis.RunnerFunc(func(ctx context.Context, sc *topology.Scenario) (*metrics.Result, error) {
		return sim.Run(ctx, sc, sim.Options{Version: version})
	})
}
