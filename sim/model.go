package sim

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/stormsim/stormsim/dist"
	"github.com/stormsim/stormsim/idempotency"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/model"
	"github.com/stormsim/stormsim/policies"
	"github.com/stormsim/stormsim/topology"
)

// Defaults of topology.Limits.
const (
	DefaultMaxInflight  = 1_000_000
	DefaultMaxEvents    = 2_000_000_000
	DefaultMaxEventRate = 20_000_000 // events per simulated second
)

// run is the state of one run: the services, the call edges with their
// policy state, the logical requests and attempts alive, pools of records,
// and the running totals that become the Result.
type run struct {
	eng      *Engine
	sc       *topology.Scenario
	plan     *model.Plan // what build bound the run to
	services []*service
	edges    []*edge
	client   *edge
	// fleet holds the client instances' edges (workload.instances > 1;
	// client is fleet[0]); requests are dealt to them in turn.
	fleet    []*edge
	entry    *service
	arrivals *rand.Rand

	duration, warmup time.Duration
	deadline         time.Duration // workload.deadline, 0 = none
	writeFraction    float64
	closed           bool
	think            time.Duration
	clients          []closedClient
	// open is the open-loop arrival process; nextWrite says whether its
	// scheduled next request is a write.
	open      *model.Arrivals
	nextWrite bool
	nextID    uint64

	// reqRecs holds every request record the run made, alive or pooled,
	// so the end of the run can find the alive ones without the event loop
	// keeping a list of them; liveReqs counts those alive.
	reqRecs  []*request
	liveReqs int

	// clientDirect: root calls skip the policy state machine (plainEdge
	// client edge); their attempts have &direct as caller, a sentinel no
	// other attempt points to (its one slot is written by abandon).
	clientDirect bool
	directTimed  bool // direct root calls have a timeout (the edge's or the deadline's)
	direct       callRun
	// directTmo is a new request's direct timeout (the edge's, cut to the
	// deadline) and directLane its lane: directTimer's arithmetic, done
	// once for the requests startRequest starts, whose deadline is all
	// ahead of them.
	directTmo  time.Duration
	directLane *Lane

	requests pool[request]
	attempts pool[attempt]
	calls    pool[callRun]
	groups   pool[group]

	alive       int // attempt records alive
	maxInflight int
	maxEvents   uint64
	// maxIvEvents bounds the events of one interval (limits.max_event_rate
	// × interval); ivEvents is the event count when the interval began.
	maxIvEvents, ivEvents uint64
	created               uint64
	halted                bool
	status                metrics.Status
	diverged              *divergence
	checkCtx              func() bool

	totals totals
	async  *asyncRun    // the topics, nil without
	cv     *convergeRun // convergence after UNKNOWN, nil without
	// ledger folds each counted write's executions with its outcome:
	// duplicates and unknown outcomes, committed or not
	ledger idempotency.Ledger
	iv     intervalTotals
	lat    *latencyCounts // of requests after warm-up
	ivLat  *latencyCounts // of the current series interval
	// lost holds the latency of failed ([0]) and unknown ([1]) requests
	// after warm-up: how long users waited for nothing.
	lost [2]*latencyCounts

	// srcs are the sources of the run's random streams, in the order
	// build made them, so that a branching trajectory (Resume) can reseed them;
	// a run that never branches only pays for the slice.
	srcs []streamSource

	// effectBits numbers the services with an external effect; irrevocable
	// counts the intents past an irrevocable step (hasIrrevocable: the
	// scenario has one).
	effectBits     int
	irrevocable    metrics.Irrevocable
	hasIrrevocable bool

	// handlers bound once, so scheduling allocates nothing
	hArrival, hClient, hAttArrive, hWorkDone, hReply, hTimeout, hWake, hFault, hDeferred Handler
}

// pool is a free list of records of one kind: a run takes records from it
// and gives them back as soon as nothing refers to them, so its memory grows
// with concurrency and steady state allocates nothing. Whoever takes a record
// resets the fields it uses.
type pool[T any] struct {
	free []*T
	made int // records allocated; once a run has drained, all are free again
}

func (p *pool[T]) get() *T {
	if n := len(p.free); n > 0 {
		x := p.free[n-1]
		p.free = p.free[:n-1]
		return x
	}
	p.made++
	return new(T)
}

