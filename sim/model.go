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
	async  *asyncRun // the topics, nil without
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
	// pools holds the edge's connection pool to each replica of the
	// callee, by replica (nil: attempts are sent at once): pool.size bounds
	// the connections to each replica, as an HTTP client's per-host pool
	// does, and a reset_connections fault on replica r closes pools[r]'s.
	pools []*connPool
}

// step is one entry of a service's calls: members run at once, and the step
// succeeds when need of them succeeded.
type step struct {
	members []*edge
	need    int
	pub     *publisher // a publish step (topics), instead of calls
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

// build resolves a scenario into a run. The scenario is one topology
// validated (topology.Load or Parse): build checks only what it must to
// wire the run (that names resolve), not the values topology checked.
func build(sc *topology.Scenario) (*run, error) {
	src := sc.File
	if src == "" {
		src = "scenario"
	}
	m := newRun(sc)
	b := &builder{m: m, sc: sc, byName: map[string]*service{}, outIdx: map[string]int{},
		streams: model.EdgeStreams{}, budgets: map[string]policies.Budget{}}
	for _, step := range []func() error{b.arrivals, b.services, b.calls, b.faults, b.buildAsync} {
		if err := step(); err != nil {
			return nil, fmt.Errorf("%s: %w", src, err)
		}
	}
	m.clientDirect = plainEdge(m.client.pe) && m.client.bal == nil && !m.client.hasX && m.client.pools == nil
	m.directTimed = m.client.pe.Timeout > 0 || m.deadline > 0
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
	m.arrivals = m.stream(model.ArrivalsStream)
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

// builder wires a run from its scenario, one part at a time.
type builder struct {
	m       *run
	sc      *topology.Scenario
	byName  map[string]*service
	outIdx  map[string]int // output index of each merged edge, by name
	streams model.EdgeStreams
	budgets map[string]policies.Budget // service-scoped budgets, by caller
}

// arrivals sets up the open-loop arrival process or the closed clients.
func (b *builder) arrivals() error {
	m, w := b.m, &b.sc.Workload
	switch w.Arrival {
	case "", "poisson", "constant":
		m.open = model.NewArrivals(w, b.sc.Duration, m.arrivals)
	case "closed":
		m.closed, m.think = true, w.ThinkTime
	default:
		return fmt.Errorf("workload.arrival: unknown arrival %q (want poisson, constant or closed)", w.Arrival)
	}
	return nil
}

// services builds each service's callee machine; the committing service
// is the model's one rule.
func (b *builder) services() error {
	m := b.m
	committer := b.sc.Committer()
	for i := range b.sc.Services {
		cfg := &b.sc.Services[i]
		reps := make([]*service, 0, cfg.ReplicaCount())
		var first *service
		for r := range cfg.ReplicaCount() {
			s, err := newService(m, i, cfg, i == committer, r, first)
			if err != nil {
				return fmt.Errorf("services[%d].%w", i, err)
			}
			reps = append(reps, s)
			first = reps[0]
		}
		for _, s := range reps {
			s.reps = reps
		}
		b.byName[cfg.Name] = reps[0]
		m.services = append(m.services, reps[0])
	}
	if m.entry = b.byName[b.sc.Workload.Entry]; m.entry == nil {
		return fmt.Errorf("workload.entry: no service named %q", b.sc.Workload.Entry)
	}
	return nil
}

// calls builds the client's edge and each service's steps of calls.
func (b *builder) calls() error {
	client := b.sc.Workload.Client
	client.To = b.sc.Workload.Entry
	var err error
	if b.m.client, err = b.edge(model.Client, "", b.sc.Workload.ZoneOf(0), &client, "workload.client"); err != nil {
		return err
	}
	if n := b.sc.Workload.Instances; n > 1 {
		b.m.fleet = append(make([]*edge, 0, n), b.m.client)
		for k := 1; k < n; k++ {
			e, err := b.edge(model.Client, model.InstanceTag(k), b.sc.Workload.ZoneOf(k), &client, "workload.client")
			if err != nil {
				return err
			}
			b.m.fleet = append(b.m.fleet, e)
		}
	}
	for i, s := range b.m.services {
		for _, rs := range s.reps {
			for j := range s.cfg.Calls {
				st, err := b.step(s.cfg.Name, model.ReplicaTag(rs.rep), s.cfg.ZoneOf(rs.rep), &s.cfg.Calls[j], fmt.Sprintf("services[%d].calls[%d]", i, j))
				if err != nil {
					return err
				}
				rs.steps = append(rs.steps, st)
			}
		}
	}
	return nil
}

// edge builds one call edge from -> c.To with its policy state, drawing
// from the edge's named stream; a service-scoped budget is shared by the
// caller's edges. tag names the caller's replica or client instance ("" for
// the first, whose streams are those of a scenario without replicas).
func (b *builder) edge(from, tag, zone string, c *topology.Call, field string) (*edge, error) {
	callee := b.byName[c.To]
	if callee == nil {
		return nil, fmt.Errorf("%s.to: no service named %q", field, c.To)
	}
	cfg := c.EdgeConfig()
	if c.Pool == nil {
		cfg.Timeout = firstByteBound(cfg.Timeout, c.FirstByteTimeout)
	}
	shared := c.Budget != nil && c.Budget.Scope == "service"
	if shared {
		cfg.Budget = nil
	}
	stream := b.streams.Name(from+tag, c.To)
	pe, err := policies.NewEdge(cfg, b.m.stream(stream))
	if err != nil {
		return nil, fmt.Errorf("%s.%w", field, err)
	}
	if shared {
		if pe.Budget = b.budgets[from+tag]; pe.Budget == nil {
			if pe.Budget, err = policies.NewBudget(*c.Budget, pe.Rand); err != nil {
				return nil, fmt.Errorf("%s.%w", field, err)
			}
			b.budgets[from+tag] = pe.Budget
		}
	}
	e := &edge{pe: pe, from: from, to: c.To, callee: callee, propagate: c.PropagateDeadline, zone: zone}
	if len(callee.reps) > 1 {
		e.reps, e.otherHost = callee.reps, c.Retry.OtherHost
		if e.bal, err = model.NewBalancer(c.Balance, len(callee.reps), c.OutlierDetection, b.m.stream(model.BalanceStream(stream))); err != nil {
			return nil, fmt.Errorf("%s.%w", field, err)
		}
		if err = e.bal.FollowRetry(c.Retry); err != nil {
			return nil, fmt.Errorf("%s.%w", field, err)
		}
		if c.ZoneAware && zone != "" {
			e.bal.PreferLocal(model.LocalReplicas(callee.cfg, zone))
		}
	}
	if e.net, e.hasNet, err = model.Delay(c.Network, field+".network"); err != nil {
		return nil, err
	}
	e.baseNet = e.hasNet
	if zone != "" {
		if e.xnet, e.hasX, err = model.Delay(c.CrossZoneNetwork, field+".cross_zone_network"); err != nil {
			return nil, err
		}
		e.hasNet = e.hasNet || e.hasX
	}
	if mean, ok := e.net.ExpMean(); ok && !e.hasX {
		e.netMean = mean
	}
	name := from + "->" + c.To
	idx, ok := b.outIdx[name]
	if !ok {
		idx = len(b.outIdx)
		b.outIdx[name] = idx
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
	b.m.edges = append(b.m.edges, e)
	return e, nil
}

// step builds one entry of a service's calls: a call, a fan-out of one
// edge or a parallel group, with its quorum (wait_for 0: all of them).
func (b *builder) step(from, tag, zone string, c *topology.Call, field string) (step, error) {
	var st step
	if c.Publish != nil {
		return st, nil // wired by buildAsync
	}
	members := []*topology.Call{c}
	if len(c.Parallel) > 0 {
		members = members[:0]
		for i := range c.Parallel {
			members = append(members, &c.Parallel[i])
		}
	}
	for i, p := range members {
		f := field
		if len(c.Parallel) > 0 {
			f = fmt.Sprintf("%s.parallel[%d]", field, i)
		}
		e, err := b.edge(from, tag, zone, p, f)
		if err != nil {
			return st, err
		}
		for range max(p.Fanout, 1) {
			st.members = append(st.members, e)
		}
	}
	st.need = c.WaitFor
	if st.need <= 0 || st.need > len(st.members) {
		st.need = len(st.members) // topology rejects a wait_for beyond the group
	}
	return st, nil
}

// faults schedules each fault's start and end on its service.
func (b *builder) faults() error {
	for i := range b.sc.Faults {
		f := &b.sc.Faults[i]
		s := b.byName[f.Service]
		if s == nil {
			return fmt.Errorf("faults[%d].service: no service named %q", i, f.Service)
		}
		for _, r := range f.ReplicasHit(s.cfg) {
			rs := s.reps[r]
			b.m.eng.At(f.At, b.m.hFault, &faultEvent{svc: rs, f: f, start: true})
			b.m.eng.At(f.At+f.For, b.m.hFault, &faultEvent{svc: rs, f: f, start: false})
		}
	}
	return nil
}
