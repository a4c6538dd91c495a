package model

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/stormsim/stormsim/policies"
	"github.com/stormsim/stormsim/topology"
)

// ConvergePlan is the resolved convergence of a scenario (Plan.Converge,
// nil unless topology.Scenario.Converges): the status-query path, the
// committing service's recovery and reconciliation jobs with their fact
// query edges, and the alert threshold. Drivers bind its edges as they
// bind the calls' (they are also in Plan.Edges, after every call edge, so
// they reshuffle no stream of the calls).
type ConvergePlan struct {
	// AlertAfter is workload.alert_after (0: no alerts).
	AlertAfter time.Duration
	// Committer is the index in Plan.Services of the committing service,
	// which answers queries and runs the jobs.
	Committer int
	Query     *QueryPlan
	Recovery  *RecoveryPlan
	Reconcile *ReconcilePlan
	// Hops are the service calls with status queries of their own
	// (calls[].query), in Plan.Edges order.
	Hops []*HopQueryPlan
}

// HopQueryPlan is one call's status queries (topology.Call.Query): after
// a call over Edge ends unknown, its caller queries Edge's callee (the
// committing service) by the write's key over Edge itself, on Config's
// schedule, with the schedule's jitter drawn from Stream.
type HopQueryPlan struct {
	Config *topology.Query
	Edge   *Edge
	Stream string
}

// QueryPlan is the client's status queries.
type QueryPlan struct {
	Config *topology.Query
	// Edge is the query path: from QueryCaller to the committing service,
	// under workload.query.call.
	Edge *Edge
	// Stream names the schedule's jitter stream (QueryScheduleStream).
	Stream string
}

// RecoveryPlan is the committing service's recovery of stuck records.
type RecoveryPlan struct {
	Config *topology.Recovery
	// Fact is the fact query edge, from the committing service's first
	// replica (the store is shared) to recovery.fact_query.to.
	Fact *Edge
}

// ReconcilePlan is the committing service's reconciliation job.
type ReconcilePlan struct {
	Config *topology.Reconciliation
	Fact   *Edge
	Policy ReconcilePolicy
}

// Callers of the convergence edges, as edge summaries name them.
const (
	// QueryCaller is the client's status queries.
	QueryCaller = "client.query"
	// QueryScheduleStream names the query schedule's jitter stream.
	QueryScheduleStream = "query/schedule"
)

// QueryStream names the stream of replica rep of service name's query
// endpoint: "query/NAME", "query/NAME#rR".
func QueryStream(name string, rep int) string { return "query/" + name + ReplicaTag(rep) }

// CrashStream names the owner-crash stream of replica rep of service name.
func CrashStream(name string, rep int) string { return "crash/" + name + ReplicaTag(rep) }

// HopQueryStream names the schedule jitter stream of the status queries
// over the edge whose policy stream is edgeStream: "query/schedule/" and it.
func HopQueryStream(edgeStream string) string { return QueryScheduleStream + "/" + edgeStream }

// Policy resolves the query schedule with the committing service's lease,
// drawing its jitter from rng.
func (qp *QueryPlan) Policy(lease time.Duration, rng *rand.Rand) (*QueryPolicy, error) {
	return NewQueryPolicy(qp.Config, "workload.query", lease, rng)
}

// Policy resolves the call's query schedule, as QueryPlan.Policy does.
func (hp *HopQueryPlan) Policy(lease time.Duration, rng *rand.Rand) (*QueryPolicy, error) {
	return NewQueryPolicy(hp.Config, hp.Edge.Field+".query", lease, rng)
}

// NewQueryPolicy resolves query schedule q (at field, for errors) with
// the committing service's lease, drawing its jitter from rng.
func NewQueryPolicy(q *topology.Query, field string, lease time.Duration, rng *rand.Rand) (*QueryPolicy, error) {
	b, err := policies.NewBackoff(q.Backoff())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	pol := &QueryPolicy{First: q.FirstDelay, Backoff: b, Deadline: q.Deadline, MaxQueries: q.MaxQueries, Lease: lease, Resubmit: q.Resubmit, Rand: rng}
	if q.RandomPhase {
		pol.Phase = q.Interval
	}
	return pol, nil
}

// converge resolves sc's convergence into p.Converge.
func (c *compiler) converge(sc *topology.Scenario) error {
	p := c.p
	cp := &ConvergePlan{AlertAfter: sc.Workload.AlertAfter, Committer: p.Committer}
	p.Converge = cp
	if p.Committer < 0 {
		return fmt.Errorf("workload: convergence needs a committing service")
	}
	commit := p.Services[p.Committer]
	if q := sc.Workload.Query; q != nil {
		call := q.Call
		call.To = commit.Name
		e, err := c.edge(QueryCaller, "", "", &call, "workload.query.call")
		if err != nil {
			return err
		}
		cp.Query = &QueryPlan{Config: q, Edge: e, Stream: QueryScheduleStream}
	}
	for _, e := range p.Edges {
		if q := e.Call.Query; q != nil && e.From != QueryCaller {
			cp.Hops = append(cp.Hops, &HopQueryPlan{Config: q, Edge: e, Stream: HopQueryStream(e.Stream)})
		}
	}
	cfg, field := commit.Config, fmt.Sprintf("services[%d]", commit.Index)
	rep0 := commit.Replicas[0]
	if r := cfg.Recovery; r != nil {
		e, err := c.edge(commit.Name+".recovery", rep0.Tag(), rep0.Zone, &r.FactQuery, field+".recovery.fact_query")
		if err != nil {
			return err
		}
		cp.Recovery = &RecoveryPlan{Config: r, Fact: e}
	}
	if r := cfg.Reconciliation; r != nil {
		e, err := c.edge(commit.Name+".reconciliation", rep0.Tag(), rep0.Zone, &r.FactQuery, field+".reconciliation.fact_query")
		if err != nil {
			return err
		}
		cp.Reconcile = &ReconcilePlan{Config: r, Fact: e, Policy: ReconcilePolicy{Interval: r.Interval,
			OlderThan: r.OlderThan, CostPerItem: r.CostPerItem, Batch: r.Batch, MaxTries: r.MaxTries}}
	}
	for _, sp := range p.Services {
		for _, rp := range sp.Replicas {
			if sp.Config.QueryTime != nil {
				rp.QueryStream = QueryStream(sp.Name, rp.Index)
			}
			if sp.Commits {
				rp.CrashStream = CrashStream(sp.Name, rp.Index)
			}
		}
	}
	return nil
}

// Tag is the replica's tag in edge and stream names (ReplicaTag).
func (r *Replica) Tag() string { return ReplicaTag(r.Index) }
