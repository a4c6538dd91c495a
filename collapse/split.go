package collapse

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/stormsim/stormsim/sim"
	"github.com/stormsim/stormsim/topology"
)

// Defaults of Options.
const (
	DefaultPrecision = 0.2
	DefaultEffort    = 100
	DefaultMaxEvents = 2_000_000_000
	// pilotSuccess is the share of pilot runs that must reach each level
	// chosen: about e⁻², near the variance-optimal conditional
	// probability of fixed-effort splitting (Garvels, 2000), rounded up
	// because integer levels rarely allow the exact share.
	pilotSuccess = 0.2
	minBatches   = 30
	// MaxEffort bounds Options.Effort: each run of a level keeps its
	// state, so a billion runs per level ran out of memory.
	MaxEffort = 100_000
	// MaxStates bounds the Markov chain Solve builds (a few hundred
	// bytes a state, with its transitions and the solver's vectors).
	MaxStates = 5_000_000
)

// maxBatches bounds the batches Split runs for its precision; an estimate
// that stops there says so. Tests shrink it.
var maxBatches = 10_000

// observeBatch, when not nil, is told every batch's estimate in order: the
// coverage study (study_test.go) records them to judge stopping rules and
// intervals on the same draws.
var observeBatch func(v float64)

// Options set what Split estimates and how hard it works.
type Options struct {
	Level Level
	// Within is the horizon: the probability is that of reaching the level
	// within Within of the scenario's start (empty, at time 0).
	Within time.Duration
	// Precision is the target relative half-width of the 95 % interval
	// (0.2: ±20 %); batches are added until it is reached.
	Precision float64
	// Effort is the number of runs per level in each batch; 0 is
	// DefaultEffort. It is the least: levels whose runs are cheap for the
	// variance they remove get up to maxAllocation times as many
	// (allocate).
	Effort int
	// MaxEvents bounds the events spent, replays included; the estimate
	// then stops short of Precision and says so. 0 is DefaultMaxEvents.
	MaxEvents uint64
	// Seed derives every run's streams; 0 takes the scenario's seed.
	Seed uint64
	// MeanTime asks for the mean time to reach the level.
	MeanTime bool
	// Horizon, when shorter than Within, is how long splitting simulates:
	// the probability over Within is extrapolated from the rate at which
	// runs reached the level in the horizon's second half (Split). 0
	// simulates all of Within.
	Horizon time.Duration
}

// Estimate is the answer of Split or Solve, as `stormsim collapse` prints it.
type Estimate struct {
	Scenario string  `json:"scenario"`
	Method   string  `json:"method"`
	Level    string  `json:"level"`
	WithinS  float64 `json:"within_s"`
	// Probability of reaching Level within WithinS, and its 95 % interval
	// (for the ctmc method, the interval is the solver's numerical bound).
	Probability float64    `json:"probability"`
	CI95        [2]float64 `json:"ci95"`
	// Levels are the intermediate levels of splitting, the last one the
	// target; one level means plain Monte Carlo.
	Levels []float64 `json:"levels"`
	// Efforts are the runs each level's stage takes in a batch: more where
	// a run is cheap for the variance it removes (allocate).
	Efforts []int `json:"efforts,omitempty"`
	// Runs and Events are the simulation runs and events spent, the pilot
	// that chose the levels and every replay included.
	Runs   int64  `json:"runs"`
	Events uint64 `json:"events"`
	// Replayed is the part of Events spent rebuilding the states runs
	// resumed from (sim.Resume replays a snapshot's genealogy).
	Replayed uint64 `json:"replayed_events,omitempty"`
	Batches  int    `json:"batches,omitempty"`
	// PrecisionTarget is the relative half-width asked for (splitting),
	// and PrecisionReached the interval's: at or under the target unless
	// a note says why the batches stopped short.
	PrecisionTarget  float64 `json:"precision_target,omitempty"`
	PrecisionReached float64 `json:"precision_reached,omitempty"`
	// MeanTimeS is the mean time to reach the level from the start, with
	// MeanTimeNote saying how it was obtained.
	MeanTimeS    *float64 `json:"mean_time_s,omitempty"`
	MeanTimeNote string   `json:"mean_time_note,omitempty"`
	// With a simulated horizon shorter than WithinS: HorizonS, the
	// probability within it, and the rate of passages (per second, with
	// its 95 % interval) measured in its second half and extrapolated.
	HorizonS           float64     `json:"horizon_s,omitempty"`
	HorizonProbability float64     `json:"horizon_probability,omitempty"`
	RatePerS           float64     `json:"rate_per_s,omitempty"`
	RateCI95           *[2]float64 `json:"rate_ci95,omitempty"`
	// States is the size of the Markov chain (ctmc).
	States int      `json:"states,omitempty"`
	Notes  []string `json:"notes,omitempty"`
}

