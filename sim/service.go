package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/stormsim/stormsim/dist"
	"github.com/stormsim/stormsim/idempotency"
	"github.com/stormsim/stormsim/policies"
	"github.com/stormsim/stormsim/topology"
)

// downstream failure modes (topology.Service.DownstreamFailure).
const (
	dfPropagate uint8 = iota
	dfUnavailable
	dfError
	dfTimeout
)

// service is one simulated service: workers, a waiting room, the work an
// attempt does, its downstream calls, and its counters.
type service struct {
	m       *model
	idx     int
	name    string
	cfg     *topology.Service
	rng     *rand.Rand
	st      dist.Sampler
	slow    time.Duration
	workers int
	allowed int // workers that may be busy now (capacity faults)
	busy    int
	queue   *policies.Queue[*attempt]
	qLimit  int
	inflt   int // attempts arrived and not yet answered or cancelled
	steps   []step
	commits bool
	// store dedupes writes by idempotency key (committing service with
	// workload.idempotency_keys only).
	store      *idempotency.Store
	inProgress time.Duration

	downFail  uint8
	errClass  policies.Outcome
	errorRate float64
	pushback  *policies.PushbackConfig
	cancel    bool
	rejectExp bool

	// fault state
	faults     []*topology.Fault
	latencyAdd time.Duration
	faultErr   bool
	faultRate  float64
	drop       float64

	shedFn     func(*attempt)
	deferred   []*attempt // shed or expired, to be answered by an event
	deferArmed bool

	c    svcCounters
	hist *latencyCounts

	// time integrals in worker·ns and item·ns since the start
	lastT               time.Duration
	busyArea, queueArea float64
	// snapshots at warm-up and at the current interval's start
	warmBusy, warmQueue float64
	ivBusy, ivQueue     float64
	queueMax, ivQMax    int
	ivAttempts          int64
	ivRejected, ivShed  int64
}

type svcCounters struct {
	attempts, succeeded, failed, rejected int64
	timedOut, wasted, shed, executions    int64
}

func newService(m *model, idx int, cfg *topology.Service) (*service, error) {
	s := &service{m: m, idx: idx, name: cfg.Name, cfg: cfg, rng: Stream(m.sc.Seed, "service/"+cfg.Name),
		workers: cfg.Workers, allowed: cfg.Workers, slow: cfg.SlowdownPerInflight,
		errorRate: cfg.ErrorRate, cancel: cfg.CancelOnTimeout, rejectExp: cfg.RejectExpired,
		pushback: cfg.Overload.Pushback, hist: newLatencyCounts()}
	if cfg.Workers <= 0 {
		return nil, fmt.Errorf("workers: must be > 0, got %d", cfg.Workers)
	}
	if cfg.SlowdownPerInflight < 0 {
		return nil, fmt.Errorf("slowdown_per_inflight: must be ≥ 0, got %v", cfg.SlowdownPerInflight)
	}
	if !(cfg.ErrorRate >= 0 && cfg.ErrorRate <= 1) {
		return nil, fmt.Errorf("error_rate: must be in [0, 1], got %v", cfg.ErrorRate)
	}
	var err error
	if s.st, _, err = newDelay(&cfg.ServiceTime, "service_time"); err != nil {
		return nil, err
	}
	switch cfg.ErrorClass {
	case "", "error":
		s.errClass = policies.Error
	case "unavailable":
		s.errClass = policies.Unavailable
	case "timeout":
		s.errClass = policies.Timeout
	default:
		return nil, fmt.Errorf("error_class: must be error, unavailable or timeout, got %q", cfg.ErrorClass)
	}
	switch cfg.DownstreamFailure {
	case "", "propagate":
		s.downFail = dfPropagate
	case "unavailable":
		s.downFail = dfUnavailable
	case "error":
		s.downFail = dfError
	case "timeout":
		s.downFail = dfTimeout
	default:
		return nil, fmt.Errorf("downstream_failure: must be propagate, unavailable, error or timeout, got %q", cfg.DownstreamFailure)
	}
	s.qLimit = -1
	if cfg.Queue != nil {
		if *cfg.Queue < 0 {
			return nil, fmt.Errorf("queue: must be ≥ 0, got %d", *cfg.Queue)
		}
		s.qLimit = *cfg.Queue
	}
	if s.queue, err = policies.NewQueue[*attempt](s.qLimit, cfg.Overload); err != nil {
		return nil, err // names overload.<key>
	}
	s.shedFn = func(a *attempt) {
		a.shed = true
		a.state = attDeferred
		s.deferred = append(s.deferred, a)
	}
	// A cancelled attempt frees its queue place at once (cancel); its record
	// is released when the queue lets go of it.
	s.queue.TrackCancelled(func(a *attempt) bool { return a.cancelled }, m.releaseServer)
	return s, nil
}