func (p *pool[T]) put(x *T) { p.free = append(p.free, x) }

type divergence struct {
	at     time.Duration
	reason string
}

// totals are run-wide counters after warm-up.
type totals struct {
	offered, succeeded, failed, unknown int64
}

// intervalTotals are run-wide counters of the current series interval.
type intervalTotals struct {
	offered, succeeded, failed, unknown int64
	latSum                              float64
}

type closedClient struct{ idx int }

// request is one logical request: a user intent with its deadline, followed
// from arrival to outcome. It stays alive while any attempt made for it is
// alive, so its side-effect executions can be counted exactly.
type request struct {
	// irrevocable: it passed an irrevocable step; effected has the bit of
	// each external effect (effects.bit) its attempts executed.
	irrevocable bool
	effected    uint64

	id          uint64
	arrived     time.Duration
	deadline    time.Duration
	hasDeadline bool
	write       bool
	counted     bool
	result      policies.CallResult
	refs        int  // attempt records + 1 until the outcome is known
	alive       bool // taken from the pool and not yet released
	client      int  // closed-loop client, -1 for open loop
	executions  int
	key         string // idempotency key, made on first use
	open        bool   // its root call has not finished
	// cv follows a write to certainty (converge.go; nil without
	// convergence); factDone: a fact service did its work (the facts a
	// recovery or reconciliation fact query finds)
	cv       *intent
	factDone bool
}

// edge is one call edge: caller → callee under one topology.Call, with its
// policy state.
type edge struct {
	pe        *policies.Edge
	from, to  string
	callee    *service
	net       dist.Sampler
	hasNet    bool
	propagate bool
	out       int // index of the merged edge in the output
	// bal spreads attempts over the callee's replicas (reps); nil when the
	// callee has one replica. otherHost: retries avoid replicas tried.
	bal       *model.Balancer
	reps      []*service
	otherHost bool
	// zone is the caller's; xnet, when hasX, is added each way for an
	// attempt to a replica in another zone (cross_zone_network); baseNet
	// says the edge has a network of its own (hasNet: either).
	zone          string
	xnet          dist.Sampler
	hasX, baseNet bool
	// netMean > 0: the network is exponential with this mean (ns) and the
	// edge has no cross-zone network, so delay draws dist.Exp inline.
	netMean float64
	// per-attempt timers: the edge's timeout, and those cut short by a
	// deadline; and its calls' wake-ups (hedges, backoffs)
	tmoLane, dlLane, wakeLane Lane
	// probe marks a convergence edge (converge.go): its attempts are
	// status or fact queries, answered from records without work.
	probe uint8
	// pools holds the edge's connection pool to each replica of the
	// callee, by replica (nil: attempts are sent at once): pool.size bounds
	// the connections to each replica, as an HTTP client's per-host pool
	// does, and a reset_connections fault on replica r closes pools[r]'s.
	pools []*connPool
	// irrevocable: the edge is a call of an irrevocable step.
	irrevocable bool
	// hop is the call's status queries (calls[].query, edgequery.go), on
	// the call's edge and on the twin its queries travel; nil without.
	hop *hopQuery
}

// step is one entry of a service's calls: members run at once, and the step
// succeeds when need of them succeeded.
type step struct {
	members []*edge
	need    int
	pub     *publisher // a publish step (topics), instead of calls
	// irrevocable: once sent, nothing stops the attempt making the step
	// (topology.Call.Irrevocable).
	irrevocable bool
}

func (m *run) bindHandlers() {
	m.hArrival = func(*Engine, any) { m.openArrival() }
	m.hClient = func(_ *Engine, a any) { m.closedArrival(a.(*closedClient)) }
	m.hAttArrive = func(_ *Engine, a any) { m.arrive(a.(*attempt)) }
	m.hWorkDone = func(_ *Engine, a any) { m.workDone(a.(*attempt)) }
	m.hReply = m.replyHandler()
	m.hTimeout = func(_ *Engine, a any) { m.attemptTimedOut(a.(*attempt)) }
	m.hWake = func(_ *Engine, a any) { m.wake(a.(*callRun)) }
	m.hFault = func(_ *Engine, a any) { a.(*faultEvent).apply(m) }
	m.hDeferred = func(_ *Engine, a any) { m.answerDeferred(a.(*service)) }
}