// errBudget reports that the event budget (Options.MaxEvents) is spent.
var errBudget = errors.New("collapse: event budget spent; raise --budget or lower the precision")

// particle is a state at which a run crossed a level: the snapshot to
// resume and the gauge's memory there. over marks a run stopped by one of
// the scenario's limits, which counts as above every level.
type particle struct {
	snap sim.Snapshot
	g    gauge
	over bool
	// w is the weight of a run that reached a level: 1, divided by the
	// survival probability of every roulette it survived (reach).
	w float64
	// t, when not nil, is the run stopped at the crossing, kept alive so
	// that runs restart from it by copying its state (sim.Trajectory.Fork)
	// rather than by replaying snap.
	t *sim.Trajectory
}

// maxForkEffort bounds the effort at which batches keep the crossing runs
// alive to fork them: each holds its run's records (about a megabyte with
// its latency counts), so beyond it states are replayed instead.
const maxForkEffort = 1000

// minForkPast is the shortest past (in events) worth a copy: a copy costs
// about as much as replaying a few thousand events (the engine's calendar
// and the run's records), so shorter pasts are replayed.
const minForkPast = 5000

// release closes the live runs of ps, each once.
func release(ps []particle) {
	for i := range ps {
		if t := ps[i].t; t != nil {
			for j := i; j < len(ps); j++ {
				if ps[j].t == t {
					ps[j].t = nil
				}
			}
			t.Close()
		}
	}
}

// splitter holds what every run of one estimate shares.
type splitter struct {
	ctx      context.Context
	sc       *topology.Scenario // the scenario, its arrival window stretched to the horizon
	level    Level
	end      time.Duration
	seed     uint64
	g0       gauge
	v0       float64 // the quantity at the start
	runs     int64
	events   uint64
	replayed uint64
	budget   uint64
	// fork says batches copy crossing states (Trajectory.Fork); noFork,
	// why they no longer do after a copy failed (they replay instead).
	fork   bool
	noFork string
}

