package sim

import (
	"fmt"

	"github.com/stormsim/stormsim/model"
	"github.com/stormsim/stormsim/policies"
)

// This file binds a call's own status queries (calls[].query,
// model.HopQueryPlan) to engine events. When a step's call over an edge
// with queries ends unknown, the attempt that made it keeps its worker
// (a blocked thread, as for any call) and runs a model.Querier: each
// query is a call over the edge's twin — the same policy, statistics,
// budget, breaker and callee, marked probeQuery so that the committing
// service answers it from its records — and the step ends with the
// answer: SUCCEEDED as succeeded, FAILED (or NOT_FOUND past the lease) as
// failed, no answer by the schedule's end as unknown. The attempt's wait
// between queries is its pending event (attempt.ev), and a query in
// flight its step's call (attempt.call), so cancelling the attempt stops
// both, as it stops any step.

// hopQuery is one edge's status queries bound: the schedule, the edge the
// call travels and its twin the queries travel.
type hopQuery struct {
	pol   *model.QueryPolicy
	call  *edge
	query *edge
	// queries counts the queries of counted intents (services[].queries).
	queries int64
}

// hopState is one attempt's status queries after its call ended unknown.
// It is keyed by the attempt record and valid while gen is the record's.
type hopState struct {
	h            *hopQuery
	gen          uint32
	q            model.Querier
	resubmitting bool // the call is out again with the same key
}

// bindHops binds the plan's calls with status queries; converge calls it
// once the committing service's lease is known.
func (b *builder) bindHops(cv *convergeRun) error {
	for _, hp := range cv.plan.Hops {
		e := b.edges[hp.Edge]
		if e == nil {
			return fmt.Errorf("%s.query: the call is not bound", hp.Edge.Field)
		}
		pol, err := hp.Policy(cv.commit.cm.Lease(), cv.m.stream(hp.Stream))
		if err != nil {
			return err
		}
		tw := *e
		tw.probe, tw.irrevocable, tw.pools = probeQuery, false, nil
		tw.tmoLane, tw.dlLane, tw.wakeLane = Lane{}, Lane{}, Lane{}
		h := &hopQuery{pol: pol, call: e, query: &tw}
		e.hop, tw.hop = h, h
		cv.hopList = append(cv.hopList, h)
	}
	if len(cv.hopList) > 0 {
		cv.hops = map[*attempt]*hopState{}
		cv.hHopWake = func(_ *Engine, x any) {
			a := x.(*attempt)
			hs := cv.hops[a]
			cv.hopAct(a, hs, hs.q.Wake(hs.h.pol, cv.m.eng.Now()))
		}
	}
	return nil
}

// hopDone is memberDone's for a call over an edge with status queries
// (edge.hop): the step's call itself, or one of its queries, ended with
// o and r.
func (m *run) hopDone(cr *callRun, o policies.Outcome, r policies.CallResult) {
	a, req, e, st := cr.owner, cr.req, cr.edge, cr.qstate
	m.calls.put(cr)
	a.call = nil
	cv, now := m.cv, m.eng.Now()
	hs := cv.hops[a]
	if hs != nil && hs.gen != a.gen {
		hs = nil // another attempt's, before this record was reused
	}
	if e.probe != 0 {
		cv.hopAct(a, hs, hs.q.Answered(hs.h.pol, now, r == policies.Succeeded, st))
		return
	}
	resumed := hs != nil && hs.resubmitting
	if resumed {
		hs.resubmitting = false
	}
	if r != policies.Unknown || !req.write || req.cv == nil {
		if resumed && r != policies.Unknown {
			req.cv.hopResolved = true // the query's NOT_FOUND sent it again
		}
		m.stepDone(a, r == policies.Succeeded, o)
		return
	}
	if !resumed {
		if hs == nil {
			if hs = cv.hops[a]; hs == nil {
				hs = new(hopState)
				cv.hops[a] = hs
			}
		}
		*hs = hopState{h: e.hop, gen: a.gen}
	}
	cv.hopAct(a, hs, hs.q.Start(hs.h.pol, now, now, now))
}

// hopAct carries out a Querier's action for attempt a's queries.
func (cv *convergeRun) hopAct(a *attempt, hs *hopState, act model.QueryAction) {
	m, in := cv.m, a.req.cv
	switch act.Step {
	case model.QueryWait:
		a.ev = m.eng.At(act.At, cv.hHopWake, a)
	case model.QuerySend:
		if in.counted {
			cv.tally.Queried(&in.c)
			hs.h.queries++
		}
		cv.ivQueries++
		m.startCall(nil, a, a.req, hs.h.query)
	case model.QueryResubmit:
		if in.counted {
			cv.tally.Resubmitted()
		}
		hs.resubmitting = true
		m.startCall(nil, a, a.req, hs.h.call)
	default:
		switch {
		case !act.Resolved: // past the schedule: the step is still unknown
			m.stepDone(a, false, policies.Timeout)
		case act.State == model.Succeeded:
			in.hopResolved = true
			m.stepDone(a, true, policies.OK)
		default:
			in.hopResolved = true
			m.stepDone(a, false, policies.Error)
		}
	}
}

// hopQueriesTo counts the status queries calls sent to service name.
func (cv *convergeRun) hopQueriesTo(name string) (n int64) {
	for _, h := range cv.hopList {
		if h.call.to == name {
			n += h.queries
		}
	}
	return n
}
