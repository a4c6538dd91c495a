package sim

import (
	"fmt"
	"strconv"
	"time"

	"github.com/stormsim/stormsim/model"
	"github.com/stormsim/stormsim/policies"
	"github.com/stormsim/stormsim/topology"
)

// service is one simulated service: the model's callee machine driven by
// engine events, its downstream steps, the attempts waiting to be
// rejected, and its counters.
type service struct {
	m     *run
	idx   int
	name  string
	cfg   *topology.Service
	cm    model.Callee[*attempt] // by value: one indirection less per event
	steps []step
	// cancel: the service stops an attempt's work when its caller gives up
	// (cancel_on_timeout).
	cancel bool
	// writes: a write's answer here goes through finishWrite (the
	// committing service, or a fact service whose work is the facts:
	// facts); hasQuery: it has a query endpoint (query_time)
	writes, facts, hasQuery bool

	shedFn     func(*attempt)
	deferred   []*attempt // shed or expired, to be answered by an event
	deferArmed bool

	c    svcCounters
	hist *latencyCounts
	// notOK holds the counted attempts not answered OK after doing their
	// work (refusals, failures): hist without them is the latency of a
	// useful answer. Keeping the complement records nothing more per
	// attempt in the common case of all answers OK.
	notOK *latencyCounts

	// snapshots of the machine's time integrals at the current interval's
	// start (the machine keeps the warm-up's: model.Callee.Measured), and
	// the interval's longest queue
	ivBusy, ivQueue    float64
	ivQMax             int
	ivAttempts         int64
	ivRejected, ivShed int64

	rep  int        // this replica's index
	reps []*service // every replica of the service, this one included

	fx *effects // its external effect and versioned write; nil without
}

type svcCounters struct {
	attempts, succeeded, failed, rejected int64
	timedOut, wasted, shed, executions    int64
}

// newService binds replica rp of service sp; a replica after the first
// shares first's latency counts and idempotency store.
func newService(m *run, sp *model.ServicePlan, rp *model.Replica, first *service) (*service, error) {
	cfg := sp.Config
	s := &service{m: m, idx: sp.Index, name: cfg.Name, cfg: cfg, cancel: cfg.CancelOnTimeout, rep: rp.Index, writes: sp.Commits}
	cm, err := model.NewCallee[*attempt](cfg, m.stream(rp.Stream), sp.Commits, m.plan.Keyed)
	if err != nil {
		return nil, err
	}
	s.cm = *cm
	if first != nil {
		s.cm.ShareStore(&first.cm)
		s.hist, s.notOK = first.hist, first.notOK
	} else {
		s.hist, s.notOK = newLatencyCounts(), newLatencyCounts()
	}
	s.fx = newEffects(m, cfg, first)
	s.shedFn = func(a *attempt) {
		a.shed = true
		a.state = attDeferred
		s.deferred = append(s.deferred, a)
	}
	// A cancelled attempt frees its queue place at once (cancel); its record
	// is released when the queue lets go of it.
	s.cm.TrackCancelled(func(a *attempt) bool { return a.cancelled }, m.releaseServer)
	return s, nil
}

// qlen is the number of live attempts waiting.
func (s *service) qlen() int { return s.cm.QueueLen() }

// noteQueue updates the queue maxima after the queue grew.
func (s *service) noteQueue() {
	if q := s.qlen(); q > s.ivQMax {
		s.ivQMax = q
		s.cm.NoteQueue()
	}
}

// attempt states, from the callee's point of view.
const (
	attSending  uint8 = iota // on the network toward the callee
	attQueued                // waiting for a worker
	attDeferred              // out of the queue, to be rejected (shed or expired)
	attWorking               // holding a worker, doing its service time
	attCalling               // holding a worker, waiting on downstream calls
	attReplying              // answered; the reply is on the network
	attDone                  // the callee is done with it
)