// Split estimates the probability that sc reaches opt.Level within
// opt.Within by fixed-effort multilevel splitting: an adaptive pilot
// measures how likely each value on the way is, and the levels are placed
// on that curve where the product of the variance and the cost is least
// (place); a calibration batch measures what a run of each stage costs,
// and each batch then starts as many runs in each stage as that cost
// warrants (allocate), from the empty state and from the states where the
// previous level was crossed (spread evenly over them), and multiplies
// the weighted shares that reach each level. A batch's product is an
// unbiased estimate; batches are repeated until the Student-t 95 %
// interval over them is within Precision. One level (the target reached
// by a fifth of the pilot) is plain Monte Carlo.
//
// sc must be validated with defaults applied; its duration (the arrival
// window) and warm-up are replaced by the horizon and 0.
func Split(ctx context.Context, sc *topology.Scenario, opt Options) (*Estimate, error) {
	s, err := newSplitter(ctx, sc, opt)
	if err != nil {
		return nil, err
	}
	est := &Estimate{Scenario: sc.Name, Method: "splitting", Level: opt.Level.String(), WithinS: opt.Within.Seconds()}
	curve, err := s.pilot(s.effort(opt))
	if err != nil {
		return nil, err
	}
	levels, shares := place(curve)
	est.Levels = levels
	stages := s.stages(levels, shares)
	// A calibration batch at even effort measures what a run of each
	// stage costs; the batches of the estimate then spread their runs
	// over the stages by that cost (allocate). Its product is left out of
	// the estimate, so that the batches averaged are alike.
	uniform := make([]int, len(stages))
	for k := range uniform {
		uniform[k] = s.effort(opt)
	}
	cost := make([]float64, len(stages))
	if _, _, err := s.batch(stages, uniform, 1<<59, cost); err != nil {
		return nil, err
	}
	efforts := allocate(shares, cost, uniform, s.effort(opt))
	est.Efforts = efforts
	extrapolate := s.end < opt.Within
	// raw and halves are each batch's estimates of P(τ ≤ end) and
	// P(τ ≤ end/2); vs what the interval is over: raw, or when
	// extrapolating each batch's expected count of passages over Within —
	// what it saw in the horizon plus the rate of the horizon's second
	// half over the rest, a linear combination of unbiased estimates.
	var raw, halves, vs []float64
	var mean, half float64
	prec := opt.Precision
	if prec <= 0 {
		prec = DefaultPrecision
	}
	for b := 0; b < maxBatches; b++ {
		p, ph, err := s.batch(stages, efforts, uint64(b), nil)
		if errors.Is(err, errBudget) && len(vs) >= 2 {
			est.Notes = append(est.Notes, fmt.Sprintf("stopped by the event budget (%d events) before the precision target ±%g", s.budget, prec))
			break
		}
		if err != nil {
			return nil, err
		}
		raw, halves = append(raw, p), append(halves, ph)
		v := p
		if extrapolate {
			v = p + (p-ph)/(s.end.Seconds()/2)*(opt.Within-s.end).Seconds()
		}
		vs = append(vs, v)
		if observeBatch != nil {
			observeBatch(v)
		}
		mean, half = tInterval(vs)
		if len(vs) >= minBatches && mean > 0 && half <= prec*mean {
			break
		}
		if s.events >= s.budget {
			est.Notes = append(est.Notes, fmt.Sprintf("stopped by the event budget (%d events) before the precision target ±%g", s.budget, prec))
			break
		}
	}
	if len(vs) == maxBatches && !(mean > 0 && half <= prec*mean) {
		est.Notes = append(est.Notes, fmt.Sprintf("stopped after %d batches, the most run, before the precision target ±%g (reached ±%.3g)", maxBatches, prec, half/max(mean, math.SmallestNonzeroFloat64)))
	}
	est.Batches = len(vs)
	est.PrecisionTarget = prec
	if mean > 0 {
		est.PrecisionReached = half / mean
	}
	est.Probability = mean
	est.CI95 = [2]float64{max(mean-half, 0), min(mean+half, 1)}
	if extrapolate {
		// Passages as a Poisson process of the estimated rate: P(τ ≤ T)
		// = 1 − e^{−expected count}, a monotone map of the interval.
		f := func(x float64) float64 { return -math.Expm1(-max(x, 0)) }
		est.Probability, est.CI95 = f(mean), [2]float64{f(mean - half), f(mean + half)}
		est.HorizonS = s.end.Seconds()
		est.HorizonProbability, _ = tInterval(raw)
		rates := make([]float64, len(raw))
		for i := range raw {
			rates[i] = (raw[i] - halves[i]) / (s.end.Seconds() / 2)
		}
		r, rh := tInterval(rates)
		est.RatePerS, est.RateCI95 = r, &[2]float64{max(r-rh, 0), r + rh}
		est.Notes = append(est.Notes, fmt.Sprintf("simulated %v and extrapolated to %v at the rate the level was reached in the second half (%v to %v), as a Poisson process: valid when runs forget the empty start within the first half", s.end, opt.Within, s.end/2, s.end))
	}
	if mean == 0 {
		// No batch reached the target: the rule of three bounds the
		// probability by 3 over the runs that tried the last stage.
		est.CI95 = [2]float64{0, min(3/float64(len(vs)*efforts[len(efforts)-1]), 1)}
		est.Notes = append(est.Notes, "no run reached the level: the upper bound is the rule of three on the final-stage runs")
	}
	if opt.MeanTime {
		p, _ := tInterval(raw)
		ph, _ := tInterval(halves)
		est.MeanTimeS, est.MeanTimeNote = exponentialMean(ph, p, s.end)
	}
	if s.noFork != "" {
		est.Notes = append(est.Notes, "crossing states replayed rather than copied: "+s.noFork)
	}
	est.Runs, est.Events, est.Replayed = s.runs, s.events, s.replayed
	return est, nil
}

