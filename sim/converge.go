package sim

import (
	"fmt"
	"math/rand/v2"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/model"
	"github.com/stormsim/stormsim/policies"
)

// This file binds convergence after UNKNOWN (model.ConvergePlan) to
// engine events: the client's status queries by key, the committing
// service's owner crashes, recovery tasks and reconciliation scans, and
// the certainty of every write. Queries and fact queries are attempts over
// their own edges (model.Plan.Edges), so they queue, count in attempts and
// amplification, and meet budgets and breakers like any other; at their
// callee they are probes: answered from the records after the query
// endpoint's service time, without the service's work or calls.

// Probe kinds of an edge (edge.probe).
const (
	probeNone uint8 = iota
	probeQuery
	probeRecovery
	probeReconcile
)

// convergeRun is the run's convergence state.
type convergeRun struct {
	m     *run
	plan  *model.ConvergePlan
	tally model.Tally
	// hist is the time to certainty of counted intents, in µs; ivCert
	// those of the current series interval, and ivQueries its queries.
	hist      *hdrhistogram.Histogram
	ivCert    *latencyCounts
	ivQueries int64
	// commit is the committing service's first replica: its store is
	// every replica's
	commit     *service
	qpol       *model.QueryPolicy
	qedge      *edge
	recEdge    *edge
	reconEdge  *edge
	recon      *model.Reconciler
	resume     bool
	recoveries metrics.Recoveries
	// byKey finds the request of a key the reconciliation job watches
	byKey   map[string]*request
	active  int // intents holding their request for a query, a job or a resubmit
	intents pool[intent]
	// hopList holds the calls with status queries of their own, hops
	// their attempts' query state (edgequery.go)
	hopList []*hopQuery
	hops    map[*attempt]*hopState

	hWake, hRecover, hScan, hReconItem, hHopWake Handler
}

// intent is one write followed to certainty: its certainty, its query
// schedule, and what holds its request alive.
type intent struct {
	c            model.Certain
	q            model.Querier
	counted      bool
	querying     bool // the schedule runs: a wake-up or a query is out
	resubmitting bool // a resubmitted write is out
	recovering   bool // a recovery task is due or out
	watched      bool // the reconciliation job watches its record
	holds        bool // it holds a reference on its request
	wake         Timer
	lastSent     time.Duration
	began        time.Duration // when its record's owner began
	// hopResolved: a call's status query (edgequery.go) settled a step
	// of its request, so a reply at the root is certain by query
	hopResolved bool
}

// converge binds the plan's convergence, when the scenario has one.
func (b *builder) converge() error {
	cp := b.plan.Converge
	if cp == nil {
		return nil
	}
	m := b.m
	cv := &convergeRun{m: m, plan: cp, tally: model.Tally{AlertAfter: cp.AlertAfter},
		hist: metrics.NewCertaintyHistogram(), ivCert: newLatencyCounts(), byKey: map[string]*request{}}
	m.cv = cv
	for i, sp := range b.plan.Services {
		for r, rp := range sp.Replicas {
			s := b.reps[i][r]
			qrng, crash := m.maybeStream(rp.QueryStream), m.maybeStream(rp.CrashStream)
			qt, has, err := model.Delay(sp.Config.QueryTime, "query_time")
			if err != nil {
				return fmt.Errorf("services[%d].%w", i, err)
			}
			s.hasQuery = has
			s.cm.EnableQueries(qt, qrng, crash)
		}
	}
	cv.commit = b.reps[cp.Committer][0]
	bind := func(pe *model.Edge, probe uint8) (*edge, error) {
		e, err := b.edge(pe)
		if err != nil {
			return nil, err
		}
		e.probe = probe
		return e, nil
	}
	var err error
	if q := cp.Query; q != nil {
		if cv.qedge, err = bind(q.Edge, probeQuery); err != nil {
			return err
		}
		if cv.qpol, err = q.Policy(cv.commit.cm.Lease(), m.stream(q.Stream)); err != nil {
			return err
		}
	}
	facts := func(pe *model.Edge) {
		for _, s := range b.reps[b.plan.Service(pe.To).Index] {
			s.facts, s.writes = true, true
		}
	}
	if r := cp.Recovery; r != nil {
		if cv.recEdge, err = bind(r.Fact, probeRecovery); err != nil {
			return err
		}
		cv.resume = r.Config.OnAbsent == "resume"
		facts(r.Fact)
	}
	if r := cp.Reconcile; r != nil {
		if cv.reconEdge, err = bind(r.Fact, probeReconcile); err != nil {
			return err
		}
		cv.recon = model.NewReconciler(r.Policy)
		facts(r.Fact)
		cv.hScan = func(*Engine, any) { cv.scan() }
		m.eng.At(r.Policy.Interval, cv.hScan, nil)
	}
	if err := b.bindHops(cv); err != nil {
		return err
	}
	cv.hWake = func(_ *Engine, x any) { cv.wake(x.(*request)) }
	cv.hRecover = func(_ *Engine, x any) { cv.startCall(x.(*request), cv.recEdge) }
	cv.hReconItem = func(_ *Engine, x any) { cv.startCall(x.(*request), cv.reconEdge) }
	return nil
}

