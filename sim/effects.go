package sim

import (
	"time"

	"github.com/stormsim/stormsim/idempotency"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/model"
	"github.com/stormsim/stormsim/policies"
	"github.com/stormsim/stormsim/topology"
)

// effects is a service's external effect and versioned write (issue 34,
// items 4 and 5), shared by its replicas: the channel and the entities'
// versions are outside the processes, and the counts are the service's.
// A service with neither has none (service.fx is nil), so the hot path of
// every other service pays one nil check.
type effects struct {
	// ext: the service's work is an external effect through ch; bit is
	// the service's bit in request.effected.
	ext bool
	ch  model.Channel
	bit uint64
	fx  metrics.Effects
	// ver holds the versions of a versioned write's entities; nil without.
	ver *model.Versions
	vw  metrics.VersionedWrites
}

// newEffects returns the effects of service cfg: first's when it is a later
// replica, nil when the service has none.
func newEffects(m *run, cfg *topology.Service, first *service) *effects {
	if first != nil {
		return first.fx
	}
	if cfg.ExternalEffect == nil && cfg.VersionedWrite == nil {
		return nil
	}
	fx := &effects{}
	if e := cfg.ExternalEffect; e != nil {
		fx.ext, fx.ch, fx.bit = true, model.NewChannel(e), 1<<m.effectBits
		m.effectBits++
	}
	if w := cfg.VersionedWrite; w != nil {
		fx.ver = model.NewVersions(w, m.sc.Seed, cfg.Name)
	}
	return fx
}

// readVersion is the read of a's read-modify-write, as its work starts:
// its intent's entity and that entity's version now.
func (m *run) readVersion(a *attempt) {
	vs := a.svc.fx.ver
	if vs == nil {
		return
	}
	a.entity = int32(vs.Entity(a.req.id))
	a.readVer = vs.Read(int(a.entity))
	a.tries = 1
}

// effectsDone runs when a's work is done without an injected error: its
// versioned write, then its external effect. It reports whether it took a
// over — to redo the read-modify-write, or to answer conflict — so that
// workDone goes no further.
func (m *run) effectsDone(a *attempt) bool {
	s, fx := a.svc, a.svc.fx
	if vs := fx.ver; vs != nil {
		w := vs.Write(int(a.entity), a.readVer, int(a.tries))
		if a.counted {
			w.Count(&fx.vw)
		}
		switch w {
		case model.WriteRedo:
			a.tries++
			var work time.Duration
			a.readVer, work = vs.Redo(int(a.entity), s.cm.ServiceTime)
			a.ev = m.eng.After(work, m.hWorkDone, a)
			return true
		case model.WriteAborted:
			m.answer(a, policies.Conflict, 0, false, true)
			return true
		}
	}
	if fx.ext {
		req := a.req
		repeat := req.effected&fx.bit != 0
		req.effected |= fx.bit
		if d := fx.ch.Execute(repeat); a.counted {
			d.Count(&fx.fx)
		}
	}
	return false
}

// irrevocableSent runs when an attempt of cr, a call of an irrevocable
// step, is sent: from now on the attempt making the step cannot be stopped
// (cancel leaves it alone), and its intent has passed the point of no return.
func (m *run) irrevocableSent(cr *callRun) {
	cr.req.irrevocable = true
	if o := cr.owner; o != nil {
		o.pastIrrevocable = true
	}
}

// countIrrevocable counts a finished intent that passed an irrevocable
// step, and whether its caller saw it end unknown.
func (m *run) countIrrevocable(req *request) {
	if !req.counted {
		return
	}
	m.irrevocable.Sent++
	if req.irrevocableUnknown() {
		m.irrevocable.Unknown++
	}
}

// irrevocableUnknown reports whether req passed an irrevocable step and its
// caller saw it end unknown: an intent whose effect is under way or done
// but unconfirmed. The certainty tracker (convergence) settles such
// intents; this is the one place that says which they are.
func (req *request) irrevocableUnknown() bool {
	return req.irrevocable && model.View(req.result) == idempotency.Unknown
}

// effectSummaries fills ss with service s's effects, if it has any.
func effectSummaries(s *service, ss *metrics.ServiceSummary) {
	fx := s.fx
	if fx == nil {
		return
	}
	if fx.ext {
		e := fx.fx
		ss.Effects = &e
	}
	if fx.ver != nil {
		vw := fx.vw
		if vw.Writes > 0 {
			vw.ConflictRate = float64(vw.Conflicts) / float64(vw.Writes)
		}
		ss.VersionedWrites = &vw
	}
}

// irrevocableSummary is the run's irrevocable counts when the scenario has
// an irrevocable step, nil otherwise.
func (m *run) irrevocableSummary() *metrics.Irrevocable {
	if !m.hasIrrevocable {
		return nil
	}
	ir := m.irrevocable
	return &ir
}
