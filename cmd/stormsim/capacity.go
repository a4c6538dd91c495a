package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/pflag"

	"github.com/stormsim/stormsim/analysis"
	"github.com/stormsim/stormsim/capacity"
	"github.com/stormsim/stormsim/collapse"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/shard"
	"github.com/stormsim/stormsim/topology"
)

func init() {
	register(&command{
		name:    "capacity",
		summary: "find the highest load at which an SLO holds, in steady state and after the scenario's faults",
		usage:   "SCENARIO --slo EXPR [--param PATH] [--range lo:hi] [--replicas N] [--solve PATH[=lo:hi] --target VALUE] [flags]",
		example: `  stormsim capacity five-layer-chain --slo 'p99<300ms,success>=99.9%' --range 100:2000
  stormsim capacity metastable-retry-storm --slo 'p99<500ms,success>=99%' --range 100:800 --recovery-bound 20s --out out/cap
  stormsim capacity retry-storm --slo 'p99<300ms' --solve services.db.workers --target 1200 --format json
  stormsim capacity queue.yaml --slo 'collapse(system(s)>=20, 1h)<0.01' --range 0.1:0.95
  stormsim capacity retry-storm --slo 'p99<300ms' --range 100:2000 --shard 0/4 --out results/shard-0   # and 1/4, 2/4, 3/4`,
		new: func() subcommand { return new(capacityCommand) },
	})
}

// capacityCommand is `stormsim capacity`: its flags, and the run that uses them.
type capacityCommand struct {
	sf         scenarioFlags
	slo        string
	param      string
	rng        string
	resolution float64
	precision  float64
	replicas   int
	conf       float64
	solves     []string
	target     float64
	det        analysis.DetectorConfig
	workers    int
	format     string
	out        string
	progress   bool
	sh         shard.Flags
	shardWait  time.Duration
	col        collapseCapacityFlags
	live       liveFlags
	// variantArgs are the --variant flags: one capacity study per variant.
	variantArgs []string
}

// flags declares the command's flags on fs.
func (c *capacityCommand) flags(fs *pflag.FlagSet) {
	fs.StringVar(&c.slo, "slo", "", "the objective `EXPR`: conditions joined by commas, e.g. 'p99<300ms,success>=99.9%,db.utilization<0.8'")
	fs.StringVar(&c.param, "param", "workload.rate", "the load `PATH` searched")
	fs.StringVar(&c.rng, "range", "", "search the load between `lo:hi` (default: a quarter to four times the scenario's value)")
	fs.Float64Var(&c.resolution, "resolution", 0, "stop when the bracket is this narrow (default: the range / 128; integers: 1)")
	fs.Float64Var(&c.precision, "precision", capacity.DefaultPrecision, "add replicas near the boundary until the bracket is within ± this share of its midpoint (0: never add replicas)")
	fs.IntVar(&c.replicas, "replicas", capacity.DefaultReplicas, "runs per point, replica r with the same seed at every point (common random numbers)")
	fs.Float64Var(&c.conf, "confidence", capacity.DefaultConfidence, "confidence of the statement that the SLO holds at the answer")
	fs.StringArrayVar(&c.solves, "solve", nil, "what-if: search `PATH[=lo:hi]` for the smallest (or largest) value that meets the SLO at --target; repeatable")
	fs.Float64Var(&c.target, "target", 0, "the load (value of --param) the --solve searches must meet the SLO at")
	fs.DurationVar(&c.det.RecoveryBound, "recovery-bound", analysis.DefaultRecoveryBound, "after the faults, the system must be back within this long")
	fs.Float64Var(&c.det.Tolerance, "tolerance", analysis.DefaultTolerance, "a recovered interval has goodput ≥ (1−tolerance)×its pre-fault baseline")
	fs.IntVar(&c.det.Consecutive, "consecutive", analysis.DefaultConsecutive, "recovered intervals in a row needed to declare recovery")
	fs.StringArrayVar(&c.sf.sets, "set", nil, "override a scenario value: `path=value` (repeatable)")
	fs.Uint64Var(&c.sf.seed, "seed", 0, "random seed (default: the scenario's)")
	fs.StringVar(&c.sf.duration, "duration", "", "arrival window, e.g. 30s (default: the scenario's)")
	fs.IntVar(&c.workers, "workers", 0, "runs in parallel (default: all cores)")
	fs.StringVar(&c.format, "format", "text", "output `text` or json")
	fs.StringVar(&c.out, "out", "", "write capacity.txt, capacity.json and PNG plots to `DIR`")
	fs.BoolVar(&c.progress, "progress", false, "show the progress bar even when stderr is not a terminal")
	c.live.declare(fs, false, true)
	c.sh.Register(fs)
	fs.DurationVar(&c.shardWait, "shard-wait", 6*time.Hour, "with --shard: how long to wait for the other shards' results of a step")
	c.col.declare(fs)
	fs.StringArrayVar(&c.variantArgs, "variant", nil, "also search a variant, as compare does: `NAME:path=value,...` or NAME=FILE, run with the same seed; repeatable (the baseline is searched first)")
}