// exponentialMean is the mean time to the level under the law rare first
// passages follow once a run has forgotten its start (Keilson, 1979): τ ≈
// d + an exponential of mean m, so P(τ ≤ t) = 1 − e^{−(t−d)/m} for t > d.
// The probabilities at T/2 and T fix m and d, and the mean is d + m. It
// needs the horizon's second half to be past the start's influence: a
// horizon several times the queue's relaxation time.
func exponentialMean(pHalf, p float64, within time.Duration) (*float64, string) {
	if pHalf <= 0 || p <= pHalf || p >= 1 {
		return nil, "no mean time: too few runs reached the level in the horizon's first half to fit the exponential law"
	}
	h := within.Seconds() / 2
	m := h / math.Log((1-pHalf)/(1-p))
	d := h + m*math.Log1p(-pHalf)
	mt := d + m
	return &mt, fmt.Sprintf("fitted: τ ≈ %.3gs + exponential of mean %.3gs, from P(τ ≤ H/2) = %.3g and P(τ ≤ H), H = %v the simulated horizon; valid when H is long against the time runs take to forget the empty start", d, m, pHalf, within)
}

func (o Options) validate() error {
	switch {
	case o.Within <= 0:
		return fmt.Errorf("within %v: the horizon must be positive", o.Within)
	case o.Within > topology.MaxDuration:
		return fmt.Errorf("within %v: must be at most %v, a scenario's longest duration", o.Within, topology.MaxDuration)
	case !(o.Precision >= 0 && o.Precision < 1): // NaN too
		return fmt.Errorf("precision %g: want a relative half-width in (0, 1), e.g. 0.2", o.Precision)
	case o.Effort < 0 || o.Effort == 1:
		return fmt.Errorf("effort %d: want at least 2 runs per level", o.Effort)
	case o.Effort > MaxEffort:
		return fmt.Errorf("effort %d: must be at most %d runs per level", o.Effort, MaxEffort)
	case o.Horizon < 0:
		return fmt.Errorf("horizon %v: want a positive duration, or 0 for the whole of within", o.Horizon)
	}
	return nil
}

func (s *splitter) effort(opt Options) int {
	if opt.Effort > 0 {
		return opt.Effort
	}
	return DefaultEffort
}

func newSplitter(ctx context.Context, sc *topology.Scenario, opt Options) (*splitter, error) {
	if sc == nil {
		return nil, errors.New("collapse: nil scenario")
	}
	if err := opt.validate(); err != nil {
		return nil, err
	}
	end := opt.Within
	if opt.Horizon > 0 && opt.Horizon < end {
		end = opt.Horizon
	}
	c := *sc
	c.Duration, c.Warmup = end, 0
	s := &splitter{ctx: ctx, sc: &c, level: opt.Level, end: end, seed: opt.Seed, budget: opt.MaxEvents,
		fork: opt.Effort <= maxForkEffort}
	if s.seed == 0 {
		s.seed = sc.Seed
	}
	if s.budget == 0 {
		s.budget = DefaultMaxEvents
	}
	t, err := sim.Start(&c)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	if s.g0, err = newGauge(opt.Level, t); err != nil {
		return nil, err
	}
	g := s.g0.clone()
	s.v0 = g.read(t)
	return s, nil
}

// start begins a run: from the empty start when from is nil, with the
// scenario's streams seeded by seed, or from the state from names.
func (s *splitter) start(from *particle, seed uint64) (*sim.Trajectory, gauge, error) {
	if err := s.ctx.Err(); err != nil {
		return nil, gauge{}, err
	}
	if s.events >= s.budget {
		return nil, gauge{}, fmt.Errorf("%w (%d events)", errBudget, s.budget)
	}
	s.runs++
	if from == nil {
		c := *s.sc
		c.Seed = seed
		t, err := sim.Start(&c)
		return t, s.g0.clone(), err
	}
	if from.t != nil && s.noFork == "" {
		t, err := from.t.Fork(seed)
		if err == nil {
			return t, from.g.clone(), nil
		}
		s.noFork = err.Error()
	}
	t, err := sim.Resume(from.snap, seed)
	return t, from.g.clone(), err
}

