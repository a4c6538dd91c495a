package edge

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stormsim/stormsim/load/internal/clock"
	"github.com/stormsim/stormsim/load/transport"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/model"
	"github.com/stormsim/stormsim/policies"
	"github.com/stormsim/stormsim/topology"
)

// errAbandoned is the cancellation cause of attempts that the call no
// longer waits for and cancels (a hedged call won with cancel_others, or
// the caller gave up).
var errAbandoned = errors.New("load: attempt abandoned by its call")

// EdgeClient sends logical calls over one call edge through the edge's
// call policy: it drives a policies.Call — the same state machine the
// simulator drives — with real HTTP attempts and the run's clock (the
// wall clock since the run's start, in production). It is safe for
// concurrent use: every step of every
// call on the edge runs under one mutex, because the edge's budget,
// breaker and counters are shared by all of its calls.
type EdgeClient struct {
	root      context.Context                                                                       // EdgeConfig.Root
	onAttempt func(a *transport.Attempt, start time.Time, took time.Duration, ans transport.Answer) // EdgeConfig.OnAttempt

	// clk is the run's clock: policies see clk.Now(), the call's waits
	// (backoff, hedge delays) and attempt timeouts run on it.
	clk  clock.Clock
	mu   *sync.Mutex
	edge *policies.Edge
	// tr sends every attempt (but one whose Via is set), chosen once when
	// the edge is built. pooled: it keeps no reference to an attempt it
	// answered (transport.Lean), so inline attempts come from a pool.
	tr     transport.Transport
	pooled bool
	// bal picks which of urls (the callee's replicas, parsed in parsed)
	// each attempt goes to, under mu; nil for a callee with one replica.
	// otherHost: retries avoid the replicas their call tried.
	bal       *model.Balancer
	urls      []string
	parsed    []*url.URL
	otherHost bool

	// Transport failures of attempts, by kind (KindNone counts answers).
	kinds [transport.NumKinds]atomic.Int64
	// HTTP answers by status code.
	statuses [600]atomic.Int64
	calls    sync.Pool
	// Phases records every attempt's phases (SendTraced).
	Phases transport.PhaseRecorder
	// phaseAware: the edge has phase timeouts, a transparent retry or
	// retries not_sent, so a not-sent failure reaches it as NotSent.
	phaseAware bool
	// lat, if set, times every attempt as the caller sees it (the
	// driver's edge to a target whose own latency it cannot see).
	lat *AttemptLatency
}

// EdgeConfig configures an EdgeClient. Edge is required; every other
// field has the default its comment gives.
type EdgeConfig struct {
	// Edge is the edge's policy state (policies.NewEdge).
	Edge *policies.Edge
	// Transport sends the attempts, chosen once for the edge's life; nil
	// means net/http's default client (transport.NewHTTP(nil, false)).
	Transport transport.Transport
	// Epoch is the run's start: the edge's policies see the wall-clock
	// time since it. Zero means when NewEdgeClient is called.
	Epoch time.Time
	// Mu guards the edge's policy state; nil means a mutex of its own.
	// Edges that share policy state — a budget with scope "service" —
	// must share one mutex too.
	Mu *sync.Mutex
	// Root bounds every attempt, abandoned ones included: cancelling it
	// ends them all. Nil means context.Background().
	Root context.Context
	// OnAttempt, if set, is called when each attempt ends, from the
	// goroutine that sent it, with when it started, how long it took and
	// its answer. It must not keep a, which may be reused once it returns.
	OnAttempt func(a *transport.Attempt, start time.Time, took time.Duration, ans transport.Answer)

	// Clock, if set, is the run's clock in place of the wall clock from
	// Epoch (the driver's and serve's, scripted in tests).
	Clock clock.Clock
	// Latency, if set, times every attempt as the caller sees it (the
	// driver's edges to a target whose own latency it cannot see).
	Latency *AttemptLatency
	// Replicas, if set, are the callee's replicas, over which the edge
	// spreads its attempts (NewReplicas); nil: the callee has one. Each
	// edge needs its own (a balancer's state is per caller).
	Replicas *Replicas
}