// run runs the command with the arguments left after the flags.
func (c *capacityCommand) run(ctx context.Context, args []string, w io.Writer) error {
	if len(args) != 1 {
		return &exitError{exitUsage, fmt.Errorf("want one scenario, got %d arguments", len(args))}
	}
	if c.format != "text" && c.format != "json" {
		return &exitError{exitUsage, fmt.Errorf("--format %q: want text or json", c.format)}
	}
	if c.slo == "" {
		return &exitError{exitUsage, errors.New("--slo is required, e.g. --slo 'p99<300ms,success>=99.9%'")}
	}
	if collapse.IsSLO(c.slo) {
		if len(c.variantArgs) > 0 {
			return &exitError{exitUsage, errors.New("--variant is for SLO searches on the simulator, not collapse(...) objectives")}
		}
		return c.runCollapse(ctx, args[0], w)
	}
	s, err := capacity.ParseSLO(c.slo)
	if err != nil {
		return &exitError{exitUsage, err}
	}
	if len(c.solves) > 0 && c.target <= 0 {
		return &exitError{exitUsage, errors.New("--solve needs --target, the load to meet the SLO at")}
	}
	if c.target > 0 && len(c.solves) == 0 {
		return &exitError{exitUsage, errors.New("--target is for --solve: give at least one --solve PATH")}
	}
	base, err := loadScenario(args[0], c.sf.overrides())
	if err != nil {
		return err
	}
	if len(c.variantArgs) > 0 {
		return c.runVariants(ctx, base, s, w)
	}
	if err := s.Check(base); err != nil {
		return &exitError{exitUsage, err}
	}
	plan, err := c.plan(base, s)
	if err != nil {
		return &exitError{exitUsage, err}
	}
	reps, err := c.runPlans(ctx, base.Name, []*capacity.Plan{plan})
	rep := reps[0]
	if rep == nil {
		if err != nil && ctx.Err() != nil {
			return fmt.Errorf("%w: %v", errInterrupted, err)
		}
		return err
	}
	if eerr := c.emit(w, rep); eerr != nil {
		return eerr
	}
	if c.out != "" {
		if eerr := metrics.WriteManifest(c.out, runIDFrom(ctx), "capacity.json"); eerr != nil {
			return eerr
		}
	}
	if rep.Interrupted {
		// What the searches found before the signal is written, marked.
		return fmt.Errorf("%w: partial capacity report written (%v)", errInterrupted, err)
	}
	if failed := rep.Failed(); err == nil && len(failed) > 0 {
		// The searches finished around the points that could not be run;
		// the report lists them, and the exit status says so.
		return fmt.Errorf("%d points failed (marked failed in the report, counted as not meeting the SLO); the lowest: %s", len(failed), failed[0].Failed)
	}
	return err
}

// runPlans runs the plans in order with the flags' options, progress bar
// and live view, and returns their reports: one per plan, nil for a plan a
// signal or a failure kept from running. It stops after an interrupted or
// failed plan and returns that plan's error.
func (c *capacityCommand) runPlans(ctx context.Context, name string, plans []*capacity.Plan) ([]*capacity.Report, error) {
	reps := make([]*capacity.Report, len(plans))
	opt, err := c.options()
	if err != nil {
		return reps, &exitError{exitUsage, err}
	}
	lv, err := c.live.start(ctx, "capacity "+name, false)
	if err != nil {
		return reps, err
	}
	defer lv.close()
	bar := newCountProgress(os.Stderr, c.progress, "capacity")
	opt.Progress = bar.update
	defer bar.finish()
	defer lv.srv.End()
	for i, plan := range plans {
		if i > 0 && ctx.Err() != nil {
			break // the rest were not run
		}
		rep, err := plan.Run(ctx, lv.points(simRunner(), c.livePoint), opt)
		reps[i] = rep
		if rep == nil || rep.Interrupted || err != nil {
			return reps, err
		}
	}
	return reps, nil
}

