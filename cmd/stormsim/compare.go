package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/stormsim/stormsim/merge"
	"github.com/stormsim/stormsim/shard"

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
		new: func() subcommand { return new(compareCommand) },
	})
}

// compareCommand is `stormsim compare`: its flags, and the run that uses them.
type compareCommand struct {
	ef     experimentFlags
	out    string
	format string
	sh     shard.Flags
	slo    sloFlag
	live   liveFlags
}

// flags declares the command's flags on fs.
func (c *compareCommand) flags(fs *pflag.FlagSet) {
	c.ef.declare(fs)
	fs.StringVar(&c.out, "out", "", "write compare.txt, compare.json, report.html, each variant's summary and series, and overlay plots to `DIR`")
	fs.StringVar(&c.format, "format", "text", "output format: text or json (the comparison's verdicts and measures, as compare.json)")
	c.sh.Register(fs)
	c.slo.declare(fs)
	c.live.declare(fs, true, true)
}

// run runs the command with the arguments left after the flags.
func (c *compareCommand) run(ctx context.Context, args []string, w io.Writer) error {
	if len(args) != 1 {
		return &exitError{exitUsage, fmt.Errorf("want one scenario, got %d arguments", len(args))}
	}
	if c.format != "text" && c.format != "json" {
		return &exitError{exitUsage, fmt.Errorf("--format: want text or json, got %q", c.format)}
	}
	b, base, err := c.ef.builder(args[0])
	if err != nil {
		return err
	}
	if err := c.slo.parse(base); err != nil {
		return err
	}
	variants, err := c.ef.variants(base, true)
	if err != nil {
		return &exitError{exitUsage, err}
	}
	spec, err := c.sh.Spec(os.LookupEnv)
	if err != nil {
		return &exitError{exitUsage, err}
	}
	if spec.Sharded() {
		if c.live.addr != "" {
			return &exitError{exitUsage, errors.New("--live shows a whole comparison: run it without --shard")}
		}
		if c.out == "" {
			return &exitError{exitUsage, errors.New("--shard needs --out DIR: the shard's variants are merged with 'stormsim merge'")}
		}
		return compareShard(ctx, b, base, variants, spec, c.ef.workers, c.out, w)
	}
	lv, err := c.live.start(ctx, "compare "+base.Name, false)
	if err != nil {
		return err
	}
	defer lv.close()
	runner := signalledRunner(ctx)
	if lv.srv != nil {
		// Each variant's intervals, in a section of its own, then its
		// summary as a point.
		var vn variantNames
		b, runner = vn.wrap(b, variants), lv.points(signalledRunnerWith(ctx, lv.runRows(&vn)), vn.where)
	}
	// The comparison itself outlives a signal; only the runs see
	// it, and each returns what it simulated so far (status
	// interrupted), so an interrupted comparison still has every
	// column to show and write.
	cmp, err := analysis.Compare(context.WithoutCancel(ctx), runner, b, variants, c.ef.workers)
	lv.srv.End()
	if err != nil {
		return err
	}
	partial := false
	for _, col := range cmp.Columns {
		partial = partial || col.Result.Summary.Status == sim.StatusInterrupted
	}
	text := w
	if c.format == "json" {
		text = io.Discard
	}
	if partial {
		fmt.Fprintln(text, partialNote)
	}
	if err := cmp.WriteTable(text); err != nil {
		return err
	}
	for _, col := range cmp.Columns {
		for _, h := range col.Result.Summary.Hints {
			fmt.Fprintf(text, "%s: %s\n", col.Variant.Name, h)
		}
	}
	sloErr, err := judgeVariants(text, &c.slo, cmp)
	if err != nil {
		return err
	}
	if c.format == "json" {
		if err := cmp.WriteJSON(w); err != nil {
			return err
		}
	}
	if c.out != "" {
		if err := writeComparison(c.out, cmp, partial); err != nil {
			return err
		}
		fmt.Fprintf(text, "\nwrote %s\n", filepath.Join(c.out, "report.html"))
	}
	if partial {
		return fmt.Errorf("%w: partial comparison written", errInterrupted)
	}
	return sloErr
}