// newDelay resolves an optional distribution of a delay. An absent one (nil,
// or naming neither a kind nor a value) means no delay: has is false and the
// sampler is the zero Sampler, a constant 0 that draws nothing. A bare value
// is a constant.
func newDelay(d *topology.Dist, field string) (s dist.Sampler, has bool, err error) {
	if d == nil || (d.Dist == "" && d.Value == 0) {
		return dist.Sampler{}, false, nil
	}
	c := *d
	if c.Dist == "" {
		c.Dist = "constant"
	}
	if s, err = dist.New(c); err != nil {
		return s, false, fmt.Errorf("%s: %w", field, err)
	}
	return s, true, nil
}

// qlen is the number of live attempts waiting.
func (s *service) qlen() int { return s.queue.Len() }

// advance integrates busy workers and queue length up to now. Time only
// moves forward: an earlier now is a no-op.
func (s *service) advance(now time.Duration) {
	if now <= s.lastT {
		return
	}
	dt := float64(now - s.lastT)
	s.busyArea += dt * float64(s.busy)
	s.queueArea += dt * float64(s.qlen())
	s.lastT = now
}

// noteQueue updates the queue maxima after the queue grew.
func (s *service) noteQueue() {
	if q := s.qlen(); q > s.ivQMax {
		s.ivQMax = q
		if q > s.queueMax && s.m.eng.Now() >= s.m.warmup {
			s.queueMax = q
		}
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
	hasDeadline bool
	deadline    time.Duration
	arrived     time.Duration
	state       uint8
	serverHeld  bool
	counted     bool
	lost        bool // counted timed out (the caller gave up, or the reply was dropped)
	shed        bool
	holding     bool // holds a worker
	cancelled   bool
	ev          Timer // the callee-side pending event
	tmo         Timer // the caller's per-attempt timeout
	stepIdx     int
	grp         *group
	fence       uint64 // > 0: owns its request's idempotency key
	preset      bool   // answer with answer/retryAfter at once, doing no work
	gen         uint32 // changes each time the record is reused

	answer     policies.Outcome
	retryAfter time.Duration
	dontRetry  bool
}

// newAttempt takes an attempt record from the pool and enforces the run's
// limits (and, every 4096 attempts, its context).
func (m *model) newAttempt() *attempt {
	a := m.attempts.get()
	m.alive++
	m.created++
	if m.alive > m.maxInflight {
		m.diverge(fmt.Sprintf("more than %d attempts alive (limits.max_inflight)", m.maxInflight))
	} else if m.created&0xfff == 0 {
		if m.overEvents() {
			return a
		} else if m.checkCtx != nil && m.checkCtx() {
			m.interrupt()
		}
	}
	return a
}

// releaseServer drops the callee's hold on a; the record is freed when the
// caller has let go too (a.caller == nil).
func (m *model) releaseServer(a *attempt) {
	a.serverHeld = false
	a.state = attDone
	if a.caller == nil {
		m.freeAttempt(a)
	}
}

func (m *model) freeAttempt(a *attempt) {
	req, gen := a.req, a.gen+1
	*a = attempt{gen: gen}
	m.attempts.put(a)
	m.alive--
	m.unref(req)
}

// arrive runs when attempt a reaches its callee.
func (m *model) arrive(a *attempt) {
	s := a.svc
	now := m.eng.Now()
	a.arrived = now
	a.ev = Timer{}
	s.ivAttempts++
	if a.counted {
		s.c.attempts++
	}
	if a.caller == nil {
		m.countTimedOut(a) // its caller gave up while it travelled
	}
	s.advance(now)
	s.inflt++
	if s.rejectExp && a.hasDeadline && now >= a.deadline {
		m.reject(a, policies.Timeout, 0, false)
		return
	}
	if s.busy < s.allowed && s.qlen() == 0 && s.queue.Admits(s.busy) {
		m.startWork(a)
		return
	}
	if !s.queue.Offer(now, a, s.busy) {
		ra, dr := policies.RetryAfter(s.pushback, s.qlen())
		m.reject(a, policies.Unavailable, ra, dr)
		return
	}
	a.state = attQueued
	s.noteQueue()
}

// reject answers a before it started any work.
func (m *model) reject(a *attempt, o policies.Outcome, ra time.Duration, dr bool) {
	a.svc.ivRejected++
	if a.counted {
		a.svc.c.rejected++
	}
	m.answer(a, o, ra, dr, false)
}

// startWork puts a on a worker. Its callers (arrive, dispatch) have
// integrated the service's busy and queue areas up to now.
func (m *model) startWork(a *attempt) {
	s := a.svc
	s.busy++
	a.holding = true
	a.state = attWorking
	if s.store != nil && a.req.write && m.consult(a) {
		a.ev = m.eng.After(0, m.hWorkDone, a)
		return
	}
	d := s.st.Sample(s.rng) + s.latencyAdd
	if s.slow > 0 && s.inflt > 1 {
		d += time.Duration(s.inflt-1) * s.slow
	}
	a.ev = m.eng.After(d, m.hWorkDone, a)
}

// dispatch starts queued work while workers are allowed. Attempts it
// finds expired, and those the queue sheds, are answered by a separate
// event at the same instant: dispatch runs inside other attempts' state
// changes (a reply, a cancellation), and answering from there would call
// back into callers mid-change.
func (m *model) dispatch(s *service) {
	now := m.eng.Now()
	s.advance(now) // Next may shed: integrate the queue before it changes
	for s.busy < s.allowed && (s.queue.Len() > 0 || s.queue.Cancelled() > 0) {
		a, ok := s.queue.Next(now, s.shedFn)
		if !ok {
			break
		}
		if s.rejectExp && a.hasDeadline && now >= a.deadline {
			a.state = attDeferred
			s.deferred = append(s.deferred, a)
			continue
		}
		m.startWork(a)
	}
	if len(s.deferred) > 0 && !s.deferArmed {
		s.deferArmed = true
		m.eng.After(0, m.hDeferred, s)
	}
}

// answerDeferred rejects the attempts dispatch shed or found expired.
func (m *model) answerDeferred(s *service) {
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
			ra, dr := policies.RetryAfter(s.pushback, s.qlen())
			m.reject(a, policies.Unavailable, ra, dr)
		default:
			m.reject(a, policies.Timeout, 0, false)
		}
	}
	s.deferred = s.deferred[:0]
	s.deferArmed = false
}