// mark is a new maximum of a pilot run: the value and the state there.
type mark struct {
	v float64
	p particle
}

// climb runs from from (nil: the start) until the horizon, the target or
// a scenario limit, and returns each new maximum the run set.
func (s *splitter) climb(from *particle, seed uint64) ([]mark, error) {
	if from != nil && from.over {
		return []mark{{math.Inf(1), *from}}, nil
	}
	t, g, err := s.start(from, seed)
	if err != nil {
		return nil, err
	}
	defer func() { s.events += t.Events(); s.replayed += t.Replayed(); t.Close() }()
	var marks []mark
	best := math.Inf(-1)
	for {
		v := g.read(t)
		if t.Diverged() != "" {
			return append(marks, mark{math.Inf(1), particle{over: true}}), nil
		}
		if v > best {
			best = v
			marks = append(marks, mark{v, particle{snap: t.Snapshot(), g: g.clone()}})
			if v >= s.level.Threshold {
				return marks, nil
			}
		}
		if !t.Step(s.end) {
			if t.Diverged() != "" {
				continue // read once more: reported as over every level
			}
			return marks, nil
		}
	}
}

// pilot explores the way to the target: from the current entrance states
// it climbs effort runs, sets the next level at the highest value a fifth
// of them reached, and continues from where they crossed it, until the
// target. It returns the curve it measured: every value a run reached,
// with the estimated probability of reaching it (the product of the
// earlier levels' shares and the share of the stage's runs that went as
// high), from which place chooses the levels batches use.
func (s *splitter) pilot(effort int) ([]point, error) {
	var from []particle
	var curve []point
	cur, logP := math.Inf(-1), 0.0
	for stage := 0; ; stage++ {
		maxima := make([]float64, effort)
		runs := make([][]mark, effort)
		for i := range effort {
			var p *particle
			if len(from) > 0 {
				p = &from[i%len(from)]
			}
			ms, err := s.climb(p, mix(s.seed, 1<<62, uint64(stage), uint64(i)))
			if err != nil {
				return nil, err
			}
			runs[i] = ms
			if len(ms) > 0 {
				maxima[i] = ms[len(ms)-1].v
			}
		}
		sorted := slices.Clone(maxima)
		sort.Sort(sort.Reverse(sort.Float64Slice(sorted)))
		next := sorted[max(int(math.Ceil(pilotSuccess*float64(effort)))-1, 0)]
		if next <= cur {
			// Fewer than a fifth went higher: take the lowest value above
			// the current level that any run reached.
			next = math.Inf(1)
			for _, v := range maxima {
				if v > cur && v < next {
					next = v
				}
			}
			if math.IsInf(next, 1) && sorted[0] <= cur {
				return nil, fmt.Errorf("collapse: no pilot run of %d went above %g toward %s; raise the effort", effort, cur, s.level)
			}
		}
		next = min(next, s.level.Threshold)
		// The curve between the entrance and next: each value reached
		// there, with the share of the stage's runs that reached it.
		vals := []float64{next}
		for _, v := range maxima {
			if v > cur && v < next {
				vals = append(vals, v)
			}
		}
		slices.Sort(vals)
		vals = slices.Compact(vals)
		if len(vals) > maxStagePoints {
			// A continuous quantity: every run's maximum is a value of its
			// own; keep evenly spaced ones, and next.
			thin := make([]float64, 0, maxStagePoints)
			for i := range maxStagePoints - 1 {
				thin = append(thin, vals[i*(len(vals)-1)/(maxStagePoints-1)])
			}
			vals = append(thin, next)
		}
		for _, v := range vals {
			n := 0
			for _, m := range maxima {
				if m >= v {
					n++
				}
			}
			curve = append(curve, point{v: v, logP: logP + math.Log(float64(n)/float64(effort))})
		}
		logP = curve[len(curve)-1].logP
		if next >= s.level.Threshold {
			return curve, nil
		}
		if stage >= 200 {
			return nil, fmt.Errorf("collapse: more than 200 levels toward %s; the level rises too slowly for splitting", s.level)
		}
		from = from[:0]
		for _, ms := range runs {
			for _, m := range ms {
				if m.v >= next {
					from = append(from, m.p)
					break
				}
			}
		}
		cur = next
	}
}