// NewEdgeClient returns the client of the edge c describes.
func NewEdgeClient(c EdgeConfig) *EdgeClient {
	clk := c.Clock
	if clk == nil {
		clk = clock.NewReal(cmp.Or(c.Epoch, time.Now()))
	}
	mu := c.Mu
	if mu == nil {
		mu = new(sync.Mutex)
	}
	tr := c.Transport
	if tr == nil {
		tr = transport.NewHTTP(nil, false)
	}
	_, pooled := tr.(*transport.Lean)
	ec := &EdgeClient{clk: clk, tr: tr, pooled: pooled, edge: c.Edge, mu: mu, root: c.Root, onAttempt: c.OnAttempt,
		lat: c.Latency, phaseAware: PhaseAware(c.Edge)}
	if r := c.Replicas; r != nil {
		ec.bal, ec.urls, ec.parsed, ec.otherHost = r.bal, r.urls, r.parsed, r.otherHost
	}
	ec.calls.New = func() any { return new(policies.Call) }
	return ec
}

// Sibling returns another client over ec's transport, clock, attempt hook
// and latency tally, with its own policy state edge, root and replicas
// (nil: none): one more instance of a client fleet toward the same target.
func (ec *EdgeClient) Sibling(edge *policies.Edge, root context.Context, reps *Replicas) *EdgeClient {
	return NewEdgeClient(EdgeConfig{Edge: edge, Transport: ec.tr, Root: root, OnAttempt: ec.onAttempt, Clock: ec.clk, Latency: ec.lat,
		Replicas: reps})
}

// Policy is the edge's policy state (EdgeConfig.Edge). Its budget,
// breaker and counters change under the edge's mutex (EdgeConfig.Mu): read
// them with it held while calls run.
func (ec *EdgeClient) Policy() *policies.Edge { return ec.edge }

// Summary is the edge's row of a run's summary, from and to naming its
// ends: its policy counters, breaker openings, ejections and phases.
func (ec *EdgeClient) Summary(from, to string) metrics.EdgeSummary {
	var opens int64
	if _, n, ok := ec.BreakerState(); ok {
		opens = n
	}
	es := metrics.EdgeSummaryOf(from, to, ec.Stats(), opens)
	es.Ejections = ec.Ejections()
	es.Phases = ec.Phases.Report()
	return es
}

// PhaseAware reports whether edge has phase timeouts, a transparent retry
// or retries not_sent, so that a not-sent failure must reach it as NotSent.
func PhaseAware(edge *policies.Edge) bool {
	return edge.Transparent || edge.RetryOn.Has(policies.NotSent) || !edge.Phases.IsZero()
}

// Replicas are the replicas of an edge's callee and how its attempts are
// spread over them (EdgeConfig.Replicas).
type Replicas struct {
	bal       *model.Balancer
	urls      []string
	parsed    []*url.URL
	otherHost bool
}

// NewReplicas returns the replicas of a callee at urls, spread by call's
// balance, outlier_detection and retry.other_host, drawing from rng: the
// simulator's balancer (model.Balancer), fed the run's clock. local, if
// not nil, marks the replicas in the caller's zone, which the balancer
// prefers (zone_aware; model.Balancer.PreferLocal). Attempts whose URL the
// call's template gives are sent to the replica picked instead.
func NewReplicas(urls []string, call *topology.Call, rng *rand.Rand, local []bool) (*Replicas, error) {
	bal, err := model.NewBalancer(call.Balance, len(urls), call.OutlierDetection, rng)
	if err != nil {
		return nil, err
	}
	if err := bal.FollowRetry(call.Retry); err != nil {
		return nil, err
	}
	parsed := make([]*url.URL, len(urls))
	for i, u := range urls {
		if parsed[i], err = url.Parse(u); err != nil {
			return nil, fmt.Errorf("replica %d: %w", i, err)
		}
	}
	if local != nil {
		bal.PreferLocal(local)
	}
	return &Replicas{bal: bal, urls: urls, parsed: parsed, otherHost: call.Retry.OtherHost}, nil
}

