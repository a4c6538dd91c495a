package capacity

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/stormsim/stormsim/analysis"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/topology"
)

// Options control how a search runs; none changes its outcome.
type Options struct {
	// Workers run a step's runs in parallel; 0 means GOMAXPROCS.
	Workers int
	// Progress, if not nil, is called after every run with the runs done
	// and an upper bound on the runs the search will take. Calls are
	// serialized.
	Progress func(done, total int)
	// Exchange, if not nil, shares the search with other processes: this
	// one runs only the runs of each step it owns and gets the others'
	// results from the exchange (see Exchange).
	Exchange Exchange
	// Key prefixes the step names given to Exchange, to tell apart several
	// searches sharing one exchange (Plan sets it).
	Key string
}

// Exchange splits the runs of every search step between processes — the
// shards of a Kubernetes Indexed Job, say. Since the runs of a step are a
// pure function of the inputs and of the verdicts of the steps before it,
// every shard computes the same list; each runs the runs it owns, the
// exchange gives every shard all of the step's results, and every shard
// then reaches the same verdicts and takes the same next step. The
// outcome is identical to the unsharded one.
type Exchange interface {
	// Owns reports whether this process runs run k (0-based) of a step.
	Owns(k int) bool
	// Share publishes this process's results of the step named key and
	// returns every result of the step, by run index, once all total are
	// available.
	Share(ctx context.Context, key string, mine map[int]RunRecord, total int) (map[int]RunRecord, error)
}

// Recaller is an Exchange that remembers what this process shared before
// it was restarted: Recall returns this process's own results of a step of
// total runs when it has them, and the step is not run again.
type Recaller interface {
	Recall(key string, total int) (map[int]RunRecord, bool)
}

// Evaluate judges the given values of the search's parameter as the search
// would, each with all its replicas: the building block of Run, exposed so
// that an answer can be checked (a solve's value and the one next to it)
// and so that a step can be run elsewhere.
func Evaluate(ctx context.Context, run analysis.Runner, build analysis.Builder, s Search, opt Options, values ...float64) ([]Point, error) {
	e, _, err := newEvaluator(run, build, s, opt)
	if err != nil {
		return nil, err
	}
	e.total = len(values) * len(e.s.Runs(e.s.Lo, e.faults))
	return e.points(ctx, 0, values...)
}

// evaluator is the evaluation pool of one search: it runs the runs of each
// step on a bounded number of goroutines, shares them through the
// exchange, and judges the step's points.
type evaluator struct {
	run    analysis.Runner
	build  analysis.Builder
	s      Search
	opt    Options
	seed   uint64
	faults bool

	// runs counts the runs of the search (all shards'); known, the runs
	// whose results this process has, for Progress.
	runs, total int
	mu          sync.Mutex
	known       int
	// done holds every run's result by its spec, so that a point judged
	// again with more replicas runs only the new ones.
	done map[runKey]runResult
	// limit, when positive, bounds e.runs in a bisection (the rounds of
	// refine); limited records that it stopped one.
	limit   int
	limited bool
}

// runKey names a run: replica r of a value, steady or with faults.
type runKey struct {
	value   float64
	replica int
	faults  bool
}

// newEvaluator validates s and returns the evaluator of its runs, with
// the base scenario (the Fixed overrides applied) that seeds them.
func newEvaluator(run analysis.Runner, build analysis.Builder, s Search, opt Options) (*evaluator, *topology.Scenario, error) {
	if err := s.Validate(); err != nil {
		return nil, nil, err
	}
	s = s.withDefaults()
	e := &evaluator{run: run, build: build, s: s, opt: opt}
	base, err := e.scenario(s.Fixed)
	if err != nil {
		return nil, nil, fmt.Errorf("capacity: %w", err)
	}
	e.seed, e.faults = base.Seed, len(base.Faults) > 0
	return e, base, nil
}

// scenario builds the scenario as written with sets laid over it.
func (e *evaluator) scenario(sets []string) (*topology.Scenario, error) {
	return e.build(analysis.Variant{Name: analysis.Baseline}, sets)
}

// progress records n more known results and reports them.
func (e *evaluator) progress(n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.known += n
	if e.opt.Progress != nil {
		e.opt.Progress(e.known, e.total)
	}
}