// point is a value of the level's quantity and the log of the estimated
// probability of reaching it within the horizon.
type point struct{ v, logP float64 }

// maxStagePoints bounds the points of the curve a pilot stage gives place
// (whose search takes the cube of their number).
const maxStagePoints = 16

// minShare bounds from below the share of runs a level placed by place
// may expect to reach it: below it, the pilot's estimate of the curve is
// from a handful of runs, and a batch's stage often has none.
const minShare = 0.05

// place re-places the levels on the curve the pilot measured (ascending,
// ending at the target) and returns them with each one's expected share:
// the pilot's levels, chosen one at a time at a fifth of its runs, land
// where the integer values fall (shares from 0.2 to 0.6, and a last step
// of one value where most runs succeed). Fixed-effort splitting's
// relative variance is near Σ (1−q_k)/(q_k N) over m stages of shares
// q_k (Garvels, 2000), at a cost near m N, so place takes, among the
// points of the curve, the levels minimising m · Σ (1/q_k − 1): for each
// number of stages m the least sum by dynamic programming over the
// points, then the best m. For equal shares that optimum is q ≈ 0.2; the
// points let it merge a near-certain step into its neighbour.
func place(curve []point) (levels, shares []float64) {
	n := len(curve)
	logP := func(i int) float64 { // i = −1 is the start
		if i < 0 {
			return 0
		}
		return curve[i].logP
	}
	stepCost := func(i, j int) float64 {
		q := math.Exp(logP(j) - logP(i))
		if q < minShare && i+1 < j {
			return math.Inf(1)
		}
		return 1/q - 1
	}
	// best[m][j] is the least Σ over m stages ending at point j; from
	// [m][j] the previous point.
	best := [][]float64{}
	from := [][]int{}
	bestM, bestJ := 0, math.Inf(1)
	for m := 1; m <= n; m++ {
		b, f := make([]float64, n), make([]int, n)
		for j := range n {
			b[j], f[j] = math.Inf(1), -2
			if m == 1 {
				b[j], f[j] = stepCost(-1, j), -1
				continue
			}
			for i := m - 2; i < j; i++ {
				if c := best[m-2][i] + stepCost(i, j); c < b[j] {
					b[j], f[j] = c, i
				}
			}
		}
		best, from = append(best, b), append(from, f)
		if j := float64(m) * b[n-1]; j < bestJ {
			bestM, bestJ = m, j
		}
	}
	idx := make([]int, bestM)
	for m, j := bestM, n-1; m >= 1; m-- {
		idx[m-1], j = j, from[m-1][j]
	}
	prev := -1
	for _, j := range idx {
		levels = append(levels, curve[j].v)
		shares = append(shares, math.Exp(logP(j)-logP(prev)))
		prev = j
	}
	return levels, shares
}

// runOverhead is what starting a run costs beyond its events, in events:
// building or copying its state (sim.Start, Trajectory.Fork) took about
// 250 µs a run at 1e-6 on the 1000/s M/M/1 (63 CPU s for 4.5e8 events and
// 1.4e5 runs, events at about 60 ns), as much as 4000 events.
const runOverhead = 4000

// allocate spreads a batch's runs over the stages. Stage k's share q_k,
// drawn from N_k runs, adds about (1−q_k)/(q_k N_k) to the batch's
// relative variance and costs N_k c_k, c_k the cost of one of its runs
// (its events, measured by the calibration batch, plus runOverhead). The
// variance for a given cost is least with N_k ∝ √(v_k / c_k), v_k =
// (1−q_k)/q_k (Neyman's allocation). The first stage's runs simulate the
// whole horizon when they fail, the later ones stop at a lost roulette,
// so the later stages get more runs for the same cost. The stage with the
// least √(v/c) keeps effort; none gets more than maxAllocation times it
// (each run that reaches a level may keep its state alive until the next
// stage, bounded by maxForkEffort).
func allocate(shares, cost []float64, uniform []int, effort int) []int {
	r := make([]float64, len(shares))
	least := math.Inf(1)
	for k, q := range shares {
		v := max((1-q)/q, 0.01)
		r[k] = math.Sqrt(v / (cost[k] + runOverhead))
		least = min(least, r[k])
	}
	top := max(effort, min(maxAllocation*effort, maxForkEffort, MaxEffort))
	out := slices.Clone(uniform)
	for k := range out {
		out[k] = min(top, max(effort, int(math.Round(float64(effort)*r[k]/least))))
	}
	return out
}