// attempt is one attempt of a call at its callee. The record is shared by
// the caller (until it gets the answer, times out or abandons it) and the
// callee (until it has answered or dropped it); it returns to the pool when
// both let go.
type attempt struct {
	svc         *service
	req         *request
	edge        *edge
	caller      *callRun // nil once the caller let go
	k           int      // attempt number within the caller's call
	deadline    time.Duration
	arrived     time.Duration
	state       uint8
	serverHeld  bool
	counted     bool
	lost        bool // counted timed out (the caller gave up, or the reply was dropped)
	shed        bool
	holding     bool // holds a worker
	cancelled   bool
	hasDeadline bool  // the fields of one word together: the record is zeroed on every reuse
	ev          Timer // the callee-side pending event
	tmo         Timer // the caller's per-attempt timeout
	stepIdx     int
	grp         *group
	fence       uint64 // > 0: owns its request's idempotency key
	preset      bool   // answer with answer/retryAfter at once, doing no work
	answer      policies.Outcome
	dontRetry   bool
	waitOut     bool   // its wait for a pool slot ran out (Call.WaitTimedOut)
	gen         uint32 // changes each time the record is reused

	retryAfter time.Duration
	pool       *poolSlot // its place in the edge's connection pool, if any
	// call is its step's call when the step has one (grp, when several).
	call *callRun
	// entity, readVer and tries are its versioned write's (readVersion):
	// the entity, the version read, the read-modify-writes begun.
	entity int32
	tries  uint16
	// pastIrrevocable: it sent an irrevocable step, so nothing cancels it.
	pastIrrevocable bool
	readVer         uint64
}

// newAttempt takes an attempt record from the pool and enforces the run's
// limits (and, every 4096 attempts, its context).
func (m *run) newAttempt() *attempt {
	a := m.attempts.get()
	m.alive++
	m.created++
	if m.alive > m.maxInflight || m.created&0xfff == 0 {
		m.checkLimits() // out of line: its formatting would enlarge this frame
	}
	return a
}

// checkLimits is newAttempt's rare part: the run diverges past
// limits.max_inflight, and every 4096 attempts the event limits and the
// context are checked.
func (m *run) checkLimits() {
	if m.alive > m.maxInflight {
		m.diverge(fmt.Sprintf("more than %d attempts alive (limits.max_inflight)", m.maxInflight))
	} else if !m.overEvents() && m.checkCtx != nil && m.checkCtx() {
		m.interrupt()
	}
}

// releaseServer drops the callee's hold on a; the record is freed when the
// caller has let go too (a.caller == nil).
func (m *run) releaseServer(a *attempt) {
	a.serverHeld = false
	a.state = attDone
	if a.caller == nil {
		m.freeAttempt(a)
	}
}

func (m *run) freeAttempt(a *attempt) {
	req, gen := a.req, a.gen+1
	*a = attempt{gen: gen}
	m.attempts.put(a)
	m.alive--
	m.unref(req)
}

// arrive runs when attempt a reaches its callee.
func (m *run) arrive(a *attempt) {
	s := a.svc
	now := m.eng.Now()
	a.arrived = now
	// a.ev, the arrival that just ran, is left stale rather than cleared:
	// a Timer of a record that ran stops nothing (its generation moved on),
	// and startWork or answer replace it before it matters.
	s.ivAttempts++
	if a.counted {
		s.c.attempts++
	}
	if a.caller == nil {
		m.countTimedOut(a) // its caller gave up while it travelled
	}
	expired := s.cm.Expired(now, a.hasDeadline, a.deadline)
	if s.cm.ArriveIdle(now, expired) { // the common case, inlined
		m.startWork(a)
		return
	}
	if !expired && s.cm.Open() {
		// The common case at a busy service, inlined too.
		s.cm.Advance(now)
		if s.cm.Enqueue(now, a) {
			a.state = attQueued
			s.noteQueue()
			return
		}
	}
	switch adm, ans := s.cm.Arrive(now, a, expired); adm {
	case model.Started:
		m.startWork(a)
	case model.Queued:
		a.state = attQueued
		s.noteQueue()
	default:
		m.reject(a, ans)
	}
}

// reject answers a before it started any work.
func (m *run) reject(a *attempt, ans model.Answer) {
	a.svc.ivRejected++
	if a.counted {
		a.svc.c.rejected++
	}
	m.answer(a, ans.Outcome, ans.RetryAfter, ans.DontRetry, false)
}