// workDone runs when a's service time is over.
func (m *model) workDone(a *attempt) {
	s := a.svc
	a.ev = Timer{}
	if a.preset {
		m.answer(a, a.answer, a.retryAfter, false, true)
		return
	}
	rate := s.errorRate
	if s.faultErr {
		rate = s.faultRate
	}
	if rate > 0 && s.rng.Float64() < rate {
		m.answer(a, s.errClass, 0, false, true)
		return
	}
	if len(s.steps) == 0 {
		m.answer(a, policies.OK, 0, false, true)
		return
	}
	a.state = attCalling
	m.runStep(a, 0)
}

// stepDone continues a after its current step of downstream calls.
func (m *model) stepDone(a *attempt, ok bool, o policies.Outcome) {
	a.grp = nil
	if ok {
		if a.stepIdx+1 < len(a.svc.steps) {
			m.runStep(a, a.stepIdx+1)
			return
		}
		m.answer(a, policies.OK, 0, false, true)
		return
	}
	switch a.svc.downFail {
	case dfUnavailable:
		o = policies.Unavailable
	case dfError:
		o = policies.Error
	case dfTimeout:
		o = policies.Timeout
	default:
		if o == policies.BreakerOpen || o == policies.Throttled {
			o = policies.Unavailable
		}
	}
	m.answer(a, o, 0, false, true)
}

// answer ends a's stay at its callee with class o and sends the reply.
// worked says whether the attempt did its work (not a rejection).
func (m *model) answer(a *attempt, o policies.Outcome, ra time.Duration, dr bool, worked bool) {
	s := a.svc
	now := m.eng.Now()
	s.advance(now)
	s.inflt--
	if a.counted && worked {
		if o == policies.OK {
			s.c.succeeded++
		} else {
			s.c.failed++
		}
	}
	if a.counted {
		s.hist.record(now - a.arrived)
	}
	if worked && o == policies.OK && s.commits && a.req.write && !a.preset {
		a.req.executions++
		if a.counted {
			s.c.executions++
		}
	}
	if a.fence > 0 {
		m.settleKey(a, o == policies.OK && worked)
	}
	// From here on a cannot be cancelled: its work is over. Dispatching may
	// re-enter the callers above, so a's fate is read only afterwards.
	a.state = attReplying
	a.answer, a.retryAfter, a.dontRetry = o, ra, dr
	if a.holding {
		a.holding = false
		s.busy--
		m.dispatch(s)
	}
	switch {
	case a.caller == nil:
		if worked && a.counted {
			s.c.wasted++
		}
		m.releaseServer(a)
		return
	case worked && s.drop > 0 && s.rng.Float64() < s.drop:
		m.countTimedOut(a)
		m.releaseServer(a)
		return
	}
	if a.edge.hasNet {
		a.ev = m.eng.After(a.edge.net.Sample(a.edge.pe.Rand), m.hReply, a)
		return
	}
	m.deliver(a)
}