// maxAllocation bounds the runs allocate gives a stage, as a multiple of
// the effort.
const maxAllocation = 5

// stage is one level of a batch: the runs start from the states where the
// previous level was crossed (from the empty start for the first) and try
// to reach target. A run that falls back from its entrance has little
// chance left of reaching target within the horizon, yet would simulate
// the rest of the horizon to find out. So it plays Russian roulette the
// first time it falls below each lower level (rungs, highest first): it
// goes on with a probability and its weight divided by it, so the
// expected weighted count of runs reaching target is unchanged (the
// estimate stays unbiased) while most hopeless continuations stop early.
type stage struct {
	target float64
	rungs  []rung
}

// rung is a roulette: below level, a run goes on with probability survive.
type rung struct {
	below, survive float64
}

// minSurvive bounds a roulette's survival probability from below.
const minSurvive = 0.05

// stages sets out the levels as batch runs them. A run of stage k (entered
// at level k−1) plays roulette below level j, for j = k−2 down to 0, with
// the pilot's share of runs from level j that reached level j+1 as its
// survival probability: a run just below level j is worth about that
// share of one at level j+1 (it must climb back over j+1 to count), so a
// survivor's weight matches its chance of still counting and the
// roulettes add little variance — the second moment of a run's weighted
// count stays near the product of the shares still to climb, whatever the
// depth it fell to. Every stage after the first plays a last roulette
// when the run falls back to the quantity's value at the start, with the
// first level's share as its survival probability: from there the run is
// worth at most a fresh run from the start (which reaches level 0 with
// that share, over the whole horizon rather than what is left of it). So
// the second stage's runs, which have no level below their entrance,
// stop early too instead of simulating the rest of the horizon.
func (s *splitter) stages(levels, shares []float64) []stage {
	st := make([]stage, len(levels))
	for k, l := range levels {
		st[k].target = l
		for j := k - 2; j >= 0; j-- {
			st[k].rungs = append(st[k].rungs, rung{below: levels[j], survive: min(1, max(minSurvive, shares[j+1]))})
		}
		if below := math.Nextafter(s.v0, math.Inf(1)); k > 0 && below <= levels[0] {
			st[k].rungs = append(st[k].rungs, rung{below: below, survive: min(1, max(minSurvive, shares[0]))})
		}
	}
	return st
}

// reach runs from from (nil: the start) until the quantity reaches the
// stage's target (returning the state there, with its weight) or the
// horizon passes, or the run loses a roulette (stage).
func (s *splitter) reach(from *particle, seed uint64, st stage, keep bool) (particle, bool, error) {
	if from != nil && from.over {
		return particle{over: true, w: 1}, true, nil
	}
	t, g, err := s.start(from, seed)
	if err != nil {
		return particle{}, false, err
	}
	kept := false
	defer func() {
		s.events += t.Events()
		s.replayed += t.Replayed()
		if !kept {
			t.Close()
		}
	}()
	w, r := 1.0, 0
	for {
		v := g.read(t)
		if t.Diverged() != "" {
			return particle{over: true, w: w}, true, nil
		}
		if v >= st.target {
			q := particle{snap: t.Snapshot(), g: g, w: w}
			if keep && t.Past() >= minForkPast {
				q.t, kept = t, true
			}
			return q, true, nil
		}
		for r < len(st.rungs) && v < st.rungs[r].below {
			if unit(mix(seed, 1<<61, uint64(r))) >= st.rungs[r].survive {
				return particle{}, false, nil
			}
			w /= st.rungs[r].survive
			r++
		}
		if !t.Step(s.end) && t.Diverged() == "" {
			return particle{}, false, nil
		}
	}
}