// Ejections is the number of replicas the edge's outlier detection ejected.
func (ec *EdgeClient) Ejections() int64 {
	if ec.bal == nil {
		return 0
	}
	ec.mu.Lock()
	defer ec.mu.Unlock()
	return ec.bal.Ejections()
}

// pick chooses the replica of attempt a (under mu) and points a at it.
func (ec *EdgeClient) pick(a *transport.Attempt, tried *[]int) {
	ec.mu.Lock()
	i := ec.bal.PickNext(ec.clk.Now(), ec.otherHost, tried)
	ec.mu.Unlock()
	a.URL, a.Parsed, a.Replica = ec.urls[i], ec.parsed[i], i
}

// phases is where attempt a's phases are recorded: nowhere for a warm-up
// attempt, which no counter of the edge counts (EdgeStats neither).
func (ec *EdgeClient) phases(a *transport.Attempt) *transport.PhaseRecorder {
	if a.Warmup {
		return nil
	}
	return &ec.Phases
}

// ended accounts for attempt a, sent at start, ending with ans: the
// balancer's view, OnAttempt, the attempt latency, and the transport
// counters. Every
// attempt sent after the warm-up is counted once, when it ends, in the
// one way it ended: answered (by its status), or without an answer by
// the kind its transport classified (ClassifyError): one whose call let
// go of it first (a hedge's loser, a call given up) or whose run stopped
// is canceled, as the phase recorder also sees it; a hedge's loser that
// is answered anyway is counted by its status. So the kinds add up to the
// policy's attempts sent (EdgeStats.Attempts), as docs/concepts.md
// states.
func (ec *EdgeClient) ended(ctx context.Context, a *transport.Attempt, start time.Duration, ans transport.Answer) {
	ec.settle(ctx, a, ans)
	ec.observe(a, start, ans)
	ec.timed(ctx, a, start, ans)
	if a.Warmup {
		return
	}
	k := ans.Kind
	ec.kinds[k].Add(1)
	if st := ans.Status; k == transport.KindNone && st > 0 && st < len(ec.statuses) {
		ec.statuses[st].Add(1)
	}
}

// settle tells the balancer that attempt a, sent to a replica, ended with
// ans. An attempt cancelled from above (its call abandoned it, or the run
// ended: ctx is done) only stops being outstanding, its answer unknown to
// the caller; its own timeout counts as a failure.
func (ec *EdgeClient) settle(ctx context.Context, a *transport.Attempt, ans transport.Answer) {
	if ec.bal == nil {
		return
	}
	counted := ctx.Err() == nil
	ec.mu.Lock()
	ec.bal.Done(ec.clk.Now(), a.Replica, ans.Outcome, counted)
	ec.mu.Unlock()
}

// Stats returns a copy of the edge's policy counters.
func (ec *EdgeClient) Stats() policies.EdgeStats {
	ec.mu.Lock()
	defer ec.mu.Unlock()
	return ec.edge.Stats
}

// BreakerState returns the edge breaker's state now, and false without a breaker.
func (ec *EdgeClient) BreakerState() (policies.BreakerState, int64, bool) {
	ec.mu.Lock()
	defer ec.mu.Unlock()
	if ec.edge.Breaker == nil {
		return 0, 0, false
	}
	return ec.edge.Breaker.State(ec.clk.Now()), ec.edge.Breaker.Opens(), true
}

// BudgetLevel returns the edge budget's level now, and false without a budget.
func (ec *EdgeClient) BudgetLevel() (float64, bool) {
	ec.mu.Lock()
	defer ec.mu.Unlock()
	if ec.edge.Budget == nil {
		return 0, false
	}
	return ec.edge.Budget.Level(ec.clk.Now()), true
}

