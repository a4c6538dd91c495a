package model

import (
	"fmt"
	"time"

	"github.com/stormsim/stormsim/topology"
)

// Plan is the one resolved form of a scenario for running: every name
// looked up, every stream named, every fault placed on the replicas it
// hits. The simulator binds engine events to its nodes and serve binds
// handlers to them; neither walks the scenario again, so what a scenario
// means — which replica a fault hits, which stream an edge draws from,
// which calls a step makes and how many it needs — is decided here, once.
//
// A Plan holds no state of a run (no random stream, no counter): it is
// plain data, the same value for the same scenario, which drivers only
// read. Its topology pointers point into the compiled scenario, which
// must not change while the plan is used.
type Plan struct {
	// Seed is the run's seed, from which every named stream derives.
	Seed uint64
	// Arrivals is the workload's arrival process.
	Arrivals ArrivalsPlan
	// Entry is the index in Services of the workload's entry service.
	Entry int
	// Committer is the index in Services of the service executing writes'
	// side effects (topology.Scenario.Committer), -1 for none.
	Committer int
	// Keyed: writes carry idempotency keys (workload.idempotency_keys),
	// which the committing service dedupes.
	Keyed bool
	// Client is the client fleet: one edge per instance toward the entry
	// (one without workload.instances); requests go round them
	// (InstanceOf).
	Client []*Edge
	// Services in scenario order.
	Services []*ServicePlan
	// Edges lists every edge once, in the order results merge them: the
	// client's instances, then each service's replicas' steps in order.
	Edges []*Edge
	// Faults lists each fault once per replica it hits, in scenario order,
	// replicas ascending: the windows a driver opens and closes.
	Faults []FaultHit
	// TopicKeys is, per topic, the ordering keys its events spread over:
	// the most any of its publish steps uses.
	TopicKeys map[string]int
	// Converge is the scenario's convergence after UNKNOWN (convergeplan.go),
	// nil when it configures none.
	Converge *ConvergePlan
}

// ArrivalsPlan is how logical requests arrive.
type ArrivalsPlan struct {
	// Closed: a closed loop of workload.clients, each thinking
	// workload.think_time between requests; otherwise the open-loop
	// process of NewArrivals (poisson or constant, with its schedule).
	Closed bool
	// Stream names the arrival process's random stream.
	Stream string
}

// ServicePlan is one service of the scenario and its replicas.
type ServicePlan struct {
	// Index is the service's index in the scenario.
	Index int
	Name  string
	// Config is the service's validated configuration.
	Config *topology.Service
	// Commits marks the committing service (Plan.Committer).
	Commits bool
	// Replicas are its replicas (one without replicas).
	Replicas []*Replica
}

// Replica is one replica of a service: one callee machine, with its own
// stream, zone, faults and downstream steps.
type Replica struct {
	Service string
	// Index is the replica's index (0-based).
	Index int
	// Stream names the callee machine's stream (ReplicaStream).
	Stream string
	// Zone is the replica's zone ("" without zones).
	Zone string
	// Faults are the faults hitting it (ReplicaFaults), and Resets the
	// instants its connections are reset (ResetTimes).
	Faults []*topology.Fault
	Resets []time.Duration
	// Steps are its downstream steps, one per entry of the service's calls.
	Steps []Step
	// ConsumerStream names its stream as a member of its service's
	// consumer group; "" when the service consumes no topic.
	ConsumerStream string
	// QueryStream names its query endpoint's stream ("" without
	// query_time) and CrashStream its owner-crash stream ("" unless the
	// service commits), set only when the scenario converges.
	QueryStream, CrashStream string
}

// Step is one entry of a service's calls: a call, a fan-out of one edge or
// a parallel group, whose members start at once and of which Need must
// succeed (NewQuorum); or a publish step.
type Step struct {
	// Members holds one edge per call the step makes: a fan-out repeats
	// its edge.
	Members []*Edge
	// Need is how many members must succeed (wait_for; all of them for 0).
	Need int
	// Publish, when set, makes the step a publish to a topic, drawing
	// from PublishStream, instead of calls.
	Publish       *topology.Publish
	PublishStream string
}