// maybeStream is the named stream, or nil for no name.
func (m *run) maybeStream(name string) *rand.Rand {
	if name == "" {
		return nil
	}
	return m.stream(name)
}

// begin follows a new write.
func (cv *convergeRun) begin(req *request) {
	in := cv.intents.get()
	*in = intent{counted: req.counted}
	if in.counted {
		cv.tally.Begin(&in.c, req.arrived)
	} else {
		in.c = model.Certain{First: req.arrived}
	}
	in.lastSent = req.arrived
	req.cv = in
}

// hold keeps req alive while something follows its intent; letGo drops
// that hold once nothing does.
func (cv *convergeRun) hold(req *request) {
	if in := req.cv; !in.holds {
		in.holds = true
		req.refs++
		cv.active++
	}
}

func (cv *convergeRun) letGo(req *request) {
	in := req.cv
	if in.holds && !in.querying && !in.resubmitting && !in.recovering && !in.watched {
		in.holds = false
		cv.active--
		cv.m.unref(req)
	}
}

// release is fold's: req is done with, and its intent with it.
func (cv *convergeRun) release(req *request) {
	in := req.cv
	if in.counted && !in.c.Resolved() {
		cv.tally.End(&in.c)
	}
	req.cv = nil
	cv.intents.put(in)
}

// resolve records that by made req's intent certain now.
func (cv *convergeRun) resolve(req *request, by model.Resolution) {
	in := req.cv
	if !in.counted {
		return
	}
	if took, first := cv.tally.Resolve(&in.c, cv.m.eng.Now(), by); first {
		us := max(took.Microseconds(), 1)
		_ = cv.hist.RecordValue(us) // beyond a day is clamped by the drain limit
		cv.ivCert.count(latencyIndex(took))
	}
}

// rootDone is requestDone's: the write's own call ended with r.
func (cv *convergeRun) rootDone(req *request, r policies.CallResult) {
	in := req.cv
	if r != policies.Unknown {
		by := model.ByReply
		if in.hopResolved {
			by = model.ByQuery
		}
		cv.resolve(req, by)
		return
	}
	if in.counted {
		cv.tally.Unknown(&in.c)
	}
	if cv.qpol != nil {
		in.querying = true
		cv.hold(req)
		cv.act(req, in.q.Start(cv.qpol, cv.m.eng.Now(), in.c.First, in.lastSent))
	}
}

// resubmitDone: the write sent again with the same key ended with r.
func (cv *convergeRun) resubmitDone(req *request, r policies.CallResult) {
	in := req.cv
	in.resubmitting = false
	if r != policies.Unknown {
		in.querying = false
		cv.resolve(req, model.ByQuery)
	} else {
		cv.act(req, in.q.Start(cv.qpol, cv.m.eng.Now(), in.c.First, in.lastSent))
	}
	cv.m.unref(req) // the resubmit's own hold
	cv.letGo(req)
}

// act carries out a Querier's action for req.
func (cv *convergeRun) act(req *request, a model.QueryAction) {
	in, m := req.cv, cv.m
	switch a.Step {
	case model.QueryWait:
		in.wake = m.eng.At(a.At, cv.hWake, req)
	case model.QuerySend:
		if in.counted {
			cv.tally.Queried(&in.c)
		}
		cv.ivQueries++
		cv.startCall(req, cv.qedge)
	case model.QueryResubmit:
		if in.counted {
			cv.tally.Resubmitted()
		}
		in.resubmitting, in.lastSent = true, m.eng.Now()
		if req.hasDeadline { // the user sends it again: a deadline of its own
			req.deadline = m.eng.Now() + m.deadline
		}
		req.refs++
		m.startRoot(req)
	default:
		in.querying = false
		if a.Resolved {
			cv.resolve(req, model.ByQuery)
		}
		cv.letGo(req)
	}
}

