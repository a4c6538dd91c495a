package sim

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/stormsim/stormsim/dist"
	"github.com/stormsim/stormsim/idempotency"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/policies"
	"github.com/stormsim/stormsim/topology"
)

// Defaults of topology.Limits.
const (
	DefaultMaxInflight  = 1_000_000
	DefaultMaxEvents    = 2_000_000_000
	DefaultMaxEventRate = 20_000_000 // events per simulated second
)

// model is the state of one run: the services, the call edges with their
// policy state, the logical requests and attempts alive, pools of records,
// and the running totals that become the Result.
type model struct {
	eng      *Engine
	sc       *topology.Scenario
	services []*service
	edges    []*edge
	client   *edge
	entry    *service
	arrivals *rand.Rand

	duration, warmup time.Duration
	deadline         time.Duration // workload.deadline, 0 = none
	writeFraction    float64
	closed           bool
	think            time.Duration
	phase            time.Duration // constant arrivals: start of the current phase
	phaseN           int64         // arrivals since it
	clients          []closedClient
	constant         bool // constant arrivals
	// the schedule segment [segFrom, segUntil) at segRate, cached by rateAt
	segOK             bool
	segFrom, segUntil time.Duration
	segRate           float64
	nextID            uint64

	// reqRecs holds every request record the run made, alive or pooled,
	// so the end of the run can find the alive ones without the event loop
	// keeping a list of them; liveReqs counts those alive.
	reqRecs  []*request
	liveReqs int

	// clientDirect: root calls skip the policy state machine (plainEdge
	// client edge, no workload deadline); their attempts have &direct as
	// caller, a sentinel no other attempt points to.
	clientDirect bool
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
	iv     intervalTotals
	lat    *latencyCounts // of requests after warm-up
	ivLat  *latencyCounts // of the current series interval

	// handlers bound once, so scheduling allocates nothing
	hArrival, hClient, hAttArrive, hWorkDone, hReply, hTimeout, hWake, hFault, hDeferred Handler
}

// pool is a free list of records of one kind: a run takes records from it
// and gives them back as soon as nothing refers to them, so its memory grows
// with concurrency and steady state allocates nothing. Whoever takes a record
// resets the fields it uses.
type pool[T any] struct{ free []*T }

func (p *pool[T]) get() *T {
	if n := len(p.free); n > 0 {
		x := p.free[n-1]
		p.free = p.free[:n-1]
		return x
	}
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
	duplicates, unknownCommitted        int64
	unknownNotCommitted                 int64
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
}

// step is one entry of a service's calls: members run at once, and the step
// succeeds when need of them succeeded.
type step struct {
	members []*edge
	need    int
}

func (m *model) bindHandlers() {
	m.hArrival = func(*Engine, any) { m.openArrival() }
	m.hClient = func(_ *Engine, a any) { m.closedArrival(a.(*closedClient)) }
	m.hAttArrive = func(_ *Engine, a any) { m.arrive(a.(*attempt)) }
	m.hWorkDone = func(_ *Engine, a any) { m.workDone(a.(*attempt)) }
	m.hReply = func(_ *Engine, a any) { m.deliver(a.(*attempt)) }
	m.hTimeout = func(_ *Engine, a any) { m.attemptTimedOut(a.(*attempt)) }
	m.hWake = func(_ *Engine, a any) { m.wake(a.(*callRun)) }
	m.hFault = func(_ *Engine, a any) { a.(*faultEvent).apply(m) }
	m.hDeferred = func(_ *Engine, a any) { m.answerDeferred(a.(*service)) }
}