// cancel stops a at its callee because its caller gave up and the callee
// honours cancellation: it leaves the queue or frees its worker, and its
// own downstream calls are abandoned in turn.
func (m *model) cancel(a *attempt) {
	s := a.svc
	now := m.eng.Now()
	switch a.state {
	case attSending:
		m.eng.Stop(a.ev)
		m.releaseServer(a)
	case attQueued:
		s.advance(now)
		a.cancelled = true
		s.queue.Cancel(now)
		s.inflt--
	case attDeferred:
		a.cancelled = true
		s.inflt--
	case attWorking, attCalling:
		m.eng.Stop(a.ev)
		if a.fence > 0 {
			m.settleKey(a, false)
		}
		if a.grp != nil {
			m.abortGroup(a.grp)
			a.grp = nil
		}
		s.advance(now)
		s.inflt--
		if a.holding {
			a.holding = false
			s.busy--
		}
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

func (m *model) addFault(i int, f *topology.Fault, byName map[string]*service) error {
	s := byName[f.Service]
	field := fmt.Sprintf("faults[%d]", i)
	switch {
	case s == nil:
		return fmt.Errorf("%s.service: no service named %q", field, f.Service)
	case f.At < 0 || f.For <= 0:
		return fmt.Errorf("%s: need at ≥ 0 and for > 0, got at %v for %v", field, f.At, f.For)
	case f.LatencyAdd < 0:
		return fmt.Errorf("%s.latency_add: must be ≥ 0, got %v", field, f.LatencyAdd)
	case f.Capacity != nil && !(*f.Capacity >= 0):
		return fmt.Errorf("%s.capacity: must be ≥ 0, got %v", field, *f.Capacity)
	case f.ErrorRate != nil && !(*f.ErrorRate >= 0 && *f.ErrorRate <= 1):
		return fmt.Errorf("%s.error_rate: must be in [0, 1], got %v", field, *f.ErrorRate)
	case !(f.DropResponse >= 0 && f.DropResponse <= 1):
		return fmt.Errorf("%s.drop_response: must be in [0, 1], got %v", field, f.DropResponse)
	}
	m.eng.At(f.At, m.hFault, &faultEvent{svc: s, f: f, start: true})
	m.eng.At(f.At+f.For, m.hFault, &faultEvent{svc: s, f: f, start: false})
	return nil
}

func (ev *faultEvent) apply(m *model) {
	s := ev.svc
	if ev.start {
		s.faults = append(s.faults, ev.f)
	} else {
		for i, f := range s.faults {
			if f == ev.f {
				s.faults = append(s.faults[:i], s.faults[i+1:]...)
				break
			}
		}
	}
	capacity, keep := 1.0, 1.0
	s.latencyAdd, s.faultErr = 0, false
	for _, f := range s.faults {
		if f.Capacity != nil {
			capacity *= *f.Capacity
		}
		s.latencyAdd += f.LatencyAdd
		if f.ErrorRate != nil {
			s.faultErr, s.faultRate = true, *f.ErrorRate
		}
		keep *= 1 - f.DropResponse
	}
	s.drop = 1 - keep
	s.advance(m.eng.Now())
	s.allowed = int(math.Floor(float64(s.workers)*capacity + 1e-9))
	m.dispatch(s)
}

// consult asks the committing service's idempotency store about write
// attempt a as it starts. It returns true when a must not execute: a is
// then preset with the answer (a replayed OK, InProgress with the store's
// retry-after, Conflict, Unavailable when the store is full, Error when the
// key expired).
func (m *model) consult(a *attempt) bool {
	s, req := a.svc, a.req
	if req.key == "" {
		req.key = strconv.FormatUint(req.id, 10)
	}
	d, fence, _ := s.store.Begin(m.eng.Now(), s.name, req.key, 1)
	a.answer, a.retryAfter = policies.OK, 0
	switch d {
	case idempotency.Execute:
		a.fence = fence
		return false
	case idempotency.Replay:
	case idempotency.InProgress:
		a.answer, a.retryAfter = policies.InProgress, s.inProgress
	case idempotency.Conflict:
		a.answer = policies.Conflict
	case idempotency.Full:
		a.answer = policies.Unavailable
	default: // Expired: the key is too old to dedupe or replay
		a.answer = policies.Error
	}
	a.preset = true
	return true
}

// settleKey commits or aborts the key a owns.
func (m *model) settleKey(a *attempt, ok bool) {
	s := a.svc
	if ok {
		// A refused commit (fenced by a newer owner) is the store doing its job.
		_ = s.store.Commit(m.eng.Now(), s.name, a.req.key, a.fence, idempotency.Result{Status: int(policies.OK)})
	} else {
		_ = s.store.Abort(m.eng.Now(), s.name, a.req.key, a.fence)
	}
	a.fence = 0
}
