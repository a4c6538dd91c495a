package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/stormsim/stormsim/merge"
	"github.com/stormsim/stormsim/shard"

	"github.com/spf13/pflag"

	"github.com/stormsim/stormsim/analysis"
	"github.com/stormsim/stormsim/live"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/plots"
)

func init() {
	register(&command{
		name:    "sweep",
		summary: "vary one scenario path over values, under variants, with replicas, in parallel",
		usage:   "SCENARIO --param PATH (--values a,b,c | --range from:to:step) [flags]\n       stormsim sweep --merge SHARD.csv... --out DIR",
		example: `  stormsim sweep retry-storm --param workload.rate --range 100:800:100 --replicas 5 --out out/sweep
  stormsim sweep retry-storm --param services.db.workers --values 4,8,16 --variant no-db-retry:services.orders.calls.db.retry.max_attempts=1
  stormsim sweep retry-storm --param workload.rate --range 100:800:100 --shard 0/2 --out shard0
  stormsim sweep --merge shard0/sweep.csv shard1/sweep.csv --out out/sweep`,
		new: func() subcommand { return new(sweepCommand) },
	})
}

// sweepCommand is `stormsim sweep`: its flags, and the run that uses them.
type sweepCommand struct {
	ef       experimentFlags
	param    string
	values   string
	rng      string
	replicas int
	out      string
	sh       shard.Flags
	merge    bool
	progress bool
	live     liveFlags
}

// flags declares the command's flags on fs.
func (c *sweepCommand) flags(fs *pflag.FlagSet) {
	fs.StringVar(&c.param, "param", "", "the scenario `PATH` to vary, as --set spells it (e.g. workload.rate)")
	fs.StringVar(&c.values, "values", "", "the values, comma-separated (`a,b,c`)")
	fs.StringVar(&c.rng, "range", "", "the values `from:to:step` (numbers or durations)")
	fs.IntVar(&c.replicas, "replicas", 1, "runs per point and variant, with seeds derived from the scenario's")
	c.ef.declare(fs)
	fs.StringVar(&c.out, "out", "", "write sweep.csv, sweep-aggregate.csv and plots to `DIR` (without it, only the table is printed)")
	c.sh.Register(fs)
	fs.BoolVar(&c.merge, "merge", false, "merge the sweep.csv files given as arguments (shards of one sweep) instead of running")
	fs.BoolVar(&c.progress, "progress", false, "show the progress bar even when stderr is not a terminal")
	c.live.declare(fs, false, true)
}

// run runs the command with the arguments left after the flags.
func (c *sweepCommand) run(ctx context.Context, args []string, w io.Writer) error {
	if c.merge {
		if c.live.addr != "" {
			return &exitError{exitUsage, errors.New("--live watches a sweep as it runs; --merge runs nothing")}
		}
		return mergeSweep(args, c.out, w)
	}
	if len(args) != 1 {
		return &exitError{exitUsage, fmt.Errorf("want one scenario, got %d arguments", len(args))}
	}
	if (c.values == "") == (c.rng == "") {
		return &exitError{exitUsage, errors.New("give exactly one of --values and --range")}
	}
	s := &analysis.Sweep{Param: c.param, Replicas: c.replicas}
	var err error
	if s.Values, err = levels(c.values, c.rng); err != nil {
		return &exitError{exitUsage, err}
	}
	if c.replicas < 1 {
		return &exitError{exitUsage, fmt.Errorf("--replicas must be ≥ 1, got %d", c.replicas)}
	}
	opt := analysis.SweepOptions{Workers: c.ef.workers}
	if opt.Shard, err = c.sh.Spec(os.LookupEnv); err != nil {
		return &exitError{exitUsage, err}
	}
	if opt.Shard.Sharded() && c.out == "" {
		return &exitError{exitUsage, fmt.Errorf("--shard %s needs --out DIR: a shard's units are for 'stormsim sweep --merge'", opt.Shard)}
	}
	b, base, err := c.ef.builder(args[0])
	if err != nil {
		return err
	}
	if s.Variants, err = c.ef.variants(base, true); err != nil {
		return &exitError{exitUsage, err}
	}
	if err := s.Validate(); err != nil {
		return &exitError{exitUsage, err}
	}
	// Check every point's overrides before spending minutes on runs.
	if err := s.CheckBuilds(b); err != nil {
		return err
	}
	return c.runSweep(ctx, b, s, opt, w)
}

// sweepX is a swept value as a number for the live view's x axis:
// durations in seconds, and a value that is neither at its index.
func sweepX(values []string, i int) float64 {
	if v, err := strconv.ParseFloat(values[i], 64); err == nil {
		return v
	}
	if d, err := time.ParseDuration(values[i]); err == nil {
		return d.Seconds()
	}
	return float64(i)
}