func (cv *convergeRun) wake(req *request) {
	cv.act(req, req.cv.q.Wake(cv.qpol, cv.m.eng.Now()))
}

// startCall sends a probe call for req over e (a status or fact query).
func (cv *convergeRun) startCall(req *request, e *edge) {
	cv.m.startCall(nil, nil, req, e)
}

// startProbe is startWork's for a probe attempt: the query endpoint's
// service time, or, at a service without one, its ordinary work (it has
// no idempotent query: the answer cannot tell).
func (cv *convergeRun) startProbe(a *attempt) {
	s := a.svc
	d := s.cm.QueryTime()
	if !s.hasQuery {
		d = s.cm.ServiceTime()
	}
	a.answer = policies.OK
	a.ev = cv.m.eng.After(d, cv.m.hWorkDone, a)
}

// answerProbe is workDone's for a probe attempt: the answer read from the
// records now, handed to the call waiting for it.
func (cv *convergeRun) answerProbe(a *attempt) {
	cr := a.caller
	if cr == nil {
		return
	}
	s := a.svc
	switch a.edge.probe {
	case probeQuery:
		cr.qstate = s.cm.QueryByKey(cv.m.eng.Now(), a.req.idemKey())
	default:
		cr.fact = model.FactAnswer(s.hasQuery, a.req.factDone)
	}
}

// probeDone is memberDone's for a probe call that ended with r.
func (cv *convergeRun) probeDone(cr *callRun, r policies.CallResult) {
	req, probe, st, fact := cr.req, cr.edge.probe, cr.qstate, cr.fact
	cv.m.calls.put(cr)
	ok := r == policies.Succeeded
	if !ok {
		fact = model.FactUnknown // the fact query failed: it proves nothing
	}
	switch probe {
	case probeQuery:
		cv.act(req, req.cv.q.Answered(cv.qpol, cv.m.eng.Now(), ok, st))
	case probeRecovery:
		cv.recovered(req, fact)
	default:
		cv.reconciled(req, fact)
	}
}

// ownerCrashed is finishWrite's for an owner that crashed after its steps:
// the effect happened (its steps succeeded), the record stays PROCESSING
// until its lease ends, when recovery (or, without it, reconciliation or a
// takeover) takes it up.
func (cv *convergeRun) ownerCrashed(a *attempt) {
	s, req, now := a.svc, a.req, cv.m.eng.Now()
	s.cm.FinishCrashed(now)
	req.executions++
	if a.counted {
		s.c.executions++
	}
	a.fence = 0
	in := req.cv
	_, _, in.began = s.cm.Lookup(now, req.idemKey())
	switch {
	case cv.recEdge != nil:
		in.recovering = true
		cv.hold(req)
		cv.m.eng.At(max(in.began+s.cm.Lease(), now), cv.hRecover, req)
	case cv.recon != nil:
		cv.watch(req)
	}
}

// held is finishWrite's for a write whose answer at the committing
// service was a timeout: with reconciliation its record is held UNKNOWN.
func (cv *convergeRun) held(req *request) {
	if cv.recon == nil || req.cv == nil {
		return
	}
	st, _, began := cv.commit.cm.Lookup(cv.m.eng.Now(), req.idemKey())
	if st == model.Unknown {
		req.cv.began = began
		cv.watch(req)
	}
}

// recovered applies the recovery decision the fact f makes.
func (cv *convergeRun) recovered(req *request, f model.Fact) {
	in, now := req.cv, cv.m.eng.Now()
	in.recovering = false
	d := model.Recover(f, cv.resume)
	if ok, executed := cv.commit.cm.Settle(now, req.idemKey(), d); ok {
		switch d {
		case model.RecoverSucceeded:
			cv.recoveries.Succeeded++
		case model.RecoverFailed:
			cv.recoveries.Failed++
		case model.RecoverResume:
			cv.recoveries.Resumed++
		default:
			cv.recoveries.Unknown++
		}
		if executed {
			req.executions++
			if req.counted {
				cv.commit.c.executions++
			}
		}
		if d == model.RecoverUnknown {
			cv.watch(req)
		} else {
			cv.resolve(req, model.ByRecovery)
		}
	}
	cv.letGo(req)
}