// startWork schedules the work of a, which the machine put on a worker.
func (m *run) startWork(a *attempt) {
	s := a.svc
	a.holding = true
	a.state = attWorking
	if a.preset {
		m.cv.startProbe(a) // a status or fact query (converge.go)
		return
	}
	// The request record is read only when the store needs it: it is
	// rarely in cache, and most services keep no store.
	// Only a write at a keyed service consults the store; the rest draw
	// their service time directly (what Begin would return for them).
	// A versioned write reads first (effects.go).
	if s.fx != nil {
		m.readVersion(a)
	}
	if !s.cm.Keyed() || !a.req.write {
		a.ev = m.eng.After(s.cm.ServiceTime(), m.hWorkDone, a)
		return
	}
	d, fence, preset := s.cm.Begin(m.eng.Now(), true, a.req.idemKey(), 1)
	a.fence = fence
	if preset {
		ans := s.cm.PresetAnswer()
		a.preset = true
		a.answer, a.retryAfter = ans.Outcome, ans.RetryAfter
	}
	a.ev = m.eng.After(d, m.hWorkDone, a)
}

// idemKey returns the request's idempotency key, made on first use.
func (req *request) idemKey() string {
	if req.key == "" {
		req.key = strconv.FormatUint(req.id, 10)
	}
	return req.key
}

// dispatch starts queued work while workers are allowed. Attempts it
// finds expired, and those the queue sheds, are answered by a separate
// event at the same instant: dispatch runs inside other attempts' state
// changes (a reply, a cancellation), and answering from there would call
// back into callers mid-change.
func (m *run) dispatch(s *service) {
	now := m.eng.Now()
	s.cm.Advance(now) // Next may shed: integrate the queue before it changes
	for s.cm.CanStart() {
		a, ok := s.cm.Pop() // the common case, inlined
		if !ok {
			if a, ok = s.cm.Next(now, s.shedFn); !ok {
				break
			}
		}
		if s.cm.Expired(now, a.hasDeadline, a.deadline) {
			a.state = attDeferred
			s.deferred = append(s.deferred, a)
			continue
		}
		s.cm.Start()
		m.startWork(a)
	}
	if len(s.deferred) > 0 && !s.deferArmed {
		s.deferArmed = true
		m.eng.After(0, m.hDeferred, s)
	}
}

// answerDeferred rejects the attempts dispatch shed or found expired.
func (m *run) answerDeferred(s *service) {
	// Answers may lead to more dispatching here, which appends to
	// s.deferred; the loop takes those too.
	for i := 0; i < len(s.deferred); i++ {
		a := s.deferred[i]
		s.deferred[i] = nil
		switch {
		case a.cancelled:
			m.releaseServer(a)
		case a.shed:
			s.ivShed++
			if a.counted {
				s.c.shed++
			}
			m.reject(a, s.cm.Overloaded())
		default:
			m.reject(a, model.Answer{Outcome: policies.Timeout})
		}
	}
	s.deferred = s.deferred[:0]
	s.deferArmed = false
}

// workDone runs when a's service time is over.
func (m *run) workDone(a *attempt) {
	s := a.svc
	// a.ev is left stale, as in arrive: cancel's Stop of it is a no-op.
	if a.preset {
		if a.edge.probe != 0 {
			m.cv.answerProbe(a)
		}
		m.answer(a, a.answer, a.retryAfter, false, true)
		return
	}
	if o, ok := s.cm.WorkDone(); !ok {
		m.answer(a, o, 0, false, true)
		return
	}
	if s.fx != nil && m.effectsDone(a) {
		return
	}
	if len(s.steps) == 0 {
		m.answer(a, policies.OK, 0, false, true)
		return
	}
	a.state = attCalling
	m.runStep(a, 0)
}

// stepDone continues a after its current step of downstream calls, by the
// sequence rule (model.Callee.AfterStep).
func (m *run) stepDone(a *attempt, ok bool, o policies.Outcome) {
	a.grp = nil
	if next, more, ans := a.svc.cm.AfterStep(a.stepIdx, len(a.svc.steps), ok, o); more {
		m.runStep(a, next)
	} else {
		m.answer(a, ans, 0, false, true)
	}
}