// Edge is one call edge: a caller (a service's replica, or a client
// instance) calling one callee service under one call policy.
type Edge struct {
	// From names the caller (a service, or Client), Tag its replica or
	// instance (ReplicaTag, InstanceTag), To the callee.
	From, Tag, To string
	// Zone is the caller's zone ("" without zones).
	Zone string
	// Field is the edge's path in the scenario, for errors:
	// "workload.client", "services[1].calls[0].parallel[2]".
	Field string
	// Call is the edge's policy and network configuration.
	Call *topology.Call
	// Stream names the edge's policy stream (EdgeStreams); BalanceStream
	// its balancer's, when the callee has several replicas.
	Stream, BalanceStream string
	// SharedBudget, when set, keys the retry budget the caller's edges
	// share (budget.scope service): every edge with one key shares one.
	SharedBudget string
	// Replicas is how many replicas the callee has; with more than one the
	// edge balances over them, preferring Local ones (zone_aware; nil:
	// none preferred).
	Replicas int
	Local    []bool
	// Out keys the output row the edge merges into ("from->to").
	Out string
}

// FaultHit is one fault on one replica of its service.
type FaultHit struct {
	Fault *topology.Fault
	// Service is the index of the service in Plan.Services, Replica the
	// replica hit.
	Service, Replica int
}

// Compile resolves a validated scenario (topology.Load or Parse) into its
// plan. It checks what it must to resolve names (the entry, each call's
// callee, each fault's service, each publish step's consumer), not the
// values topology validated; its errors name the field.
func Compile(sc *topology.Scenario) (*Plan, error) {
	p := &Plan{Seed: sc.Seed, Committer: sc.Committer(), Keyed: sc.Workload.IdempotencyKeys,
		Arrivals: ArrivalsPlan{Stream: ArrivalsStream}, TopicKeys: map[string]int{}}
	switch w := &sc.Workload; w.Arrival {
	case "", "poisson", "constant":
	case "closed":
		p.Arrivals.Closed = true
	default:
		return nil, fmt.Errorf("workload.arrival: unknown arrival %q (want poisson, constant or closed)", w.Arrival)
	}
	byName := map[string]*ServicePlan{}
	consumed := map[string]bool{}
	for i := range sc.Services {
		cfg := &sc.Services[i]
		sp := &ServicePlan{Index: i, Name: cfg.Name, Config: cfg, Commits: i == p.Committer}
		for r := range cfg.ReplicaCount() {
			rp := &Replica{Service: cfg.Name, Index: r, Stream: ReplicaStream(cfg.Name, r), Zone: cfg.ZoneOf(r),
				Faults: ReplicaFaults(sc, cfg.Name, r)}
			rp.Resets = ResetTimes(rp.Faults)
			if cfg.Consumes != nil {
				rp.ConsumerStream = ConsumerStream(cfg.Name, r)
			}
			sp.Replicas = append(sp.Replicas, rp)
		}
		if cfg.Consumes != nil {
			consumed[cfg.Consumes.Topic] = true
		}
		byName[cfg.Name] = sp
		p.Services = append(p.Services, sp)
		for _, c := range cfg.Calls {
			if pb := c.Publish; pb != nil {
				p.TopicKeys[pb.Topic] = max(p.TopicKeys[pb.Topic], pb.Keys)
			}
		}
	}
	entry := byName[sc.Workload.Entry]
	if entry == nil {
		return nil, fmt.Errorf("workload.entry: no service named %q", sc.Workload.Entry)
	}
	p.Entry = entry.Index
	c := compiler{p: p, byName: byName, streams: EdgeStreams{}}
	client := sc.Workload.Client
	client.To = sc.Workload.Entry
	for k := range max(sc.Workload.Instances, 1) {
		e, err := c.edge(Client, InstanceTag(k), sc.Workload.ZoneOf(k), &client, "workload.client")
		if err != nil {
			return nil, err
		}
		p.Client = append(p.Client, e)
	}
	for i, sp := range p.Services {
		for _, rp := range sp.Replicas {
			for j := range sp.Config.Calls {
				st, err := c.step(rp, &sp.Config.Calls[j], fmt.Sprintf("services[%d].calls[%d]", i, j), j)
				if err != nil {
					return nil, err
				}
				if st.Publish != nil && !consumed[st.Publish.Topic] {
					return nil, fmt.Errorf("services[%d].calls[%d].publish.topic: no service consumes %q", i, j, st.Publish.Topic)
				}
				rp.Steps = append(rp.Steps, st)
			}
		}
	}
	if sc.Converges() {
		if err := c.converge(sc); err != nil {
			return nil, err
		}
	}
	for i := range sc.Faults {
		f := &sc.Faults[i]
		sp := byName[f.Service]
		if sp == nil {
			return nil, fmt.Errorf("faults[%d].service: no service named %q", i, f.Service)
		}
		for _, r := range f.ReplicasHit(sp.Config) {
			p.Faults = append(p.Faults, FaultHit{Fault: f, Service: sp.Index, Replica: r})
		}
	}
	return p, nil
}