// livePoint places a run of the search on the live view: at its value of
// --param, on the line of steady-state runs or of recovery runs.
func (c *capacityCommand) livePoint(sc *topology.Scenario) (float64, string, string) {
	_, x, _, _ := capacity.PathOf(sc, c.param) // the plan checked the path
	if len(sc.Faults) > 0 {
		return x, c.param, "with faults (recovery)"
	}
	return x, c.param, "steady state"
}

// plan returns the capacity study the flags ask for on base: the load
// search, the what-if solves, or both.
func (c *capacityCommand) plan(base *topology.Scenario, s capacity.SLO) (*capacity.Plan, error) {
	search := capacity.Search{Param: c.param, Resolution: c.resolution, Replicas: c.replicas, Confidence: c.conf, SLO: s, Detector: c.det, Precision: c.precision}
	if c.precision == 0 {
		search.Precision = capacity.NoRefine
	}
	if !(c.precision >= 0 && c.precision < 1) {
		return nil, fmt.Errorf("--precision must be in [0, 1), a share of the answer such as 0.02, got %g", c.precision)
	}
	kind, _, _, err := capacity.PathOf(base, c.param)
	if err != nil {
		return nil, fmt.Errorf("--param: %w", err)
	}
	if c.rng != "" {
		if search.Lo, search.Hi, err = capacity.ParseRange(kind, c.rng); err != nil {
			return nil, fmt.Errorf("--range: %w", err)
		}
	}
	if c.replicas < 1 {
		return nil, fmt.Errorf("--replicas must be ≥ 1, got %d", c.replicas)
	}
	plan := &capacity.Plan{
		Base:   base,
		Build:  analysis.ScenarioBuilder(base, nil),
		Search: search,
		Target: c.target,
		// With --solve and no --range the load search is skipped:
		// the question asked is what-if, not capacity.
		SkipCapacity: len(c.solves) > 0 && c.rng == "",
	}
	for _, sv := range c.solves {
		spec, err := capacity.ParseSolve(sv, base)
		if err != nil {
			return nil, err
		}
		plan.Solves = append(plan.Solves, spec)
	}
	return plan, nil
}

// options returns how the search runs: its workers and, with --shard, the
// exchange through which the shards share every step.
func (c *capacityCommand) options() (capacity.Options, error) {
	opt := capacity.Options{Workers: c.workers}
	spec, err := c.sh.Spec(os.LookupEnv)
	if err != nil || !spec.Sharded() {
		return opt, err
	}
	// Every shard runs its share of each step and reads the others'
	// results from their sibling directories.
	if c.out == "" || filepath.Base(filepath.Clean(c.out)) != filepath.Base(shard.Dir("", spec.Index)) {
		return opt, fmt.Errorf("--shard %s needs --out PARENT/%s: the shards exchange results through PARENT", spec, filepath.Base(shard.Dir("", spec.Index)))
	}
	opt.Exchange = &capacity.DirExchange{Parent: filepath.Dir(filepath.Clean(c.out)), Index: spec.Index, Count: spec.Count, Wait: c.shardWait}
	return opt, nil
}

// emit prints the report as text or JSON and writes its files under --out.
func (c *capacityCommand) emit(w io.Writer, rep *capacity.Report) error {
	var err error
	if c.format == "json" {
		err = rep.WriteJSON(w)
	} else {
		err = rep.WriteText(w)
	}
	if err != nil || c.out == "" {
		return err
	}
	files, err := writeCapacity(c.out, rep)
	if err != nil {
		return err
	}
	if c.format == "text" {
		fmt.Fprintf(w, "\nwrote %s\n", joinPaths(files))
	}
	return nil
}

// writeCapacity writes the report as text and JSON and the capacity plots.
func writeCapacity(dir string, rep *capacity.Report) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var files []string
	for _, f := range []struct {
		name  string
		write func(io.Writer) error
	}{{"capacity.txt", rep.WriteText}, {"capacity.json", rep.WriteJSON}} {
		path := filepath.Join(dir, f.name)
		if err := metrics.WriteFileAtomic(path, f.write); err != nil {
			return files, err
		}
		files = append(files, path)
	}
	// A search interrupted before its first point has nothing to plot.
	if rep.Capacity != nil && len(rep.Capacity.Points) > 0 {
		pngs, err := rep.Capacity.WritePlots(dir)
		files = append(files, pngs...)
		if err != nil {
			return files, err
		}
	}
	return files, nil
}

func joinPaths(files []string) string {
	s := ""
	for i, f := range files {
		if i > 0 {
			s += ", "
		}
		s += f
	}
	return s + " (" + strconv.Itoa(len(files)) + " files)"
}