// Kinds returns how many attempts ended with each transport kind.
func (ec *EdgeClient) Kinds() [transport.NumKinds]int64 {
	var out [transport.NumKinds]int64
	for i := range out {
		out[i] = ec.kinds[i].Load()
	}
	return out
}

// Statuses returns how many attempts were answered with each HTTP status.
func (ec *EdgeClient) Statuses() map[int]int64 {
	out := make(map[int]int64)
	for i := range ec.statuses {
		if n := ec.statuses[i].Load(); n > 0 {
			out[i] = n
		}
	}
	return out
}

// CallResult is how one logical call over an edge ended.
type CallResult struct {
	Outcome policies.Outcome
	Result  policies.CallResult
	// Attempts counts the attempts numbered, fast fails included.
	Attempts int
}

type answer struct {
	k int
	a transport.Answer
}

// callRun is the driver-side state of one logical call.
type callRun struct {
	mu      sync.Mutex
	pending int  // attempt goroutines still running
	done    bool // the call finished; the last goroutine out cancels ctx
	cancel  context.CancelCauseFunc
}

func (r *callRun) exit() {
	r.mu.Lock()
	r.pending--
	last := r.done && r.pending == 0
	r.mu.Unlock()
	if last {
		r.cancel(errAbandoned)
	}
}

// finish marks the call over. With cancelAll, attempts still in flight are
// cancelled now (their connections close, which a callee with
// cancel_on_timeout notices); otherwise they run on, ignored, until they
// answer or time out.
func (r *callRun) finish(cancelAll bool) {
	r.mu.Lock()
	r.done = true
	idle := r.pending == 0
	r.mu.Unlock()
	if cancelAll || idle {
		r.cancel(errAbandoned)
	}
}

// Do runs one logical call: it sends attempts built from tmpl (its Number
// and Remaining are filled per attempt) as the call policy asks, and
// returns when the call finishes. ctx ending aborts the call (its attempts
// are cancelled and the result is Unknown). wg, if not nil, tracks the
// attempt goroutines, which may outlive Do when they are abandoned rather
// than cancelled; each is bounded by its attempt timeout or ctx.
func (ec *EdgeClient) Do(ctx context.Context, opt policies.CallOptions, tmpl *transport.Attempt, wg *sync.WaitGroup) CallResult {
	return ec.DoStarted(ctx, opt, tmpl, wg, nil)
}

// DoStarted is Do, calling started, if set, once the call policy decided the
// call's start: with true when it goes on (an attempt is sent or waited
// for), false when it finished at once (a breaker open, a budget spent),
// before Do returns. A parallel step needs it to start its members in
// order (model.Quorum).
func (ec *EdgeClient) DoStarted(ctx context.Context, opt policies.CallOptions, tmpl *transport.Attempt, wg *sync.WaitGroup, started func(bool)) CallResult {
	c := ec.calls.Get().(*policies.Call)
	defer ec.calls.Put(c)
	d := &doing{ec: ec, c: c, ctx: ctx, opt: opt, tmpl: tmpl, wg: wg}
	defer d.stopTimer()
	ec.mu.Lock()
	act := c.Start(ec.clk.Now(), ec.edge, opt)
	ec.mu.Unlock()
	if started != nil {
		started(act.Kind != policies.Finish)
	}
	for {
		switch act.Kind {
		case policies.Send:
			if next, inline := d.send(act); inline {
				act = next
				continue
			}
		case policies.Finish:
			d.finish(act.CancelOthers || ctx.Err() != nil)
			return CallResult{Outcome: act.Outcome, Result: act.Result, Attempts: c.Attempts()}
		}
		var done bool
		if act, done = d.await(act); done {
			d.finish(true)
			return CallResult{Outcome: c.Outcome(), Result: c.Result(), Attempts: c.Attempts()}
		}
	}
}