// batch runs one fixed-effort splitting estimate over the stages, efforts[k]
// runs in stage k, and returns it: the product of the weighted shares of
// runs that reached each level; and the same product with the last share
// counting only runs that reached the target in the horizon's first half,
// the estimate of P(τ ≤ T/2) (an unbiased one too: fixed-effort splitting
// weighs each run reaching the target by the product of the earlier
// shares, whatever is measured on it). The next stage's runs start from
// the states reached, as many from each as its weight's share of the
// stage's effort (resample). When cost is not nil, cost[k] receives the
// events a run of stage k spent, on average, replays included.
func (s *splitter) batch(stages []stage, efforts []int, b uint64, cost []float64) (p, pHalf float64, err error) {
	p = 1.0
	var from, next []particle
	for k, st := range stages {
		next = next[:0]
		e0 := s.events
		for i := range efforts[k] {
			var src *particle
			if k > 0 {
				src = &from[i%len(from)]
			}
			q, ok, err := s.reach(src, mix(s.seed, b, uint64(k), uint64(i)), st, s.fork && k < len(stages)-1)
			if err != nil {
				release(from)
				release(next)
				return 0, 0, err
			}
			if ok {
				next = append(next, q)
			}
		}
		if cost != nil {
			cost[k] = float64(s.events-e0) / float64(efforts[k])
		}
		release(from)
		if len(next) == 0 {
			return 0, 0, nil
		}
		var sum float64
		for _, q := range next {
			sum += q.w
		}
		n := float64(efforts[k])
		if k == len(stages)-1 {
			var early float64
			for _, q := range next {
				if q.over || q.snap.At() <= s.end/2 {
					early += q.w
				}
			}
			pHalf = p * early / n
			p *= sum / n
			break
		}
		p *= sum / n
		from, next = resample(next, sum, efforts[k+1], unit(mix(s.seed, b, uint64(k), 1<<60))), from
	}
	return p, pHalf, nil
}

// resample returns the states the next stage starts from. With equal
// weights it keeps them as they are (batch spreads its runs evenly over
// them); otherwise it draws effort of them by systematic resampling with
// offset u in [0, 1): each as many times, within one, as its weight's
// share of effort, as fixed-effort splitting with weights needs to stay
// unbiased.
func resample(ps []particle, sum float64, effort int, u float64) []particle {
	equal := true
	for _, q := range ps {
		equal = equal && q.w == ps[0].w
	}
	if equal {
		return ps
	}
	out := make([]particle, 0, effort)
	step := sum / float64(effort)
	x, acc := u*step, 0.0
	for _, q := range ps {
		acc += q.w
		for x < acc && len(out) < effort {
			out = append(out, q)
			x += step
		}
	}
	for len(out) < effort { // rounding: the last state takes the rest
		out = append(out, ps[len(ps)-1])
	}
	return out
}

// unit maps a hash to [0, 1).
func unit(h uint64) float64 { return float64(h>>11) / (1 << 53) }

// tInterval returns the mean of xs and the half-width of its Student-t
// 95 % interval.
func tInterval(xs []float64) (mean, half float64) {
	n := float64(len(xs))
	for _, x := range xs {
		mean += x
	}
	mean /= n
	if len(xs) < 2 {
		return mean, math.Inf(1)
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	sd := math.Sqrt(ss / (n - 1))
	q := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: n - 1}.Quantile(0.975)
	return mean, q * sd / math.Sqrt(n)
}

// mix derives a run's seed from the estimate's seed and the run's place,
// with SplitMix64's finalizer so that neighbouring places get unrelated
// seeds.
func mix(seed uint64, parts ...uint64) uint64 {
	h := seed
	for _, p := range parts {
		h ^= p + 0x9e3779b97f4a7c15 + (h << 6) + (h >> 2)
		h ^= h >> 30
		h *= 0xbf58476d1ce4e5b9
		h ^= h >> 27
		h *= 0x94d049bb133111eb
		h ^= h >> 31
	}
	return h
}