// points evaluates values (one search step) with all their runs in
// parallel, and judges each.
func (e *evaluator) points(ctx context.Context, step int, values ...float64) ([]Point, error) {
	var all, specs []RunSpec
	for _, v := range values {
		all = append(all, e.s.Runs(v, e.faults)...)
	}
	// Only the runs not made before are the step's: the exchange and a
	// restarted shard see the same list.
	for _, sp := range all {
		if _, ok := e.done[sp.key()]; !ok {
			specs = append(specs, sp)
		}
	}
	key := fmt.Sprintf("%sstep-%d", e.opt.Key, step)
	results := make([]runResult, len(specs))
	if err := e.runOwned(ctx, specs, e.toRun(key, specs, results), results); err != nil {
		return nil, err
	}
	if e.opt.Exchange != nil {
		if err := e.share(ctx, key, specs, results); err != nil {
			return nil, err
		}
	}
	e.runs += len(specs)
	if e.done == nil {
		e.done = map[runKey]runResult{}
	}
	for i, sp := range specs {
		e.done[sp.key()] = results[i]
	}
	out := make([]Point, len(values))
	per := len(all) / len(values)
	for i, v := range values {
		rs := make([]runResult, per)
		for j, sp := range all[i*per : (i+1)*per] {
			rs[j] = e.done[sp.key()]
		}
		out[i] = e.judge(step, v, rs)
	}
	return out, nil
}

// key names the run.
func (r RunSpec) key() runKey { return runKey{r.Value, r.Replica, r.Faults} }

// toRun returns the indices of the specs this process must run: all of
// them, or those it owns in the exchange, or none when it recalls its
// results of the step from before a restart (they are then stored in
// results).
func (e *evaluator) toRun(key string, specs []RunSpec, results []runResult) []int {
	if r, ok := e.opt.Exchange.(Recaller); ok {
		// A shard restarted after a failure takes up its own finished
		// steps instead of running them again.
		if mine, ok := r.Recall(key, len(specs)); ok {
			for k, rec := range mine {
				results[k] = runResult{spec: specs[k], RunRecord: rec}
			}
			e.progress(len(mine))
			return nil
		}
	}
	var owned []int
	for i := range specs {
		if e.opt.Exchange == nil || e.opt.Exchange.Owns(i) {
			owned = append(owned, i)
		}
	}
	return owned
}