// build resolves a scenario into a model.
func build(sc *topology.Scenario) (*model, error) {
	src := sc.File
	if src == "" {
		src = "scenario"
	}
	m := &model{
		eng: NewEngine(), sc: sc, duration: sc.Duration, warmup: sc.Warmup,
		deadline: sc.Workload.Deadline, writeFraction: sc.Workload.WriteFraction,
		arrivals:    Stream(sc.Seed, "arrivals"),
		maxInflight: sc.Limits.MaxInflight, maxEvents: uint64(sc.Limits.MaxEvents),
		lat: newLatencyCounts(), ivLat: newLatencyCounts(),
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
	if sc.Duration <= 0 {
		return nil, fmt.Errorf("%s: duration: must be > 0, got %v", src, sc.Duration)
	}
	w := &sc.Workload
	switch w.Arrival {
	case "", "poisson", "constant":
		m.constant = w.Arrival == "constant"
		if w.Rate < 0 {
			return nil, fmt.Errorf("%s: workload.rate: must be ≥ 0, got %v", src, w.Rate)
		}
	case "closed":
		if w.Clients <= 0 {
			return nil, fmt.Errorf("%s: workload.clients: a closed workload needs clients > 0, got %d", src, w.Clients)
		}
		if w.ThinkTime < 0 {
			return nil, fmt.Errorf("%s: workload.think_time: must be ≥ 0, got %v", src, w.ThinkTime)
		}
		m.closed, m.think = true, w.ThinkTime
	default:
		return nil, fmt.Errorf("%s: workload.arrival: unknown arrival %q (want poisson, constant or closed)", src, w.Arrival)
	}
	byName := map[string]*service{}
	for i := range sc.Services {
		cfg := &sc.Services[i]
		s, err := newService(m, i, cfg)
		if err != nil {
			return nil, fmt.Errorf("%s: services[%d].%w", src, i, err)
		}
		if byName[cfg.Name] != nil {
			return nil, fmt.Errorf("%s: services[%d].name: duplicate service %q", src, i, cfg.Name)
		}
		byName[cfg.Name] = s
		m.services = append(m.services, s)
	}
	m.entry = byName[w.Entry]
	if m.entry == nil {
		return nil, fmt.Errorf("%s: workload.entry: no service named %q", src, w.Entry)
	}
	outIdx := map[string]int{}
	var outNames []string
	streamUse := map[string]int{}
	newEdge := func(from string, c *topology.Call, field string, budgets map[string]policies.Budget) (*edge, error) {
		callee := byName[c.To]
		if callee == nil {
			return nil, fmt.Errorf("%s.to: no service named %q", field, c.To)
		}
		name := from + "->" + c.To
		streamName := "edge/" + name
		if n := streamUse[streamName]; n > 0 {
			streamName = fmt.Sprintf("%s#%d", streamName, n)
		}
		streamUse["edge/"+name]++
		cfg := c.EdgeConfig()
		shared := c.Budget != nil && c.Budget.Scope == "service"
		if shared {
			cfg.Budget = nil
		}
		pe, err := policies.NewEdge(cfg, Stream(sc.Seed, streamName))
		if err != nil {
			return nil, fmt.Errorf("%s.%w", field, err)
		}
		if shared {
			if b := budgets[from]; b != nil {
				pe.Budget = b
			} else if pe.Budget, err = policies.NewBudget(*c.Budget, pe.Rand); err != nil {
				return nil, fmt.Errorf("%s.%w", field, err)
			} else {
				budgets[from] = pe.Budget
			}
		}
		e := &edge{pe: pe, from: from, to: c.To, callee: callee, propagate: c.PropagateDeadline}
		if e.net, e.hasNet, err = newDelay(c.Network, field+".network"); err != nil {
			return nil, err
		}
		idx, ok := outIdx[name]
		if !ok {
			idx = len(outNames)
			outIdx[name] = idx
			outNames = append(outNames, name)
		}
		e.out = idx
		m.edges = append(m.edges, e)
		return e, nil
	}
	budgets := map[string]policies.Budget{}
	client := w.Client
	client.To = w.Entry
	var err error
	if m.client, err = newEdge("client", &client, "workload.client", budgets); err != nil {
		return nil, fmt.Errorf("%s: %w", src, err)
	}
	for i, s := range m.services {
		for j := range s.cfg.Calls {
			c := &s.cfg.Calls[j]
			field := fmt.Sprintf("services[%d].calls[%d]", i, j)
			st, err := m.buildStep(s.cfg.Name, c, field, budgets, newEdge)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", src, err)
			}
			s.steps = append(s.steps, st)
		}
	}
	if err := m.markCommitter(); err != nil {
		return nil, fmt.Errorf("%s: %w", src, err)
	}
	if err := m.openStores(); err != nil {
		return nil, fmt.Errorf("%s: %w", src, err)
	}
	m.clientDirect = plainEdge(m.client.pe) && m.deadline <= 0
	m.bindHandlers()
	for i := range sc.Faults {
		if err := m.addFault(i, &sc.Faults[i], byName); err != nil {
			return nil, fmt.Errorf("%s: %w", src, err)
		}
	}
	return m, nil
}

