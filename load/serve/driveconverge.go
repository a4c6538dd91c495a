package serve

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/stormsim/stormsim/load/driver"
	"github.com/stormsim/stormsim/load/edge"
	"github.com/stormsim/stormsim/load/internal/clock"
	"github.com/stormsim/stormsim/load/transport"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/model"
	"github.com/stormsim/stormsim/policies"
	"github.com/stormsim/stormsim/topology"
)

// This file is the client half of convergence after UNKNOWN in serve: a
// scenario run follows each write to certainty with the plan's machines
// (model.ConvergePlan), as the simulator does (sim/converge.go). A write
// whose call ended unknown is queried by its key on the Querier's
// schedule over the plan's query edge (model.QueryPlan.Edge, from
// model.QueryCaller to the committing service, under workload.query.call,
// drawing from its stream): each query is a call of its own with its
// policy's retries, budget and breaker, sent as a GET to the committing
// service's work path with HeaderQuery and the key in Idempotency-Key, so
// it queues and counts in that service's attempts and amplification (the
// served endpoint is serveconverge.go). A NOT_FOUND past the lease
// resubmits the write with the same key (resubmit). model.Tally keeps the
// run's certainty, reported as the summary's certainty exactly as the
// simulator reports it.

// converger follows a scenario run's writes to certainty. Its machines
// (the tally, the queriers, the schedule's jitter stream) are guarded by
// mu; the queries of one intent run in a goroutine of their own.
type converger struct {
	mu    sync.Mutex
	tally model.Tally
	hist  *hdrhistogram.Histogram
	// ivQueries counts the status queries of the current series interval,
	// ivHist the times to certainty of the intents certain in it.
	ivQueries int64
	ivHist    *hdrhistogram.Histogram
	// pol is the query schedule (nil without workload.query); pe its edge,
	// probes that edge bound by start, over tr to url, the committing
	// service's.
	pol    *model.QueryPolicy
	pe     *model.Edge
	probes *probeEdge
	tr     transport.Transport
	url    string
	// deadline is the workload's: a resubmitted write gets one of its own.
	deadline time.Duration
	seed     uint64
	clk      clock.Clock
	root     context.Context
	wg       sync.WaitGroup
	// committer names the committing service.
	committer string
	// open holds the intents not yet certain, by request id: a recovery
	// task at the committing service may still settle one (resolveID);
	// fill ends the rest.
	open map[string]*intent
}

// intent is one write followed to certainty.
type intent struct {
	id       string
	c        model.Certain
	q        model.Querier
	counted  bool
	lastSent time.Duration
}

// newConverger returns the converger of a scenario run on cl, nil when
// the scenario configures no convergence.
func newConverger(sc *topology.Scenario, cl *Cluster, grpc bool) (*converger, error) {
	cp := cl.Plan().Converge
	if cp == nil {
		return nil, nil
	}
	commit := cl.Plan().Services[cp.Committer]
	cv := &converger{tally: model.Tally{AlertAfter: cp.AlertAfter}, hist: metrics.NewCertaintyHistogram(), ivHist: metrics.NewCertaintyHistogram(),
		deadline: sc.Workload.Deadline, seed: sc.Seed, committer: commit.Name, open: map[string]*intent{}}
	if svc := cl.Service(commit.Name); svc.rec != nil {
		svc.rec.certain = cv.resolveID
	}
	if svc := cl.Service(commit.Name); svc.recon != nil {
		svc.recon.certain = cv.resolveID
	}
	q := cp.Query
	if q == nil {
		return cv, nil
	}
	if grpc {
		return nil, fmt.Errorf("load: %s: workload.query: status queries are served over HTTP only, not protocol grpc", scenarioName(sc))
	}
	svc := cl.Service(commit.Name)
	var err error
	if cv.pol, err = q.Policy(svc.cm.Lease(), model.Stream(sc.Seed, q.Stream)); err != nil {
		return nil, fmt.Errorf("load: %s: %w", scenarioName(sc), err)
	}
	cv.pe, cv.url = q.Edge, cl.URLs[commit.Name]
	cv.tr = transport.NewHTTP(&http.Client{Transport: cl.tr}, false)
	return cv, nil
}