// compiler is Compile's state while it resolves the edges.
type compiler struct {
	p       *Plan
	byName  map[string]*ServicePlan
	streams EdgeStreams
}

// edge resolves one call edge from -> call.To; tag names the caller's
// replica or client instance.
func (c *compiler) edge(from, tag, zone string, call *topology.Call, field string) (*Edge, error) {
	callee := c.byName[call.To]
	if callee == nil {
		return nil, fmt.Errorf("%s.to: no service named %q", field, call.To)
	}
	e := &Edge{From: from, Tag: tag, To: call.To, Zone: zone, Field: field, Call: call,
		Stream: c.streams.Name(from+tag, call.To), Replicas: len(callee.Replicas), Out: from + "->" + call.To}
	if call.Budget != nil && call.Budget.Scope == "service" {
		e.SharedBudget = from + tag
	}
	if e.Replicas > 1 {
		e.BalanceStream = BalanceStream(e.Stream)
		if call.ZoneAware && zone != "" {
			e.Local = LocalReplicas(callee.Config, zone)
		}
	}
	c.p.Edges = append(c.p.Edges, e)
	return e, nil
}

// step resolves entry j of replica rp's calls: a publish, a call, a
// fan-out of one edge or a parallel group with its quorum.
func (c *compiler) step(rp *Replica, call *topology.Call, field string, j int) (Step, error) {
	var st Step
	if call.Publish != nil {
		st.Publish, st.PublishStream = call.Publish, PublishStream(rp.Service, rp.Index, j)
		return st, nil
	}
	members := []*topology.Call{call}
	if len(call.Parallel) > 0 {
		members = members[:0]
		for i := range call.Parallel {
			members = append(members, &call.Parallel[i])
		}
	}
	for i, m := range members {
		f := field
		if len(call.Parallel) > 0 {
			f = fmt.Sprintf("%s.parallel[%d]", field, i)
		}
		e, err := c.edge(rp.Service, ReplicaTag(rp.Index), rp.Zone, m, f)
		if err != nil {
			return st, err
		}
		for range max(m.Fanout, 1) {
			st.Members = append(st.Members, e)
		}
	}
	st.Need = call.WaitFor
	if st.Need <= 0 || st.Need > len(st.Members) {
		st.Need = len(st.Members) // topology rejects a wait_for beyond the group
	}
	return st, nil
}

// Service returns the plan of the service named name, or nil.
func (p *Plan) Service(name string) *ServicePlan {
	for _, sp := range p.Services {
		if sp.Name == name {
			return sp
		}
	}
	return nil
}

// Replica returns replica rep of the service named name, or nil.
func (p *Plan) Replica(name string, rep int) *Replica {
	sp := p.Service(name)
	if sp == nil || rep < 0 || rep >= len(sp.Replicas) {
		return nil
	}
	return sp.Replicas[rep]
}