type edgeMaker func(from string, c *topology.Call, field string, budgets map[string]policies.Budget) (*edge, error)

func (m *model) buildStep(from string, c *topology.Call, field string, budgets map[string]policies.Budget, newEdge edgeMaker) (step, error) {
	var st step
	add := func(c *topology.Call, field string) error {
		n := c.Fanout
		if n < 0 {
			return fmt.Errorf("%s.fanout: must be ≥ 1, got %d", field, n)
		}
		n = max(n, 1)
		e, err := newEdge(from, c, field, budgets)
		if err != nil {
			return err
		}
		for range n {
			st.members = append(st.members, e)
		}
		return nil
	}
	if len(c.Parallel) > 0 {
		if c.To != "" {
			return st, fmt.Errorf("%s: give either to or parallel, not both", field)
		}
		for i := range c.Parallel {
			p := &c.Parallel[i]
			if len(p.Parallel) > 0 {
				return st, fmt.Errorf("%s.parallel[%d].parallel: nested parallel groups are not supported", field, i)
			}
			if err := add(p, fmt.Sprintf("%s.parallel[%d]", field, i)); err != nil {
				return st, err
			}
		}
	} else if err := add(c, field); err != nil {
		return st, err
	}
	st.need = c.WaitFor
	if st.need < 0 || st.need > len(st.members) {
		return st, fmt.Errorf("%s.wait_for: must be in [0, %d], got %d", field, len(st.members), c.WaitFor)
	}
	if st.need == 0 {
		st.need = len(st.members)
	}
	return st, nil
}

// markCommitter picks the service that executes writes' side effects: the
// one marked commits, else the last service reached from the entry (depth
// first, in call order).
func (m *model) markCommitter() error {
	n := 0
	for _, s := range m.services {
		if s.cfg.Commits {
			s.commits = true
			n++
		}
	}
	if n > 0 {
		return nil
	}
	seen := map[*service]bool{}
	var last *service
	var walk func(s *service)
	walk = func(s *service) {
		if seen[s] {
			return
		}
		seen[s] = true
		last = s
		for _, st := range s.steps {
			for _, e := range st.members {
				walk(e.callee)
			}
		}
	}
	walk(m.entry)
	last.commits = true
	return nil
}

// openStores gives each committing service its idempotency store when
// writes carry keys.
func (m *model) openStores() error {
	if !m.sc.Workload.IdempotencyKeys {
		return nil
	}
	for i, s := range m.services {
		if !s.commits {
			continue
		}
		var c idempotency.Config
		if ic := s.cfg.Idempotency; ic != nil {
			c = idempotency.Config{Retention: ic.Retention, Lease: ic.Lease, InProgressRetryAfter: ic.InProgressRetryAfter}
		}
		st, err := idempotency.NewStore(c)
		if err != nil {
			return fmt.Errorf("services[%d].idempotency: %w", i, err)
		}
		s.store, s.inProgress = st, st.Config().InProgressRetryAfter
	}
	return nil
}