// compareShard runs the variants whose index the shard owns and saves each
// one's result under dir/VARIANT; merge.CompareShardFile is written last, so its
// presence marks a finished shard.
func compareShard(ctx context.Context, b analysis.Builder, base *topology.Scenario, variants []analysis.Variant, spec shard.Spec, workers int, dir string, w io.Writer) error {
	var owned []analysis.Variant
	for i, v := range variants {
		if spec.Owns(i) {
			owned = append(owned, v)
		}
	}
	info := merge.CompareShard{Scenario: base.Name, Seed: base.Seed, Shard: spec.String(), Variants: variants}
	if len(owned) > 0 {
		c, err := analysis.CompareSeeded(context.WithoutCancel(ctx), signalledRunner(ctx), b, owned, base.Name, base.Seed, workers)
		if err != nil {
			return err
		}
		for _, col := range c.Columns {
			if col.Result.Summary.Status == sim.StatusInterrupted {
				return fmt.Errorf("%w: shard %s not finished", errInterrupted, spec)
			}
			sub := filepath.Join(dir, metrics.PathComponent(col.Variant.Name))
			if err := os.MkdirAll(sub, 0o755); err != nil {
				return err
			}
			col.Result.RunID = runIDFrom(ctx)
			if err := metrics.Save(sub, col.Result); err != nil {
				return fmt.Errorf("variant %s: %w", col.Variant.Name, err)
			}
			info.Owned = append(info.Owned, col.Variant.Name)
		}
	}
	if err := metrics.WriteFileAtomic(filepath.Join(dir, merge.CompareShardFile), func(f io.Writer) error {
		enc := json.NewEncoder(f)
		enc.SetIndent("", "  ")
		return enc.Encode(info)
	}); err != nil {
		return err
	}
	if err := metrics.WriteManifest(dir, runIDFrom(ctx), merge.CompareShardFile); err != nil {
		return err
	}
	fmt.Fprintf(w, "shard %s: ran %d of %d variants %v into %s (merge the shards with 'stormsim merge')\n", spec, len(info.Owned), len(variants), info.Owned, dir)
	return nil
}

// mergeCompareShards reassembles a sharded comparison from its shards'
// directories and writes it as one unsharded 'stormsim compare --out' would.
func mergeCompareShards(dirs []string, out string, w io.Writer) error {
	c, err := merge.Comparison(dirs)
	if err != nil {
		return err
	}
	if err := c.WriteTable(w); err != nil {
		return err
	}
	return writeComparison(out, c, false)
}

// writeComparison writes the table, each variant's result in a
// subdirectory, and overlays of goodput, amplification and queues.
// A partial comparison's compare.txt starts with partialNote.
func writeComparison(dir string, c *analysis.Comparison, partial bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := metrics.WriteFileAtomic(filepath.Join(dir, "compare.txt"), func(f io.Writer) error {
		if partial {
			if _, err := fmt.Fprintln(f, partialNote); err != nil {
				return err
			}
		}
		return c.WriteTable(f)
	}); err != nil {
		return err
	}
	if err := metrics.WriteFileAtomic(filepath.Join(dir, "compare.json"), c.WriteJSON); err != nil {
		return err
	}
	results := map[string]*metrics.Result{}
	page := &plots.Comparison{Scenario: c.Scenario, Seed: c.Seed}
	var order []string
	for _, col := range c.Columns {
		sub := filepath.Join(dir, metrics.PathComponent(col.Variant.Name))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return err
		}
		if err := metrics.Save(sub, col.Result); err != nil {
			return fmt.Errorf("variant %s: %w", col.Variant.Name, err)
		}
		m := col.Measures
		page.Variants = append(page.Variants, plots.ComparedVariant{Name: col.Variant.Name, Changes: c.Changes(col.Variant),
			Verdict: m.Verdict, Reason: m.Reason, NotRun: m.NotRun, Result: col.Result})
		// Every variant keeps its column's colour; one not run has no line.
		order = append(order, col.Variant.Name)
		if !m.NotRun {
			results[col.Variant.Name] = col.Result
		}
	}
	var files []string
	if len(results) > 0 {
		var err error
		if files, err = writeOverlays(dir, c.Scenario, results, order); err != nil {
			return err
		}
	}
	if err := plots.WriteComparisonReport(dir, page, files); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// writeOverlays draws the variants' goodput, each service's amplification
