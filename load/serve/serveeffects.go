package serve

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/stormsim/stormsim/idempotency"
	"github.com/stormsim/stormsim/load/edge"
	"github.com/stormsim/stormsim/load/internal/clock"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/model"
	"github.com/stormsim/stormsim/policies"
	"github.com/stormsim/stormsim/topology"
)

// This file binds a served service's effects (issue 34, items 4 and 5)
// to the same clock-free machines the simulator binds (sim/effects.go):
// its external effect's channel (model.Channel) and its versioned
// write's entities (model.Versions). An attempt's read-modify-write reads
// its intent's entity when its work starts and writes when the work is
// done without an injected error; then the external effect executes once.
// The intent is the logical request (its X-Stormsim-Request-Id, the
// simulator's request id), so its attempts write one entity and a second
// execution of its effect is a repeat the channel delivers again (dedupe:
// none, a duplicate) or absorbs (dedupe: key).

// serveEffects is a service's external effect and versioned write, shared
// by its replicas (the channel and the entities are outside the
// processes) and guarded by their shared mutex (Service.mu).
type serveEffects struct {
	ext bool
	ch  model.Channel
	// effected holds the intents whose effect executed here.
	effected map[string]bool
	fx       metrics.Effects
	// ver holds the versioned write's entities; nil without one.
	ver *model.Versions
	vw  metrics.VersionedWrites
}

// newServeEffects returns the effects of service cfg: first's when it is
// a later replica, nil when the service has none.
func newServeEffects(cfg *topology.Service, seed uint64, first *Service) *serveEffects {
	if first != nil {
		return first.fx
	}
	if cfg.ExternalEffect == nil && cfg.VersionedWrite == nil {
		return nil
	}
	fx := &serveEffects{}
	if e := cfg.ExternalEffect; e != nil {
		fx.ext, fx.ch, fx.effected = true, model.NewChannel(e), map[string]bool{}
	}
	if w := cfg.VersionedWrite; w != nil {
		fx.ver = model.NewVersions(w, seed, cfg.Name)
	}
	return fx
}

// readVersion is the read of a's read-modify-write as its work starts
// (under mu): its intent's entity and that entity's version now.
func (s *Service) readVersion(a *attemptInfo) {
	if s.fx == nil || s.fx.ver == nil {
		return
	}
	a.entity = s.fx.ver.Entity(intentID(a.id))
	a.readVer = s.fx.ver.Read(a.entity)
}

// intentID is the number of request id: the simulator's request id for
// a scenario run's requests, a digest of another client's id.
func intentID(id string) uint64 {
	if n, err := strconv.ParseUint(id, 10, 64); err == nil {
		return n
	}
	return digest([]byte(id))
}

// effectsDone runs when a's work is done without an injected error: its
// versioned write — redoing the whole read-modify-write (a new read and
// the work again) while the version moved and retry: operation allows —
// then its external effect. ok is false when the write answered conflict
// (o) or ctx ended during a redo; spent is the time the redos took.
func (s *Service) effectsDone(ctx context.Context, a *attemptInfo) (o policies.Outcome, ok bool, spent time.Duration) {
	fx := s.fx
	from := s.now()
	for try := 1; fx.ver != nil; try++ {
		s.mu.Lock()
		w := fx.ver.Write(a.entity, a.readVer, try)
		if !a.warm {
			w.Count(&fx.vw)
		}
		var redo time.Duration
		if w == model.WriteRedo {
			a.readVer, redo = fx.ver.Redo(a.entity, s.cm.ServiceTime)
		}
		s.mu.Unlock()
		if w == model.WriteAborted {
			return policies.Conflict, false, s.now() - from
		}
		if w != model.WriteRedo {
			break
		}
		if !clock.Sleep(s.clk, ctx, redo) {
			return policies.OK, false, s.now() - from // cancelled: serveWork ends it
		}
	}
	if fx.ext {
		s.mu.Lock()
		repeat := fx.effected[a.id]
		fx.effected[a.id] = true
		if d := fx.ch.Execute(repeat); !a.warm {
			d.Count(&fx.fx)
		}
		s.mu.Unlock()
	}
	return policies.OK, true, s.now() - from
}

// effectStats fills st with the service's effects, if it has any (under
// mu): the first replica's, which every replica shares.
func (s *Service) effectStats(st *Stats) {
	fx := s.fx
	if fx == nil || s.rep != 0 {
		return
	}
	if fx.ext {
		e := fx.fx
		st.Effects = &e
	}
	if fx.ver != nil {
		st.VersionedWrites = (*metrics.VersionedWrites)(nil).Add(&fx.vw) // with its conflict rate
	}
}

// HeaderIrrevocable marks an attempt of an irrevocable step: once sent,
// its callee never cancels it (cancel_on_timeout leaves it alone).
const HeaderIrrevocable = "X-Stormsim-Irrevocable"

var irrevocableHeader = http.Header{HeaderIrrevocable: {"1"}}

// passIrrevocable is afterWork's as a's steps reach their first
// irrevocable one: from here on the attempt runs without its deadline
// (deadlines stop only the steps before it) and nothing its caller does
// cancels it — its context is the service's, with a's span — and its
// request has passed the point of no return.
func (s *Service) passIrrevocable(ctx context.Context, a *attemptInfo) context.Context {
	a.past, a.hasDeadline = true, false
	s.passed.pass(a.id)
	return edge.WithSpanOf(s.stop, ctx)
}

// passedSteps is a cluster's record of the requests that passed an
// irrevocable step, joined with the callers' views at the end of a run
// into the summary's irrevocable counts (metrics.Irrevocable), as the
// simulator counts them: each counted request past the step, and those
// of them whose caller saw UNKNOWN. A nil *passedSteps (a scenario
// without irrevocable steps) records nothing and sums to nil.
type passedSteps struct {
	mu     sync.Mutex
	passed map[string]bool
	views  map[string]policies.CallResult
}

// newPassedSteps returns the record of sc's run, nil without an
// irrevocable step.
func newPassedSteps(sc *topology.Scenario) *passedSteps {
	for i := range sc.Services {
		for j := range sc.Services[i].Calls {
			if sc.Services[i].Calls[j].Irrevocable {
				return &passedSteps{passed: map[string]bool{}, views: map[string]policies.CallResult{}}
			}
		}
	}
	return nil
}

// pass records that request id passed an irrevocable step.
func (p *passedSteps) pass(id string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.passed[id] = true
	p.mu.Unlock()
}

// view records how request id (counted) ended for its caller.
func (p *passedSteps) view(id string, r policies.CallResult) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.views[id] = r
	p.mu.Unlock()
}

// summary is the run's irrevocable counts, nil without an irrevocable step.
func (p *passedSteps) summary() *metrics.Irrevocable {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	ir := &metrics.Irrevocable{}
	for id, r := range p.views {
		if !p.passed[id] {
			continue
		}
		ir.Sent++
		if model.View(r) == idempotency.Unknown {
			ir.Unknown++
		}
	}
	return ir
}