// build binds a scenario's plan (model.Compile) to a run: a service
// record per replica, an edge per plan edge, engine events for the fault
// windows. The scenario is one topology validated (topology.Load or
// Parse): neither Compile nor build check the values topology checked.
func build(sc *topology.Scenario) (*run, error) {
	src := sc.File
	if src == "" {
		src = "scenario"
	}
	plan, err := model.Compile(sc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", src, err)
	}
	m := newRun(sc)
	m.plan = plan
	b := &builder{m: m, plan: plan, byName: map[string]*service{}, edges: map[*model.Edge]*edge{}, outIdx: map[string]int{},
		budgets: map[string]policies.Budget{}}
	for _, step := range []func() error{b.arrivals, b.services, b.calls, b.faults, b.buildAsync, b.converge} {
		if err := step(); err != nil {
			return nil, fmt.Errorf("%s: %w", src, err)
		}
	}
	m.clientDirect = plainEdge(m.client.pe) && m.client.bal == nil && !m.client.hasX && m.client.pools == nil
	m.directTimed = m.client.pe.Timeout > 0 || m.deadline > 0
	m.directTmo = m.client.pe.Timeout
	if m.deadline > 0 && (m.directTmo == 0 || m.deadline < m.directTmo) {
		m.directTmo = m.deadline
	}
	m.directLane = m.client.timeoutLane(m.directTmo)
	m.direct.slots = []*attempt{nil}
	return m, nil
}

// newRun makes the run's record with its limits.
func newRun(sc *topology.Scenario) *run {
	m := &run{
		eng: NewEngine(), sc: sc, duration: sc.Duration, warmup: sc.Warmup,
		deadline: sc.Workload.Deadline, writeFraction: sc.Workload.WriteFraction,
		maxInflight: sc.Limits.MaxInflight, maxEvents: uint64(sc.Limits.MaxEvents),
		lat: newLatencyCounts(), ivLat: newLatencyCounts(), lost: [2]*latencyCounts{newLatencyCounts(), newLatencyCounts()},
	}
	if m.maxInflight <= 0 {
		m.maxInflight = DefaultMaxInflight
	}
	if m.maxEvents == 0 {
		m.maxEvents = DefaultMaxEvents
	}
	rate := sc.Limits.MaxEventRate
	if rate <= 0 {
		rate = DefaultMaxEventRate
	}
	iv := sc.Interval
	if iv <= 0 {
		iv = time.Second
	}
	m.maxIvEvents = uint64(rate * iv.Seconds())
	m.bindHandlers()
	return m
}

// builder binds a run to its plan, one part at a time.
type builder struct {
	m       *run
	plan    *model.Plan
	reps    [][]*service               // each service's replicas, by plan index
	byName  map[string]*service        // each service's first replica
	edges   map[*model.Edge]*edge      // the edge bound to each plan edge
	outIdx  map[string]int             // output index of each merged edge, by name
	budgets map[string]policies.Budget // service-scoped budgets, by the plan's key
}

// arrivals sets up the open-loop arrival process or the closed clients.
func (b *builder) arrivals() error {
	m, w := b.m, &b.m.sc.Workload
	m.arrivals = m.stream(b.plan.Arrivals.Stream)
	if b.plan.Arrivals.Closed {
		m.closed, m.think = true, w.ThinkTime
		return nil
	}
	m.open = model.NewArrivals(w, m.sc.Duration, m.arrivals)
	return nil
}

// services builds each replica's callee machine.
func (b *builder) services() error {
	m := b.m
	for _, sp := range b.plan.Services {
		reps := make([]*service, 0, len(sp.Replicas))
		var first *service
		for _, rp := range sp.Replicas {
			s, err := newService(m, sp, rp, first)
			if err != nil {
				return fmt.Errorf("services[%d].%w", sp.Index, err)
			}
			reps = append(reps, s)
			first = reps[0]
		}
		for _, s := range reps {
			s.reps = reps
		}
		b.reps = append(b.reps, reps)
		b.byName[sp.Name] = reps[0]
		m.services = append(m.services, reps[0])
	}
	m.entry = m.services[b.plan.Entry]
	return nil
}