// and queue, and the intents unknown when every variant follows its writes
// after UNKNOWN, one line per variant, into dir, and returns the files.
func writeOverlays(dir, scenario string, results map[string]*metrics.Result, order []string) ([]string, error) {
	var files []string
	for _, o := range plots.OverlayColumns(results, order) {
		out, err := plots.Overlay(dir, o.Name, results, o.Column,
			plots.WithOrder(order...), plots.WithYLabel(o.Label), plots.WithTitle(scenario+": "+o.Label))
		files = append(files, out...)
		if err != nil {
			return files, fmt.Errorf("overlay %s: %w", o.Name, err)
		}
	}
	return files, nil
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
	f.declareLimits(fs)
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

// partialNote heads the table of an interrupted comparison.
const partialNote = "partial: interrupted; each column covers only the simulated time it reached (status interrupted in its summary.json)"

// signalledRunner runs scenarios on the simulator, stopping each run when
// either its own context or sig is done. A run stopped by sig returns its
// partial result without error, so callers that ignore sig keep it.
func signalledRunner(sig context.Context) analysis.Runner { return signalledRunnerWith(sig, nil) }

// signalledRunnerWith is signalledRunner with each run's OnRow hook made
// by onRow (nil: none).
func signalledRunnerWith(sig context.Context, onRow func(context.Context, *topology.Scenario) func(time.Duration, []string, []float64)) analysis.Runner {
	return analysis.RunnerFunc(func(ctx context.Context, sc *topology.Scenario) (*metrics.Result, error) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		// AfterFunc calls cancel on a goroutine of its own even when sig is
		// already done, so a run could start before it; a signal that came
		// first stops the run before its first event.
		if sig.Err() != nil {
			cancel()
		}
		defer context.AfterFunc(sig, cancel)()
		opt := sim.Options{Version: version}
		if onRow != nil {
			opt.OnRow = onRow(ctx, sc)
		}
		return sim.Run(ctx, sc, opt)
	})
}

// simRunner runs scenarios on the simulator.
func simRunner() analysis.Runner {
	return analysis.RunnerFunc(func(ctx context.Context, sc *topology.Scenario) (*metrics.Result, error) {
		return sim.Run(ctx, sc, sim.Options{Version: version})
	})
}

// judgeVariants judges every variant against --slo, prints one line
// naming those that breach it, and returns the exitSLO error when any does
// (nil when all meet it, or without --slo).
func judgeVariants(w io.Writer, slo *sloFlag, c *analysis.Comparison) (error, error) {
	if slo.slo == nil {
		return nil, nil
	}
	var parts, breached []string
	for _, col := range c.Columns {
		if err := slo.judge(col.Result); err != nil {
			return nil, fmt.Errorf("variant %s: %w", col.Variant.Name, err)
		}
		rep := col.Result.Summary.SLO
		if rep.Met {
			parts = append(parts, col.Variant.Name+" met")
			continue
		}
		var why []string
		for _, t := range rep.Breached() {
			why = append(why, t.Label()+" = "+t.ValueText)
		}
		parts = append(parts, fmt.Sprintf("%s BREACHED (%s)", col.Variant.Name, strings.Join(why, ", ")))
		breached = append(breached, col.Variant.Name)
	}
	fmt.Fprintf(w, "\nslo %s: %s\n", slo.slo, strings.Join(parts, "; "))
	if len(breached) == 0 {
		return nil, nil
	}
	return &exitError{exitSLO, fmt.Errorf("SLO breached by %s", strings.Join(breached, ", "))}, nil
}