// doing is the state of one Do: the call machine and what drives it.
type doing struct {
	ec   *EdgeClient
	c    *policies.Call
	ctx  context.Context
	opt  policies.CallOptions
	tmpl *transport.Attempt
	wg   *sync.WaitGroup
	// What attempts sent from goroutines need, made for the first one
	// (spawning): most calls send every attempt inline and need none of
	// it. cctx bounds them, run counts them, and answers holds each one's
	// answer — all of them, so an abandoned attempt never blocks.
	cctx    context.Context
	run     *callRun
	answers chan answer
	timer   clock.Timer
	timerC  <-chan time.Time
	tried   []int // replicas tried, with retry.other_host or the proxies' rules
}

// spawning makes what attempts sent from goroutines need, once.
func (d *doing) spawning() {
	if d.run != nil {
		return
	}
	root := d.ec.root
	if root == nil {
		root = context.Background()
	}
	cctx, cancel := context.WithCancelCause(WithSpanOf(root, d.ctx))
	d.cctx, d.run = cctx, &callRun{cancel: cancel}
	d.answers = make(chan answer, max(d.ec.edge.MaxAttempts, d.ec.edge.HedgeMax))
}

// finish marks the call over for its attempts in goroutines, if any
// (callRun.finish).
func (d *doing) finish(cancelAll bool) {
	if d.run != nil {
		d.run.finish(cancelAll)
	}
}

func (d *doing) stopTimer() {
	if d.timer != nil {
		d.timer.Stop()
	}
}

// leanAttempts holds the Attempts of attempts sent inline by the lean
// client, so that they cost no allocation.
var leanAttempts = sync.Pool{New: func() any { return new(transport.Attempt) }}

// attempt builds the attempt the action sends: its number, and the
// deadline left when the call propagates one.
func (d *doing) attempt(act policies.Action) transport.Attempt {
	a := *d.tmpl
	a.Number = act.Attempt
	a.Remaining = 0
	if d.opt.HasDeadline && d.tmpl.Remaining > 0 {
		a.Remaining = max(d.opt.Deadline-d.ec.clk.Now(), time.Microsecond)
	}
	if d.ec.bal != nil {
		d.ec.pick(&a, &d.tried)
	}
	return a
}

// send sends the attempt of a Send action. When nothing can happen before
// it ends but its own timeout or ctx, it is sent from this goroutine,
// without a goroutine and channel hop, and inline is true with the call's
// next action; otherwise it runs in its own goroutine.
func (d *doing) send(act policies.Action) (next policies.Action, inline bool) {
	ec := d.ec
	if ec.edge.Hedger == nil && !act.Wake && d.c.InFlight() == 1 {
		built := d.attempt(act)
		var a *transport.Attempt
		if ec.pooled && built.Parsed != nil {
			// The lean client (sendInline's choice for it) keeps no
			// reference to an attempt it has answered: its Attempt goes
			// back to a pool.
			a = leanAttempts.Get().(*transport.Attempt)
			defer func() { *a = transport.Attempt{}; leanAttempts.Put(a) }()
		} else {
			a = new(transport.Attempt)
		}
		*a = built
		an := answer{k: a.Number, a: ec.sendInline(d.ctx, a, act.Timeout)}
		if d.ctx.Err() != nil {
			ec.mu.Lock()
			defer ec.mu.Unlock()
			return d.c.Abort(ec.clk.Now()), true
		}
		return ec.answered(d.c, an), true
	}
	d.spawning()
	d.run.mu.Lock()
	d.run.pending++
	d.run.mu.Unlock()
	if d.wg != nil {
		d.wg.Add(1)
	}
	a := new(transport.Attempt)
	*a = d.attempt(act)
	go ec.attempt(d.cctx, d.run, a, act.Timeout, d.answers, d.wg)
	return act, false
}