// answer ends a's stay at its callee with class o and sends the reply.
// worked says whether the attempt did its work (not a rejection).
func (m *run) answer(a *attempt, o policies.Outcome, ra time.Duration, dr bool, worked bool) {
	s := a.svc
	now := m.eng.Now()
	crashed := false
	if a.fence == 0 && !(s.writes && a.req.write) {
		s.cm.FinishPlain(now) // the common case, inlined: not a write's commit
	} else {
		crashed = m.finishWrite(a, o, worked)
	}
	if a.counted && worked {
		if o == policies.OK {
			s.c.succeeded++
		} else {
			s.c.failed++
		}
	}
	if a.counted {
		lat := now - a.arrived
		i := latencyIndex(lat)
		s.hist.add(i, lat)
		if !worked || o != policies.OK {
			s.notOK.count(i)
		}
	}
	// From here on a cannot be cancelled: its work is over. Dispatching may
	// re-enter the callers above, so a's fate is read only afterwards.
	a.state = attReplying
	a.answer, a.retryAfter, a.dontRetry = o, ra, dr
	if a.holding {
		a.holding = false
		s.cm.Release()
		// Only a queue holding something can start work; the common case
		// at an idle service skips the call. (dispatch's other work needs
		// none: the machine advanced to now in Finish, and every attempt it
		// deferred had its event armed by the dispatch that deferred it.)
		if s.cm.CanStart() {
			m.dispatch(s)
		}
	}
	if crashed { // the owner died before replying: nobody answers
		m.countTimedOut(a)
		m.releaseServer(a)
		return
	}
	switch s.cm.Reply(worked, a.caller == nil) {
	case model.Wasted:
		if a.counted {
			s.c.wasted++
		}
		m.releaseServer(a)
		return
	case model.Gone:
		m.releaseServer(a)
		return
	case model.Lost:
		m.countTimedOut(a)
		m.releaseServer(a)
		return
	}
	if a.edge.hasNet {
		a.ev = m.eng.After(a.edge.delay(a.svc), m.hReply, a)
		return
	}
	if a.caller == &m.direct {
		m.deliverDirect(a) // what deliver does for it, without the handler's call
		return
	}
	m.deliver(a)
}

// finishWrite ends a's stay at its callee with class o at the committing
// service, or when a owns its request's idempotency key: it counts the
// side effect if one executed and settles the key. An owner that crashes
// there (crash_owner) settles nothing and sends no reply: crashed. At a
// fact service a write's work is recorded as the facts.
func (m *run) finishWrite(a *attempt, o policies.Outcome, worked bool) (crashed bool) {
	s := a.svc
	var write bool
	var key string
	if s.cm.Commits() {
		write = a.req.write
	}
	if a.fence > 0 {
		key = a.req.key
		if worked && o == policies.OK && s.cm.OwnerCrashes(m.eng.Now()) {
			m.cv.ownerCrashed(a)
			return true
		}
	}
	// A timeout leaves the write's outcome unknown: with reconciliation
	// the owner holds its key (model.Ending.Unknown), which the job watches.
	unknown := o == policies.Timeout && a.fence > 0
	if s.cm.Finish(m.eng.Now(), model.Ending{Outcome: o, Worked: worked && !a.preset, Write: write, Key: key, Fence: a.fence, Unknown: unknown}) {
		a.req.executions++
		if a.counted {
			s.c.executions++
		}
	}
	if unknown && m.cv != nil {
		m.cv.held(a.req)
	}
	if s.facts && worked && !a.preset && o == policies.OK && a.req.write {
		a.req.factDone = true
	}
	a.fence = 0
	return false
}

// cancel stops a at its callee because its caller gave up and the callee
// honours cancellation: it leaves the queue or frees its worker, and its
// own downstream calls are abandoned in turn.
func (m *run) cancel(a *attempt) {
	s := a.svc
	now := m.eng.Now()
	switch a.state {
	case attSending:
		m.eng.Stop(a.ev)
		m.releaseServer(a)
	case attQueued:
		a.cancelled = true
		s.cm.CancelQueued(now)
	case attDeferred:
		a.cancelled = true
		s.cm.CancelDeferred()
	case attWorking, attCalling:
		if a.pastIrrevocable {
			return // it sent an irrevocable step: it runs to its end
		}
		m.eng.Stop(a.ev)
		m.abortStep(a)
		var key string
		if a.fence > 0 {
			key = a.req.key
		}
		s.cm.CancelWorking(now, key, a.fence, a.holding)
		a.fence, a.holding = 0, false
		m.releaseServer(a)
		m.dispatch(s)
	}
}

// faultEvent starts or ends one fault.
type faultEvent struct {
	svc   *service
	f     *topology.Fault
	start bool
}

func (ev *faultEvent) apply(m *run) {
	s := ev.svc
	if ev.start {
		s.cm.FaultStarted(m.eng.Now(), ev.f)
		if ev.f.ResetConnections {
			m.resetConnections(s)
		}
	} else {
		s.cm.FaultEnded(m.eng.Now(), ev.f)
	}
	m.dispatch(s)
}