// runSweep runs the sweep with a progress bar and writes what it ran: a
// stopped sweep keeps its finished rows but gets no aggregates, and an
// interrupted one says so in sweep.partial.
func (c *sweepCommand) runSweep(ctx context.Context, b analysis.Builder, s *analysis.Sweep, opt analysis.SweepOptions, w io.Writer) error {
	label := "sweep"
	if opt.Shard.Sharded() {
		label += " shard " + opt.Shard.String()
	}
	lv, err := c.live.start(ctx, label+" "+s.Param, false)
	if err != nil {
		return err
	}
	defer lv.close()
	if lv.srv != nil {
		opt.Keep = func(u analysis.Unit, r *metrics.Result) {
			lv.srv.Point(live.PointOf(sweepX(s.Values, u.Point), s.Param, s.Variants[u.Variant].Name, &r.Summary))
		}
	}
	bar := newCountProgress(os.Stderr, c.progress, label)
	opt.Progress = bar.update
	rows, runErr := analysis.RunSweep(ctx, simRunner(), b, s, opt)
	bar.finish()
	lv.srv.End()
	partial := ""
	if runErr != nil && ctx.Err() != nil {
		partial = fmt.Sprintf("interrupted: %v", runErr)
	}
	if err := writeSweep(c.out, rows, s.Values, !opt.Shard.Sharded() && runErr == nil, partial, w); err != nil {
		return err
	}
	if c.out != "" {
		if err := metrics.WriteManifest(c.out, runIDFrom(ctx), "sweep.csv"); err != nil {
			return err
		}
	}
	if runErr != nil {
		if partial != "" && c.out == "" {
			return fmt.Errorf("%w: %d units completed, none written (no --out)", errInterrupted, len(rows))
		}
		if partial != "" {
			return fmt.Errorf("%w: %d units written to %s", errInterrupted, len(rows), c.out)
		}
		return runErr
	}
	return nil
}

// partialFile marks a sweep directory whose sweep.csv holds only the units
// completed before an interruption; it says why.
const partialFile = "sweep.partial"

// writeSweep writes sweep.csv and, for a whole sweep, the aggregates, their
// table and the curves. A non-empty partial (why the sweep stopped) is
// written to sweep.partial; otherwise a stale sweep.partial is removed.
// Without a dir (no --out) it writes nothing and prints a whole sweep's
// table: no command writes files it was not asked for.
func writeSweep(dir string, rows []analysis.Row, values []string, whole bool, partial string, w io.Writer) error {
	if dir == "" {
		if partial == "" && whole {
			printAggregates(w, analysis.AggregateRows(rows))
			fmt.Fprintf(w, "\nno files written: --out DIR writes sweep.csv, sweep-aggregate.csv and the plots\n")
		}
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	marker := filepath.Join(dir, partialFile)
	if partial == "" {
		if err := os.Remove(marker); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if err := metrics.WriteFileAtomic(filepath.Join(dir, "sweep.csv"), func(f io.Writer) error {
		return analysis.WriteRows(f, rows)
	}); err != nil {
		return err
	}
	if partial != "" {
		if err := metrics.WriteFileAtomic(marker, func(f io.Writer) error {
			_, err := fmt.Fprintf(f, "partial: %s\n%d units completed and written to sweep.csv; no aggregates\n", partial, len(rows))
			return err
		}); err != nil {
			return err
		}
		fmt.Fprintf(w, "partial: wrote the %d completed units to %s (%s)\n", len(rows), filepath.Join(dir, "sweep.csv"), marker)
		return nil
	}
	if !whole {
		fmt.Fprintf(w, "wrote %d units to %s (partial: merge shards with 'stormsim sweep --merge')\n", len(rows), filepath.Join(dir, "sweep.csv"))
		return nil
	}
	aggs := analysis.AggregateRows(rows)
	if err := metrics.WriteFileAtomic(filepath.Join(dir, "sweep-aggregate.csv"), func(f io.Writer) error {
		return analysis.WriteAggregates(f, aggs)
	}); err != nil {
		return err
	}
	printAggregates(w, aggs)
	if len(aggs) == 0 {
		return nil
	}
	if _, err := writeSweepPlots(dir, aggs, values); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nwrote %s\n", dir)
	return nil
}

// writeSweepPlots draws a sweep's curves into dir and returns the files.
func writeSweepPlots(dir string, aggs []analysis.Aggregate, values []string) ([]string, error) {
	var files []string
	for _, m := range []string{"goodput_rps", "amplification", "p99_ms", "peak_queue"} {
		p, err := analysis.SweepPlot(aggs, m, values)
		if err != nil {
			return files, err
		}
		out, err := plots.Write(dir, "sweep_"+m, p)
		files = append(files, out...)
		if err != nil {
			return files, err
		}
	}
	return files, nil
}

// printAggregates prints goodput and amplification per point and variant,
// with the half-width of their 95 % intervals when there were replicas.
func printAggregates(w io.Writer, aggs []analysis.Aggregate) {
	if len(aggs) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "%s\tvariant\treplicas\tgoodput (req/s)\tp99 (ms)\tamplification\tincomplete\t\n", aggs[0].Param)
	cell := func(s analysis.Stat, prec int) string {
		if s.Hi != s.Hi { // NaN: one replica, or no data ("-")
			return analysis.NoDataOr(s.Mean, prec)
		}
		return fmt.Sprintf("%.*f ± %.*f", prec, s.Mean, prec, (s.Hi-s.Lo)/2)
	}
	for _, a := range aggs {
		g, _ := a.Stat("goodput_rps")
		p, _ := a.Stat("p99_ms")
		m, _ := a.Stat("amplification")
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%d\t\n", a.Value, a.VariantName, a.Replicas, cell(g, 1), cell(p, 1), cell(m, 2), a.Incomplete)
	}
	tw.Flush()
}

// mergeSweep joins the sweep.csv files of a sharded sweep.
func mergeSweep(files []string, dir string, w io.Writer) error {
	if len(files) == 0 {
		return &exitError{exitUsage, errors.New("--merge: give the shards' sweep.csv files")}
	}
	rows, values, err := merge.SweepFiles(files)
	if err != nil {
		return err
	}
	return writeSweep(dir, rows, values, true, "", w)
}

// levels returns the values of --values (a list) or of --range
// (from:to:step), whichever is given; sweep and metastable take both.
func levels(values, rng string) ([]string, error) {
	if values != "" {
		return analysis.ParseValues(values)
	}
	return analysis.ParseRange(rng)
}