// watch hands req's record to the reconciliation job.
func (cv *convergeRun) watch(req *request) {
	in := req.cv
	if cv.recon == nil || in.watched {
		return
	}
	in.watched = true
	cv.hold(req)
	key := req.idemKey()
	cv.byKey[key] = req
	cv.recon.Watch(key, in.began)
}

func (cv *convergeRun) unwatch(req *request) {
	req.cv.watched = false
	delete(cv.byKey, req.key)
	cv.letGo(req)
}

// scan runs one reconciliation scan and schedules the next while there is
// work that may still need one.
func (cv *convergeRun) scan() {
	m := cv.m
	now := m.eng.Now()
	keys := cv.recon.Scan(now, func(key string) (model.RecordState, bool) {
		st, ok, _ := cv.commit.cm.Lookup(now, key)
		return st, ok
	})
	for _, key := range cv.recon.Dropped() {
		if req := cv.byKey[key]; req != nil {
			cv.unwatch(req)
		}
	}
	cost := cv.recon.Policy().CostPerItem
	for i, key := range keys {
		req := cv.byKey[key]
		if at := now + time.Duration(i)*cost; at > now {
			m.eng.At(at, cv.hReconItem, req)
		} else {
			cv.startCall(req, cv.reconEdge)
		}
	}
	if now < m.duration || cv.recon.Pending() > 0 || m.alive > 0 || cv.active > 0 {
		m.eng.At(now+cv.recon.Policy().Interval, cv.hScan, nil)
	}
}

// reconciled applies the reconciliation job's decision for fact f.
func (cv *convergeRun) reconciled(req *request, f model.Fact) {
	now, key := cv.m.eng.Now(), req.idemKey()
	d, manual := cv.recon.Resolve(key, f, func(d model.Recovery) bool {
		ok, _ := cv.commit.cm.Settle(now, key, d)
		return ok
	})
	switch {
	case manual:
		if req.cv.counted {
			cv.tally.Manual(&req.cv.c)
		}
		cv.unwatch(req)
	case d != model.RecoverUnknown:
		cv.resolve(req, model.ByReconciliation)
		cv.unwatch(req)
	case !cv.recon.Watching(key):
		cv.unwatch(req) // no longer the job's: settled by another meanwhile
	}
}

// columns are the run-wide convergence columns of the series.
func (cv *convergeRun) columns() []string {
	return []string{metrics.ColUnknownIntents, metrics.ColManualQueue, metrics.ColQueries, metrics.ColCertainP99}
}

// row appends the current interval's convergence values and resets them.
func (cv *convergeRun) row(row []float64) []float64 {
	var q [1]int64
	cv.ivCert.quantiles([]float64{99}, q[:])
	row = append(row, float64(cv.tally.UnknownNow()), float64(cv.tally.ManualNow()), float64(cv.ivQueries), float64(q[0])/1000)
	cv.ivQueries = 0
	cv.ivCert.reset()
	return row
}

// summary is the run's certainty, ended at end.
func (cv *convergeRun) summary(end time.Duration) *metrics.Certainty {
	c := cv.tally.Certainty(end)
	c.SetTimes(cv.hist)
	if cv.recEdge != nil {
		r := cv.recoveries
		c.Recoveries = &r
	}
	if cv.recon != nil {
		r := cv.recon.Stats()
		c.Reconciliation = &r
	}
	return &c
}

// queriesTo counts the status queries and fact queries sent to service
// name (attempts over the convergence edges, counted after warm-up).
func (cv *convergeRun) queriesTo(name string) (queries, facts int64) {
	if cv == nil {
		return 0, 0
	}
	if e := cv.qedge; e != nil && e.to == name {
		queries = e.pe.Stats.Attempts
	}
	queries += cv.hopQueriesTo(name)
	for _, e := range []*edge{cv.recEdge, cv.reconEdge} {
		if e != nil && e.to == name {
			facts += e.pe.Stats.Attempts
		}
	}
	return queries, facts
}
