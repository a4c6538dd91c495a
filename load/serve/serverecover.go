package serve

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/model"
	"github.com/stormsim/stormsim/policies"
)

// This file binds the committing service's owner crashes (crash_owner)
// and its recovery of stuck PROCESSING records (services[].recovery) in
// serve, with the machines the simulator binds (sim/converge.go): the
// callee draws the crash (model.Callee.OwnerCrashes) once an owner's work
// and steps succeeded; the crashed owner settles nothing and sends no
// reply; at its lease's end — a timer on the service's clock — a recovery
// task sends a fact query over the plan's edge (model.RecoveryPlan.Fact)
// to the downstream, decides by model.Recover and settles the record
// (model.Callee.Settle). The downstream answers a fact query (HeaderFact,
// by the write's request id) after its query endpoint's time with what
// its records say (model.FactAnswer: it did the write's work, or not, or
// it has no query endpoint and cannot tell), as a 2xx status (StatusFact).

// HeaderFact marks an attempt as a fact query about the write whose
// request id it carries.
const HeaderFact = "X-Stormsim-Fact"

// statusFactBase is the status of a fact query answered unknown; found
// and absent follow (StatusFact).
const statusFactBase = 280

// StatusFact is the HTTP status a fact query answers fact f with: 280
// unknown, 281 found, 282 absent.
func StatusFact(f model.Fact) int { return statusFactBase + int(f) }

// FactOf is the fact a fact query's answer status names; an answer that
// is not a fact proves nothing (FactUnknown).
func FactOf(status int) model.Fact {
	if status < statusFactBase || status > StatusFact(model.FactAbsent) {
		return model.FactUnknown
	}
	return model.Fact(status - statusFactBase)
}

// recovery is the committing service's recovery task state, shared by
// its replicas (their store is one).
type recovery struct {
	resume bool
	facts  *probeEdge
	edge   *model.Edge // the plan's fact query edge
	// counts is what the tasks decided (under the service's mu).
	counts metrics.Recoveries
	// certain, if set, hears each intent a task made certain (the
	// driver's certainty, RunScenario).
	certain func(id string, by model.Resolution)
	wg      sync.WaitGroup
}

// factLog is a fact service's records: the writes whose work it did, by
// request id, shared by its replicas.
type factLog struct {
	mu   sync.Mutex
	done map[string]bool
}

// wireConverge binds the service's part of the plan's convergence: the
// recovery task of a committing service with recovery, the records of a
// fact service.
func (s *Service) wireConverge(c ServiceConfig) error {
	cp := s.plan.Converge
	if cp == nil {
		return nil
	}
	if c.First != nil {
		s.rec, s.recon, s.factsLog = c.First.rec, c.First.recon, c.First.factsLog
		return nil
	}
	if err := s.wireReconcile(c); err != nil {
		return err
	}
	if r := cp.Recovery; r != nil && r.Fact.To == s.name {
		s.factsLog = &factLog{done: map[string]bool{}}
	}
	if r := cp.Reconcile; r != nil && r.Fact.To == s.name {
		s.factsLog = &factLog{done: map[string]bool{}}
	}
	r := cp.Recovery
	if r == nil || !s.cm.Commits() {
		return nil
	}
	facts, err := s.factProbes(r.Fact, c)
	if err != nil {
		return err
	}
	s.rec = &recovery{resume: r.Config.OnAbsent == "resume", facts: facts, edge: r.Fact}
	return nil
}

// factProbes binds the fact query edge pe of the service's job to its
// downstream.
func (s *Service) factProbes(pe *model.Edge, c ServiceConfig) (*probeEdge, error) {
	u, ok := c.URLs[pe.To]
	if !ok {
		return nil, fmt.Errorf("load: %s.to: no service %q", pe.Field, pe.To)
	}
	return newProbeEdge(pe, s.plan.Seed, c.Transport, s.clk, s.stop, u, HeaderFact)
}

// ownerCrashed is serveWork's, under mu, for an owner whose work and
// steps succeeded: it reports whether the owner crashed there
// (crash_owner). A crashed owner settles nothing — its record stays
// PROCESSING — and its effect happened; with recovery a task takes the
// record up when the lease ends.
func (s *Service) ownerCrashed(now time.Duration, a attemptInfo, key string, fence uint64) bool {
	if fence == 0 || !s.cm.OwnerCrashes(now) {
		return false
	}
	s.cm.FinishCrashed(now)
	if rec := s.rec; rec != nil {
		_, _, began := s.cm.Lookup(now, key)
		at := max(began+s.cm.Lease(), now)
		rec.wg.Add(1)
		s.clk.AfterFunc(at-now, func() {
			go func() { // a fake clock calls f as it advances: never block it
				defer rec.wg.Done()
				if s.stop.Err() != nil {
					return // closed: a lease ending after Close recovers nothing
				}
				s.recover(a.id, key, !a.warm)
			}()
		})
	} else if s.recon != nil {
		_, _, began := s.cm.Lookup(now, key)
		s.watch(key, a.id, began)
	}
	return true
}

// recover is the recovery task of the record of key (request id): the
// fact query, then the decision applied to the record.
func (s *Service) recover(id, key string, counted bool) {
	rec := s.rec
	f := model.FactUnknown
	if status, ok := rec.facts.call(s.stop, id, "", "", counted); ok {
		f = FactOf(status)
	}
	s.mu.Lock()
	now := s.clock()
	d := model.Recover(f, rec.resume)
	ok, executed := s.cm.Settle(now, key, d)
	if ok && d == model.RecoverUnknown {
		_, _, began := s.cm.Lookup(now, key)
		s.watch(key, id, began) // handed to reconciliation
	}
	if ok {
		switch d {
		case model.RecoverSucceeded:
			rec.counts.Succeeded++
		case model.RecoverFailed:
			rec.counts.Failed++
		case model.RecoverResume:
			rec.counts.Resumed++
		default:
			rec.counts.Unknown++
		}
	}
	s.mu.Unlock()
	if executed {
		s.executed(id)
	}
	if ok && d != model.RecoverUnknown && rec.certain != nil {
		rec.certain(id, model.ByRecovery)
	}
}

// Recoveries returns what the service's recovery tasks decided so far,
// nil without recovery.
func (s *Service) Recoveries() *metrics.Recoveries {
	if s.rec == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.rec.counts
	return &r
}

// waitRecoveries waits until every recovery task due has run, or ctx ends.
func (s *Service) waitRecoveries(ctx context.Context) {
	if s.rec == nil {
		return
	}
	done := make(chan struct{})
	go func() { s.rec.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// recordFact records at a fact service that it did the work of write id.
func (s *Service) recordFact(id string) {
	if s.factsLog == nil {
		return
	}
	s.factsLog.mu.Lock()
	s.factsLog.done[id] = true
	s.factsLog.mu.Unlock()
}

// factAnswer is what the service's records say of write id.
func (s *Service) factAnswer(id string) model.Fact {
	done := false
	if s.factsLog != nil {
		s.factsLog.mu.Lock()
		done = s.factsLog.done[id]
		s.factsLog.mu.Unlock()
	}
	return model.FactAnswer(s.hasQuery, done)
}

// crashedReply is the reply of an owner that crashed: none; the caller
// hears nothing until it gives up (the work counts as done).
func (s *Service) crashedReply(r *http.Request, rp *reply) {
	rp.worked(policies.OK)
	rp.add(cTimedOut)
	rp.record(policies.OK)
	select {
	case <-r.Context().Done():
	case <-s.stop.Done():
	}
}