// calls binds the client fleet's edges and each replica's steps of calls.
func (b *builder) calls() error {
	for k, pe := range b.plan.Client {
		e, err := b.edge(pe)
		if err != nil {
			return err
		}
		if k == 0 {
			b.m.client = e
		}
		if len(b.plan.Client) > 1 {
			b.m.fleet = append(b.m.fleet, e)
		}
	}
	for i, sp := range b.plan.Services {
		for r, rp := range sp.Replicas {
			rs := b.reps[i][r]
			for j, ps := range rp.Steps {
				st := step{need: ps.Need, irrevocable: sp.Config.Calls[j].Irrevocable}
				b.m.hasIrrevocable = b.m.hasIrrevocable || st.irrevocable
				for _, pe := range ps.Members {
					e, err := b.edge(pe)
					if err != nil {
						return err
					}
					e.irrevocable = st.irrevocable
					st.members = append(st.members, e)
				}
				rs.steps = append(rs.steps, st)
			}
		}
	}
	return nil
}

// edge binds plan edge pe (once: a fan-out's members share it) to an edge
// with its policy state, drawing from the edge's named stream; a
// service-scoped budget is shared by the edges with its key.
func (b *builder) edge(pe *model.Edge) (*edge, error) {
	if e := b.edges[pe]; e != nil {
		return e, nil
	}
	c, field := pe.Call, pe.Field
	callee := b.byName[pe.To]
	cfg := c.EdgeConfig()
	if c.Pool == nil {
		cfg.Timeout = firstByteBound(cfg.Timeout, c.FirstByteTimeout)
	}
	if pe.SharedBudget != "" {
		cfg.Budget = nil
	}
	pol, err := policies.NewEdge(cfg, b.m.stream(pe.Stream))
	if err != nil {
		return nil, fmt.Errorf("%s.%w", field, err)
	}
	if pe.SharedBudget != "" {
		if pol.Budget = b.budgets[pe.SharedBudget]; pol.Budget == nil {
			if pol.Budget, err = policies.NewBudget(*c.Budget); err != nil {
				return nil, fmt.Errorf("%s.%w", field, err)
			}
			b.budgets[pe.SharedBudget] = pol.Budget
		}
	}
	e := &edge{pe: pol, from: pe.From, to: pe.To, callee: callee, propagate: c.PropagateDeadline, zone: pe.Zone}
	if pe.Replicas > 1 {
		e.reps, e.otherHost = callee.reps, c.Retry.OtherHost
		if e.bal, err = model.NewBalancer(c.Balance, pe.Replicas, c.OutlierDetection, b.m.stream(pe.BalanceStream)); err != nil {
			return nil, fmt.Errorf("%s.%w", field, err)
		}
		if err = e.bal.FollowRetry(c.Retry); err != nil {
			return nil, fmt.Errorf("%s.%w", field, err)
		}
		if pe.Local != nil {
			e.bal.PreferLocal(pe.Local)
		}
	}
	if e.net, e.hasNet, err = model.Delay(c.Network, field+".network"); err != nil {
		return nil, err
	}
	e.baseNet = e.hasNet
	if pe.Zone != "" {
		if e.xnet, e.hasX, err = model.Delay(c.CrossZoneNetwork, field+".cross_zone_network"); err != nil {
			return nil, err
		}
		e.hasNet = e.hasNet || e.hasX
	}
	if mean, ok := e.net.ExpMean(); ok && !e.hasX {
		e.netMean = mean
	}
	idx, ok := b.outIdx[pe.Out]
	if !ok {
		idx = len(b.outIdx)
		b.outIdx[pe.Out] = idx
	}
	e.out = idx
	if c.Pool != nil {
		for range callee.reps {
			p, err := newConnPool(b.m, e, c.Pool, field)
			if err != nil {
				return nil, err
			}
			e.pools = append(e.pools, p)
		}
	}
	b.edges[pe] = e
	b.m.edges = append(b.m.edges, e)
	return e, nil
}

// faults schedules each fault window's start and end on the replica it
// hits, in the plan's order.
func (b *builder) faults() error {
	for _, h := range b.plan.Faults {
		rs := b.reps[h.Service][h.Replica]
		b.m.eng.At(h.Fault.At, b.m.hFault, &faultEvent{svc: rs, f: h.Fault, start: true})
		b.m.eng.At(h.Fault.At+h.Fault.For, b.m.hFault, &faultEvent{svc: rs, f: h.Fault, start: false})
	}
	return nil
}