// Start binds the query edge on the run's clock; root bounds its
// attempts (driver.Follower).
func (cv *converger) Start(clk clock.Clock, root context.Context) error {
	cv.clk, cv.root = clk, root
	if cv.pol == nil {
		return nil
	}
	var err error
	cv.probes, err = newProbeEdge(cv.pe, cv.seed, cv.tr, clk, root, cv.url, HeaderQuery)
	return err
}

// Begin follows a new write, request id, first attempted (due) at first,
// and returns what its call's result goes to (driver.Follower).
func (cv *converger) Begin(id string, first time.Duration, counted bool) driver.FollowDone {
	in := cv.begin(id, first, counted)
	return func(ctx context.Context, r policies.CallResult, write *transport.Attempt, co policies.CallOptions, ec *edge.EdgeClient) {
		cv.done(ctx, in, r, write, co, ec)
	}
}

// begin follows a new write, request id, first attempted (due) at first.
func (cv *converger) begin(id string, first time.Duration, counted bool) *intent {
	in := &intent{id: id, counted: counted, lastSent: first}
	cv.mu.Lock()
	if counted {
		cv.tally.Begin(&in.c, first)
		cv.open[id] = in
	} else {
		in.c = model.Certain{First: first}
	}
	cv.mu.Unlock()
	return in
}

// resolveID records that a job at the committing service made the write
// of request id certain now (by recovery or reconciliation), or sent it
// to the manual queue (ByManual).
func (cv *converger) resolveID(id string, by model.Resolution) {
	cv.mu.Lock()
	in := cv.open[id]
	if in != nil && by == model.ByManual {
		delete(cv.open, id)
		cv.tally.Manual(&in.c)
	}
	cv.mu.Unlock()
	if in != nil && by != model.ByManual {
		cv.resolve(in, by)
	}
}

// done is the write's own call ended with r: a known answer makes it
// certain; an unknown one starts its queries, in a goroutine of their
// own, from write (its attempt, copied) sent over ec with co.
func (cv *converger) done(ctx context.Context, in *intent, r policies.CallResult, write *transport.Attempt, co policies.CallOptions, ec *edge.EdgeClient) {
	if r != policies.Unknown {
		cv.resolve(in, model.ByReply)
		return
	}
	cv.mu.Lock()
	if in.counted {
		cv.tally.Unknown(&in.c)
	}
	cv.mu.Unlock()
	if cv.pol == nil || write.IdempotencyKey == "" {
		return // a recovery task may still settle it: fill ends it
	}
	w := *write
	cv.wg.Add(1)
	go func() {
		defer cv.wg.Done()
		cv.follow(ctx, in, &w, co, ec)
	}()
}

// follow runs in's status queries, the Querier's schedule, to its end.
func (cv *converger) follow(ctx context.Context, in *intent, write *transport.Attempt, co policies.CallOptions, ec *edge.EdgeClient) {
	cv.mu.Lock()
	a := in.q.Start(cv.pol, cv.clk.Now(), in.c.First, in.lastSent)
	cv.mu.Unlock()
	for {
		switch a.Step {
		case model.QueryWait:
			if !clock.Sleep(cv.clk, ctx, a.At-cv.clk.Now()) {
				return // the run was stopped
			}
			cv.mu.Lock()
			a = in.q.Wake(cv.pol, cv.clk.Now())
			cv.mu.Unlock()
		case model.QuerySend:
			cv.mu.Lock()
			if in.counted {
				cv.tally.Queried(&in.c)
			}
			cv.ivQueries++
			cv.mu.Unlock()
			st, ok := cv.query(ctx, write, in.counted)
			cv.mu.Lock()
			a = in.q.Answered(cv.pol, cv.clk.Now(), ok, st)
			cv.mu.Unlock()
		case model.QueryResubmit:
			now := cv.clk.Now()
			cv.mu.Lock()
			if in.counted {
				cv.tally.Resubmitted()
			}
			cv.mu.Unlock()
			in.lastSent = now
			if co.HasDeadline { // the user sends it again: a deadline of its own
				co.Deadline = now + cv.deadline
			}
			if r := ec.Do(ctx, co, write, nil); r.Result != policies.Unknown {
				cv.resolve(in, model.ByQuery)
				return
			}
			cv.mu.Lock()
			a = in.q.Start(cv.pol, cv.clk.Now(), in.c.First, in.lastSent)
			cv.mu.Unlock()
		default:
			if a.Resolved {
				cv.resolve(in, model.ByQuery)
			}
			return // unless certain, it stays open for a recovery task
		}
	}
}

