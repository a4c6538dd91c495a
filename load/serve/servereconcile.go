package serve

import (
	"context"
	"sync"
	"time"

	"github.com/stormsim/stormsim/load/internal/clock"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/model"
)

// This file binds the committing service's reconciliation job
// (services[].reconciliation) in serve with the simulator's machine,
// model.Reconciler: the records held UNKNOWN (a write whose steps timed
// out), those of crashed owners without recovery, and those recovery
// could not settle are watched; every interval, a timer on the service's
// clock, a scan takes a batch and sends one fact query per record,
// cost_per_item apart, over the plan's fact edge; each answer is resolved
// by the Reconciler, which settles the record (model.Callee.Settle) or,
// after max_tries failures, sends it to the manual queue.

// reconciliation is the job's state, shared by the committing service's
// replicas; job and ids are guarded by the service's mu.
type reconciliation struct {
	job   *model.Reconciler
	facts *probeEdge
	edge  *model.Edge
	// ids maps each watched key to its write's request id and whether
	// the write is counted (after the warm-up).
	ids map[string]reconItem
	// out counts the fact queries sent and not answered; scans counts the
	// scans, idleScan is the last that found nothing watched nor out.
	out             int
	scans, idleScan int
	// certain, if set, hears each intent the job settled or sent to the
	// manual queue (the driver's certainty, RunScenario).
	certain func(id string, by model.Resolution)
	wg      sync.WaitGroup
}

type reconItem struct {
	key, id string
}

// wireReconcile binds the job of a committing service with
// reconciliation and starts its scans.
func (s *Service) wireReconcile(c ServiceConfig) error {
	r := s.plan.Converge.Reconcile
	if r == nil || !s.cm.Commits() {
		return nil
	}
	facts, err := s.factProbes(r.Fact, c)
	if err != nil {
		return err
	}
	s.recon = &reconciliation{job: model.NewReconciler(r.Policy), facts: facts, edge: r.Fact, ids: map[string]reconItem{}}
	s.clk.AfterFunc(r.Policy.Interval-s.clk.Now(), s.scan)
	return nil
}

// watch hands the record of key (request id id), begun at began, to the
// job (under mu); without reconciliation it does nothing.
func (s *Service) watch(key, id string, began time.Duration) {
	rc := s.recon
	if rc == nil {
		return
	}
	if _, ok := rc.ids[key]; !ok {
		rc.ids[key] = reconItem{key: key, id: id}
		rc.job.Watch(key, began)
	}
}

// held is serveWork's, under mu, for a write whose answer was a timeout:
// with reconciliation its record is held UNKNOWN, and watched.
func (s *Service) held(now time.Duration, key, id string) {
	if s.recon == nil {
		return
	}
	if st, _, began := s.cm.Lookup(now, key); st == model.Unknown {
		s.watch(key, id, began)
	}
}

// scan runs one scan and arms the next, until the service closes.
func (s *Service) scan() {
	rc := s.recon
	if s.stop.Err() != nil {
		return
	}
	s.mu.Lock()
	now := s.clock()
	rc.scans++
	if rc.job.Pending() == 0 && rc.out == 0 {
		rc.idleScan = rc.scans
	}
	keys := rc.job.Scan(now, func(key string) (model.RecordState, bool) {
		st, ok, _ := s.cm.Lookup(now, key)
		return st, ok
	})
	for _, key := range rc.job.Dropped() {
		delete(rc.ids, key)
	}
	items := make([]reconItem, len(keys))
	for i, key := range keys {
		items[i] = rc.ids[key]
	}
	rc.out += len(items)
	rc.wg.Add(len(items))
	p := rc.job.Policy()
	s.mu.Unlock()
	go func() { // a fake clock calls scan as it advances: never block it
		for i, it := range items {
			if i > 0 && !clock.Sleep(s.clk, s.stop, p.CostPerItem) {
				for _, rest := range items[i:] {
					s.reconciled(rest, model.FactUnknown, false)
				}
				return
			}
			go s.reconcile(it)
		}
	}()
	s.clk.AfterFunc(now+p.Interval-s.clk.Now(), s.scan)
}

// reconcile sends item it's fact query and applies the job's decision.
func (s *Service) reconcile(it reconItem) {
	f := model.FactUnknown
	if status, ok := s.recon.facts.call(s.stop, it.id, "", "", true); ok {
		f = FactOf(status)
	}
	s.reconciled(it, f, true)
}

// reconciled applies the job's decision for fact f of item it; resolve
// false only counts the query as over (the service closed).
func (s *Service) reconciled(it reconItem, f model.Fact, resolve bool) {
	rc := s.recon
	defer rc.wg.Done()
	by := model.ByNever
	s.mu.Lock()
	rc.out--
	if resolve {
		now := s.clock()
		d, manual := rc.job.Resolve(it.key, f, func(d model.Recovery) bool {
			ok, _ := s.cm.Settle(now, it.key, d)
			return ok
		})
		switch {
		case manual:
			by = model.ByManual
		case d != model.RecoverUnknown:
			by = model.ByReconciliation
		}
		if !rc.job.Watching(it.key) {
			delete(rc.ids, it.key)
		}
	}
	s.mu.Unlock()
	if by != model.ByNever && rc.certain != nil {
		rc.certain(it.id, by)
	}
}

// ReconcileStats returns the reconciliation job's counters so far, nil
// without one.
func (s *Service) ReconcileStats() *metrics.Reconciliation {
	if s.recon == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.recon.job.Stats()
	return &r
}

// waitReconciled waits, once the run is over, until a scan found the job
// watching nothing and no fact query out — the simulator's last scan: it
// scans while there may be work — polling each interval on the service's
// clock, or until ctx ends.
func (s *Service) waitReconciled(ctx context.Context) {
	rc := s.recon
	if rc == nil {
		return
	}
	s.mu.Lock()
	from := rc.scans
	s.mu.Unlock()
	for {
		s.mu.Lock()
		done := rc.idleScan > from
		s.mu.Unlock()
		if done || !clock.Sleep(s.clk, ctx, rc.job.Policy().Interval) {
			return
		}
	}
}
