package serve

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"

	"github.com/stormsim/stormsim/load/internal/clock"
	"github.com/stormsim/stormsim/load/transport"
	"github.com/stormsim/stormsim/model"
	"github.com/stormsim/stormsim/policies"
)

// This file is the served half of convergence after UNKNOWN at a
// service: its status-query endpoint. A status query by key is an HTTP
// GET to the service's work path with the write's key in Idempotency-Key
// and HeaderQuery set. It is an attempt like any other — it is admitted,
// queues, holds a worker and counts in the service's attempts — but its
// work is the query endpoint's service time (services[].query_time, drawn
// by the callee machine, model.Callee.QueryTime), after which it is
// answered from the idempotency store (model.Callee.QueryByKey), the
// simulator's probe. The answer is a 2xx status naming the record's
// state (StatusRecord), so that a query's call succeeds whatever the
// record says; its name is also in HeaderRecordState.

// HeaderQuery marks an attempt as a status query by key.
const HeaderQuery = "X-Stormsim-Query"

// HeaderRecordState names the record's state in a status query's answer
// (NOT_FOUND, PROCESSING, SUCCEEDED, FAILED_FINAL, UNKNOWN).
const HeaderRecordState = "X-Stormsim-Record-State"

// statusRecordBase is the status of a NOT_FOUND answer; each further
// state is one more (StatusRecord).
const statusRecordBase = 270

// StatusRecord is the HTTP status a status query answers record state st
// with: 270 NOT_FOUND, 271 PROCESSING, 272 SUCCEEDED, 273 FAILED_FINAL,
// 274 UNKNOWN — success statuses, since the query itself succeeded.
func StatusRecord(st model.RecordState) int { return statusRecordBase + int(st) }

// RecordOf is the record state a status query's answer status names; ok
// is false for a status no query answers with.
func RecordOf(status int) (st model.RecordState, ok bool) {
	if status < statusRecordBase || status > StatusRecord(model.Unknown) {
		return 0, false
	}
	return model.RecordState(status - statusRecordBase), true
}

// enableQueries gives the service's callee machine its query endpoint
// when the service has a query_time, drawing from the replica's query
// stream as the simulator does (model.Replica.QueryStream).
func (s *Service) enableQueries() error {
	qt, has, err := model.Delay(s.cfg.QueryTime, "query_time")
	if err != nil {
		return fmt.Errorf("load: services.%s.%w", s.name, err)
	}
	var qrng, crash *rand.Rand
	if has {
		// The plan names the stream when the scenario converges; a
		// service served for other clients' queries takes the same name.
		qrng = model.Stream(s.plan.Seed, cmp.Or(s.node.QueryStream, model.QueryStream(s.name, s.rep)))
		s.hasQuery = true
	}
	if s.node.CrashStream != "" {
		crash = model.Stream(s.plan.Seed, s.node.CrashStream)
	}
	if qrng != nil || crash != nil {
		s.cm.EnableQueries(qt, qrng, crash)
	}
	return nil
}

// serveQuery does a started probe's work — a status query's or a fact
// query's: the query endpoint's service time (at a service without one, a
// fact query takes its ordinary service time, as in the simulator), then
// the answer read from the records at its end.
func (s *Service) serveQuery(ctx context.Context, r *http.Request, rp *reply, wt *waiter, a attemptInfo) {
	s.mu.Lock()
	start := s.startAt(wt)
	d := s.cm.QueryTime()
	if !s.hasQuery {
		d = s.cm.ServiceTime()
	}
	end := start + d
	s.mu.Unlock()
	if !clock.Sleep(s.clk, ctx, end-s.now()) {
		s.mu.Lock()
		now := s.clock()
		s.cm.Finish(now, model.Ending{Outcome: policies.Timeout})
		s.freeSlot(wt, now)
		s.cm.Release()
		s.dispatchLocked(now)
		s.mu.Unlock()
		rp.add(cCancelled, cTimedOut)
		return
	}
	s.mu.Lock()
	now := s.clock()
	st := s.cm.QueryByKey(now, a.key)
	s.cm.Finish(now, model.Ending{Outcome: policies.OK})
	s.freeSlot(wt, end)
	s.cm.Release()
	s.dispatchLocked(now)
	fate := s.cm.Reply(true, r.Context().Err() != nil)
	s.mu.Unlock()
	if fate == model.Delivered {
		status := StatusRecord(st)
		if a.fact {
			f := s.factAnswer(a.id)
			status = StatusFact(f)
			rp.w.Header().Set(HeaderFact, f.String())
		} else {
			rp.w.Header().Set(HeaderRecordState, st.String())
		}
		rp.worked(policies.OK)
		rp.w.WriteHeader(status)
		rp.record(policies.OK)
		return
	}
	s.answerWorked(r, rp, fate, model.Answer{Outcome: policies.OK})
}

// checkQuery refuses a status query to a service without a query
// endpoint, one that names no key, and one that is also a write.
func (s *Service) checkQuery(a *attemptInfo) {
	switch {
	case a.fact && a.query:
		a.refuse(http.StatusBadRequest, fmt.Sprintf("%s and %s: a probe is a status query or a fact query, not both", HeaderQuery, HeaderFact))
	case a.fact && a.id == "":
		a.refuse(http.StatusBadRequest, fmt.Sprintf("%s: a fact query names the write's %s", HeaderFact, transport.HeaderRequestID))
	case !a.query:
	case !s.hasQuery:
		a.refuse(http.StatusBadRequest, fmt.Sprintf("%s: service %s has no query endpoint (query_time)", HeaderQuery, s.name))
	case a.key == "":
		a.refuse(http.StatusBadRequest, fmt.Sprintf("%s: a status query names the write's key in %s", HeaderQuery, transport.HeaderIdempotencyKey))
	case a.write:
		a.refuse(http.StatusBadRequest, fmt.Sprintf("%s: a status query is no write (drop %s)", HeaderQuery, transport.HeaderWrite))
	}
}