// query sends one status query for write's key over the query edge and
// returns the record state it answered; ok is false when the query got no
// answer (it failed or timed out).
func (cv *converger) query(ctx context.Context, write *transport.Attempt, counted bool) (st model.RecordState, ok bool) {
	status, answered := cv.probes.call(ctx, write.RequestID, write.IdempotencyKey, write.KeyHeader, counted)
	if !answered {
		return 0, false
	}
	return RecordOf(status)
}

// resolve records that by made in certain now.
func (cv *converger) resolve(in *intent, by model.Resolution) {
	if !in.counted {
		return
	}
	cv.mu.Lock()
	defer cv.mu.Unlock()
	delete(cv.open, in.id)
	if took, first := cv.tally.Resolve(&in.c, cv.clk.Now(), by); first {
		metrics.RecordLatency(cv.hist, took)
		metrics.RecordLatency(cv.ivHist, took)
	}
}

// wait waits for every intent's queries to end (each ends by its
// schedule's deadline, or when the run is stopped).
func (cv *converger) Wait() { cv.wg.Wait() }

// fill adds the run's certainty to res, ended now: the summary's
// certainty, the query edge and the committing service's query count.
func (cv *converger) fill(res *metrics.Result, cl *Cluster) {
	cv.mu.Lock()
	for _, in := range cv.open {
		cv.tally.End(&in.c) // nothing follows it any more: never certain
	}
	clear(cv.open)
	c := cv.tally.Certainty(cv.clk.Now())
	cv.mu.Unlock()
	c.SetTimes(cv.hist)
	s := &res.Summary
	s.Certainty, res.Certainty = &c, cv.hist
	service := func(name string) *metrics.ServiceSummary {
		for i := range s.Services {
			if s.Services[i].Name == name {
				return &s.Services[i]
			}
		}
		return nil
	}
	if cv.probes != nil {
		es := cv.probes.ec.Summary(model.QueryCaller, cv.committer)
		s.Edges = append(s.Edges, es)
		if ss := service(cv.committer); ss != nil {
			ss.Queries = es.Attempts
		}
	}
	commit := cl.Service(cv.committer)
	facts := func(pe *model.Edge, p *probeEdge) {
		es := p.ec.Summary(pe.From, pe.To)
		s.Edges = append(s.Edges, es)
		if ss := service(pe.To); ss != nil {
			ss.FactQueries += es.Attempts
		}
	}
	if rec := commit.rec; rec != nil {
		c.Recoveries = commit.Recoveries()
		facts(rec.edge, rec.facts)
	}
	if rc := commit.recon; rc != nil {
		c.Reconciliation = commit.ReconcileStats()
		facts(rc.edge, rc.facts)
	}
}

// sample adds the run-wide convergence columns of the series interval
// ending now to sm (the simulator's: intents unknown and the manual
// queue now, the interval's queries and its p99 time to certainty), and
// starts the next interval.
func (cv *converger) sample(sm *sampler) {
	cv.mu.Lock()
	p99 := 0.0
	if cv.ivHist.TotalCount() > 0 {
		p99 = float64(cv.ivHist.ValueAtQuantile(99)) / 1000
	}
	row := [...]float64{float64(cv.tally.UnknownNow()), float64(cv.tally.ManualNow()), float64(cv.ivQueries), p99}
	cv.ivQueries = 0
	cv.ivHist.Reset()
	cv.mu.Unlock()
	for i, c := range [...]string{metrics.ColUnknownIntents, metrics.ColManualQueue, metrics.ColQueries, metrics.ColCertainP99} {
		sm.cols[c] = append(sm.cols[c], row[i])
	}
}

var _ driver.Follower = (*converger)(nil)