// runOwned runs specs[i] for every i in owned on at most Options.Workers
// goroutines, storing each result in results[i]. A run that fails (a
// scenario that cannot be built or run, or a panic) is stored with its
// error in RunRecord.Error, and its point is judged failed; only ctx
// ending stops the runs not yet started, and is returned.
func (e *evaluator) runOwned(ctx context.Context, specs []RunSpec, owned []int, results []runResult) error {
	workers := e.opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	for _, i := range owned {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error {
			if gctx.Err() != nil {
				return nil // stopped while this run waited for a worker
			}
			results[i] = e.one(gctx, specs[i])
			if err := results[i].err; err != nil {
				if gctx.Err() != nil {
					return err // interrupted: not the run's own failure
				}
				results[i].Error, results[i].err = err.Error(), nil
			}
			e.progress(1)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return fmt.Errorf("capacity: %w", context.Cause(ctx))
	}
	return nil
}

// share publishes this process's results of a step through the exchange
// and stores every shard's results in results.
func (e *evaluator) share(ctx context.Context, key string, specs []RunSpec, results []runResult) error {
	x := e.opt.Exchange
	mine := make(map[int]RunRecord)
	for i := range specs {
		if x.Owns(i) {
			mine[i] = results[i].RunRecord
		}
	}
	all, err := x.Share(ctx, key, mine, len(specs))
	if err != nil {
		return fmt.Errorf("capacity: %s: %w", key, err)
	}
	for i := range specs {
		rec, ok := all[i]
		if !ok {
			return fmt.Errorf("capacity: %s: the exchange returned no result for run %d of %d", key, i, len(specs))
		}
		results[i] = runResult{spec: specs[i], RunRecord: rec}
	}
	e.progress(len(specs) - len(mine))
	return nil
}

// RunRecord is what one run contributes to the judgement of its point: the
// part of its result that Exchange passes between processes, as JSON.
type RunRecord struct {
	Seed    uint64          `json:"seed"`
	Summary metrics.Summary `json:"summary"`
	// Verdict is the recovery run's verdict (nil for a steady-state run).
	Verdict *analysis.Verdict `json:"verdict,omitempty"`
	// Series is the recovery run as the detector read it.
	Series *analysis.Series `json:"series,omitempty"`
	// Note says why recovery could not be judged.
	Note string `json:"note,omitempty"`
	// Error says why the run failed (it could not be built or run, or it
	// panicked); its point is then judged failed.
	Error string `json:"error,omitempty"`
}

// runResult is one finished run of a point.
type runResult struct {
	spec RunSpec
	RunRecord
	err error
}

// one builds and runs one spec, and for a recovery run judges recovery. A
// panic in the run is recovered and becomes the run's error, naming the
// value, so that one bad point does not end the search.
func (e *evaluator) one(ctx context.Context, spec RunSpec) (rr runResult) {
	where := fmt.Sprintf("capacity: %s=%s replica %d", e.s.Param, e.s.Kind.Format(spec.Value), spec.Replica)
	if spec.Faults {
		where += " (with faults)"
	}
	defer func() {
		if p := recover(); p != nil {
			rr = runResult{spec: spec, err: fmt.Errorf("%s: the run panicked: %v", where, p)}
		}
	}()
	sc, trig, err := e.scenarioOf(spec)
	if err != nil {
		return runResult{spec: spec, err: fmt.Errorf("%s: %w", where, err)}
	}
	res, err := e.run.Run(ctx, sc)
	if err != nil || res == nil || ctx.Err() != nil {
		if err == nil {
			err = context.Cause(ctx)
		}
		if err == nil {
			err = errors.New("runner returned no result")
		}
		return runResult{spec: spec, err: fmt.Errorf("%s: %w", where, err)}
	}
	rr = runResult{spec: spec, RunRecord: RunRecord{Seed: sc.Seed, Summary: res.Summary}}
	if spec.Faults {
		if err := e.judgeRecovery(&rr.RunRecord, res, sc, trig); err != nil {
			return runResult{spec: spec, err: fmt.Errorf("%s: %w", where, err)}
		}
	}
	return rr
}

// scenarioOf builds the scenario of one run, with its replica's seed: the
// steady-state run without the faults, the recovery run long enough for
// the detector to judge it (trig is the faults' window).
func (e *evaluator) scenarioOf(spec RunSpec) (sc *topology.Scenario, trig analysis.Trigger, err error) {
	if sc, err = e.scenario(spec.Sets); err != nil {
		return nil, trig, err
	}
	sc.Seed = analysis.ReplicaSeed(e.seed, spec.Replica)
	// Capacity is about a constant load: a rate schedule would override
	// the searched rate, so both runs drop it.
	sc.Workload.Schedule = nil
	if !spec.Faults {
		sc.Faults = nil
		return sc, trig, nil
	}
	if trig, err = analysis.TriggerOf(sc); err != nil {
		return nil, trig, err
	}
	sc.Duration = max(sc.Duration, RecoveryDuration(sc, trig, e.s.Detector))
	return sc, trig, nil
}

// judgeRecovery records in rec the detector's verdict on a recovery run
// (a diverged run did not recover) and the series it read.
func (e *evaluator) judgeRecovery(rec *RunRecord, res *metrics.Result, sc *topology.Scenario, trig analysis.Trigger) error {
	v := analysis.Verdict{Trigger: trig}
	if res.Summary.Status != metrics.StatusDiverged {
		series, err := analysis.SeriesOf(res, sc.Duration)
		if err != nil {
			return err
		}
		rec.Series = &series
		if v, err = analysis.Detect(series, sc.Warmup, trig, e.s.Detector); err != nil {
			// The run's shape was checked before the search (checkFaults),
			// so what remains is a baseline too noisy or too empty to
			// judge: the system was not steady before the fault, which
			// is no recovery.
			v = analysis.Verdict{Trigger: trig}
			rec.Note = err.Error()
		}
	}
	rec.Verdict = &v
	return nil
}

// checkFaults finds the scenario's trigger and checks that the detector
// can judge it: at least two whole intervals between the warm-up and the
// first fault, for a baseline.
func checkFaults(sc *topology.Scenario) (analysis.Trigger, error) {
	t, err := analysis.TriggerOf(sc)
	if err != nil {
		return t, fmt.Errorf("capacity: %w", err)
	}
	iv := sc.Interval
	if iv <= 0 {
		iv = time.Second
	}
	first := (sc.Warmup + iv - 1) / iv * iv // the first whole interval after the warm-up
	if first+2*iv > t.Start {
		return t, fmt.Errorf("capacity: %s: faults start at %v, but judging recovery needs a baseline of two whole %v intervals between the warm-up (%v) and the first fault", sc.Name, t.Start, iv, sc.Warmup)
	}
	return t, nil
}

// RecoveryDuration is the arrival window a recovery run needs for the
// detector to judge it: the trigger's end, plus the recovery bound, plus
// K+1 intervals.
func RecoveryDuration(sc *topology.Scenario, t analysis.Trigger, cfg analysis.DetectorConfig) time.Duration {
	cfg = cfg.WithDefaults()
	iv := sc.Interval
	if iv <= 0 {
		iv = time.Second
	}
	return t.End + cfg.RecoveryBound + time.Duration(cfg.Consecutive+1)*iv
}