// await waits for what the call waits on (an answer, its wake-up time, or
// ctx ending) and returns its next action; done means ctx ended a call
// that had already finished.
func (d *doing) await(act policies.Action) (next policies.Action, done bool) {
	ec := d.ec
	var wake <-chan time.Time
	if act.Wake {
		w := act.WakeAt - ec.clk.Now()
		if d.timer == nil {
			d.timer, d.timerC = ec.clk.NewTimer(w)
		} else {
			d.timer.Reset(w)
		}
		wake = d.timerC
	}
	select {
	case an := <-d.answers:
		next = ec.answered(d.c, an)
	case <-wake:
		ec.mu.Lock()
		next = d.c.Wake(ec.clk.Now())
		ec.mu.Unlock()
	case <-d.ctx.Done():
		ec.mu.Lock()
		next = d.c.Abort(ec.clk.Now())
		ec.mu.Unlock()
		if next.Kind != policies.Finish {
			// Already finished: cannot happen while we loop, but never spin.
			return next, true
		}
	}
	if next.Kind == policies.Wait && d.timer != nil && !next.Wake {
		d.timer.Stop()
	}
	return next, false
}

// answered reports an attempt's answer to the call.
func (ec *EdgeClient) answered(c *policies.Call, an answer) policies.Action {
	ec.mu.Lock()
	defer ec.mu.Unlock()
	now := ec.clk.Now()
	if an.a.Phase == transport.PhasePool && an.a.Kind == transport.KindTimeout && an.a.Outcome != policies.Timeout {
		// Its pool_timeout or queue_timeout ran out (classify), not the
		// attempt's timeout: the call machine decides what that means.
		return c.WaitTimedOut(now, an.k)
	}
	if an.a.Outcome == policies.Timeout && an.a.Kind != transport.KindNone {
		return c.TimedOut(now, an.k)
	}
	return c.Answered(now, an.k, an.a.Outcome, an.a.RetryAfter, an.a.DontRetry)
}

// sendInline sends one attempt from the caller's goroutine, bounded by
// timeout (0: none) and by ctx, whose end cancels it.
func (ec *EdgeClient) sendInline(ctx context.Context, a *transport.Attempt, timeout time.Duration) transport.Answer {
	start := ec.attemptStart()
	ans := ec.send(ctx, a, timeout)
	ec.ended(ctx, a, start, ans)
	return ans
}

// attemptStart is when an attempt starts on the run's clock, read only
// for OnAttempt and lat.
func (ec *EdgeClient) attemptStart() time.Duration {
	if ec.onAttempt == nil && ec.lat == nil {
		return 0
	}
	return ec.clk.Now()
}

// timed adds an attempt that started at start to lat, if set.
func (ec *EdgeClient) timed(ctx context.Context, a *transport.Attempt, start time.Duration, ans transport.Answer) {
	if ec.lat != nil {
		ec.lat.add(ctx, a, ec.clk.Now()-start, ans)
	}
}

// observe reports an attempt that started at start to onAttempt.
func (ec *EdgeClient) observe(a *transport.Attempt, start time.Duration, ans transport.Answer) {
	if ec.onAttempt != nil {
		ec.onAttempt(a, clock.Instant(ec.clk, start), ec.clk.Now()-start, ans)
	}
}

// send performs one attempt over the edge's transport (or the attempt's
// own, Via), bounded by timeout (0: none) and by ctx.
func (ec *EdgeClient) send(ctx context.Context, a *transport.Attempt, timeout time.Duration) transport.Answer {
	tr := ec.tr
	if a.Via != nil {
		tr = a.Via
	}
	return tr.Send(ctx, a, transport.Sending{Timeout: timeout, Clock: ec.clk, Phases: ec.edge.Phases,
		PhaseAware: ec.phaseAware, Record: ec.phases(a)})
}

// attempt sends one attempt bounded by timeout (0: none) and reports it.
func (ec *EdgeClient) attempt(ctx context.Context, run *callRun, a *transport.Attempt, timeout time.Duration, answers chan<- answer, wg *sync.WaitGroup) {
	defer func() {
		run.exit()
		if wg != nil {
			wg.Done()
		}
	}()
	answers <- answer{k: a.Number, a: ec.sendInline(ctx, a, timeout)}
}
