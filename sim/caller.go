package sim

import (
	"time"

	"github.com/stormsim/stormsim/model"
	"github.com/stormsim/stormsim/policies"
)

// group is one step of downstream calls made by an attempt: its members run
// at once and the step succeeds when need of them succeeded, failing as soon
// as that becomes impossible, as its model.Quorum decides. A step of a single call needs no quorum, so it
// has no group: its call reports straight to the attempt (callRun.owner),
// which holds it (attempt.call) in case it is cancelled. A logical
// request's root call, the external client's, has neither.
type group struct {
	owner    *attempt
	req      *request
	members  []*callRun
	q        model.Quorum
	starting bool
	done     bool
}

// callRun is one logical call over one edge, driven by a policies.Call.
type callRun struct {
	pc          policies.Call
	edge        *edge
	grp         *group   // the step's group; nil for a step of one call and a root call
	owner       *attempt // the attempt whose step this is; nil for a root call
	req         *request
	slots       []*attempt // attempt k's record at slots[k-1] while the caller waits on it
	wake        Timer
	wakeSet     bool
	wakeAt      time.Duration
	deadline    time.Duration
	hasDeadline bool
	done        bool
	tried       []int // the replicas tried, with retry.other_host or the proxies' rules
	// the answer of a probe call's last answered attempt (converge.go)
	qstate model.RecordState
	fact   model.Fact
}

func (m *run) newGroup(owner *attempt, req *request, need, total int) *group {
	g := m.groups.get()
	members := g.members[:0]
	*g = group{owner: owner, req: req, q: model.NewQuorum(need, total), members: members}
	return g
}

func (m *run) freeGroupAndMembers(g *group) {
	// startCall sets every field of a reused callRun; its Call keeps its storage.
	for i, cr := range g.members {
		m.calls.put(cr)
		g.members[i] = nil
	}
	g.members = g.members[:0] // newGroup resets the rest
	m.groups.put(g)
}

// startCall starts a call of req over e for owner's step: a member of g,
// or the step's one call when g is nil; req's root call when owner is nil.
func (m *run) startCall(g *group, owner *attempt, req *request, e *edge) {
	cr := m.calls.get()
	cr.edge, cr.grp, cr.owner, cr.req = e, g, owner, req
	cr.slots, cr.tried = cr.slots[:0], cr.tried[:0]
	cr.wakeSet, cr.done = false, false
	switch {
	case owner == nil:
		// A probe (a status or fact query) outlives the user's deadline.
		cr.hasDeadline, cr.deadline = req.hasDeadline && e.probe == 0, req.deadline
	case g == nil:
		cr.hasDeadline, cr.deadline = owner.hasDeadline, owner.deadline
		owner.call = cr
	default:
		cr.hasDeadline, cr.deadline = owner.hasDeadline, owner.deadline
		g.members = append(g.members, cr)
	}
	a := cr.pc.Start(m.eng.Now(), e.pe, policies.CallOptions{
		Write: req.write && e.probe == 0, Deadline: cr.deadline, HasDeadline: cr.hasDeadline, Counted: req.counted,
	})
	if a.Kind == policies.Send && !a.Wake {
		// The usual start, apply's work without its call: a new call has
		// no wake-up to stop.
		m.send(cr, a.Attempt, a.Timeout)
		return
	}
	m.apply(cr, &a)
}

// apply carries out a Call's Action. Sending is done last: with no
// network delay the callee may answer at once, re-entering apply. a is
// the caller's, passed by pointer so the nine-field Action is not copied.
func (m *run) apply(cr *callRun, a *policies.Action) {
	if a.Wake || cr.wakeSet {
		m.setWake(cr, a)
	}
	switch a.Kind {
	case policies.Send:
		m.send(cr, a.Attempt, a.Timeout)
	case policies.Finish:
		o, r := a.Outcome, a.Result
		if len(cr.slots) != 1 || cr.slots[0] != nil {
			m.abandonAll(cr, a.CancelOthers) // not only the answered attempt
		}
		cr.done = true
		m.memberDone(cr, o, r)
	}
}

func (m *run) setWake(cr *callRun, a *policies.Action) {
	if a.Wake && a.Kind != policies.Finish {
		if cr.wakeSet && cr.wakeAt == a.WakeAt {
			return
		}
		if cr.wakeSet {
			m.eng.Stop(cr.wake)
		}
		// A lane per edge: hedge delays (fixed per edge, cancelled when an
		// attempt answers first) and unjittered backoffs come in time
		// order and stay off the heap; other wake-ups fall back to it.
		cr.wake, cr.wakeSet, cr.wakeAt = m.eng.AtLane(&cr.edge.wakeLane, a.WakeAt, m.hWake, cr), true, a.WakeAt
		return
	}
	if cr.wakeSet {
		m.eng.Stop(cr.wake)
		cr.wakeSet = false
	}
}

func (m *run) wake(cr *callRun) {
	cr.wakeSet = false
	a := cr.pc.Wake(m.eng.Now())
	m.apply(cr, &a)
}

// send creates attempt k of cr and puts it on the network.
func (m *run) send(cr *callRun, k int, timeout time.Duration) {
	e := cr.edge
	a := m.newAttempt()
	a.svc, a.req, a.edge, a.caller, a.k = e.callee, cr.req, e, cr, k
	if e.bal != nil {
		a.svc = m.pickReplica(cr, e)
	}
	a.serverHeld, a.counted, a.state = true, cr.req.counted, attSending
	a.preset = e.probe != 0 // a probe is answered from records (converge.go)
	cr.req.refs++
	if e.propagate && cr.hasDeadline {
		a.hasDeadline, a.deadline = true, cr.deadline
	}
	switch n := len(cr.slots); {
	case k == n+1: // attempts are numbered in order: k is usually the next slot
		cr.slots = append(cr.slots, a)
	case k <= n:
		cr.slots[k-1] = a
	default:
		for len(cr.slots) < k-1 {
			cr.slots = append(cr.slots, nil)
		}
		cr.slots = append(cr.slots, a)
	}
	if timeout > 0 { // armTimeout's work, without its call
		a.tmo = m.eng.AtLane(e.timeoutLane(timeout), m.eng.Now()+timeout, m.hTimeout, a)
	}
	if a.svc.cm.Refusing() {
		// A dead server (refuse_connections): the connect fails at once.
		m.notSent(a)
		return
	}
	if e.irrevocable {
		m.irrevocableSent(cr)
	}
	if e.pools != nil {
		e.pools[a.svc.rep].acquire(a)
		return
	}
	if e.hasNet {
		a.ev = m.eng.After(e.delay(a.svc), m.hAttArrive, a)
		return
	}
	m.arrive(a)
}

// armTimeout starts the caller's timer of attempt a, if timeout > 0. The
// edge's timeout, and a deadline's remainder, each come in time order: a
// lane each keeps them off the heap (Lane).
func (m *run) armTimeout(a *attempt, timeout time.Duration) {
	if timeout > 0 {
		a.tmo = m.eng.AtLane(a.edge.timeoutLane(timeout), m.eng.Now()+timeout, m.hTimeout, a)
	}
}

// timeoutLane returns the lane of e's attempt timers of this length: the
// edge's timeout, or another one (a deadline's remainder).
func (e *edge) timeoutLane(timeout time.Duration) *Lane {
	if timeout != e.pe.Timeout {
		return &e.dlLane
	}
	return &e.tmoLane
}

// deliver hands a's answer to its caller, if it still waits: what a
// reply's event does when the reply crosses no network.
func (m *run) deliver(a *attempt) { m.hReply(m.eng, a) }

// replyHandler returns the handler of a reply's event (hReply), which
// hands the attempt's answer to its caller, if it still waits. The work is
// written in the closure itself, not in a method it calls: a reply is one
// of a hop's three events, and the extra call cost about 15 instructions.
// Not inlined into bindHandlers: there the closure's own calls (Answered,
// releaseServer, Engine.Stop) were no longer inlined, and a hop cost 15
// instructions more, not fewer.
//
//go:noinline
func (m *run) replyHandler() Handler {
	return func(_ *Engine, x any) {
		a := x.(*attempt)
		a.ev = Timer{}
		cr, k := a.caller, a.k
		if cr == &m.direct {
			m.deliverDirect(a)
			return
		}
		o, ra, dr, waitOut := a.answer, a.retryAfter, a.dontRetry, a.waitOut
		if a.pool != nil {
			m.poolAnswered(a)
		}
		if cr != nil {
			m.eng.Stop(a.tmo)
			cr.slots[k-1] = nil
			a.caller = nil
			if a.edge.bal != nil {
				a.edge.bal.Done(m.eng.Now(), a.svc.rep, o, true)
			}
		}
		m.releaseServer(a)
		if cr == nil {
			return
		}
		var act policies.Action
		if waitOut {
			act = cr.pc.WaitTimedOut(m.eng.Now(), k)
		} else {
			act = cr.pc.Answered(m.eng.Now(), k, o, ra, dr)
		}
		if act.Kind == policies.Finish && !act.Wake && !cr.wakeSet && len(cr.slots) == 1 {
			// The usual answer, apply's work without its call: the call's
			// one attempt was answered (its slot is cleared above).
			if owner := cr.owner; owner != nil && cr.grp == nil && cr.edge.hop == nil {
				// And memberDone's for a step of one call: the call ends
				// the step (cr, back in its pool, is read no more).
				m.calls.put(cr)
				owner.call = nil
				m.stepDone(owner, act.Result == policies.Succeeded, act.Outcome)
				return
			}
			cr.done = true
			m.memberDone(cr, act.Outcome, act.Result)
			return
		}
		m.apply(cr, &act)
	}
}

// attemptTimedOut runs when the caller's per-attempt timeout of a fires.
func (m *run) attemptTimedOut(a *attempt) {
	a.tmo = Timer{}
	cr, k := a.caller, a.k
	if cr == &m.direct {
		m.directTimedOut(a)
		return
	}
	m.abandon(a, true, true)
	act := cr.pc.TimedOut(m.eng.Now(), k)
	m.apply(cr, &act)
}

// abandon makes a's caller stop waiting for it (timedOut: its timeout
// fired). The callee cancels the attempt if asked to and it honours
// cancellation; otherwise it keeps working for nobody.
func (m *run) abandon(a *attempt, cancel, timedOut bool) {
	cr := a.caller
	cr.slots[a.k-1] = nil
	a.caller = nil
	if a.edge.bal != nil {
		a.edge.bal.Done(m.eng.Now(), a.svc.rep, policies.Timeout, timedOut)
	}
	m.eng.Stop(a.tmo)
	if a.pool != nil && m.poolAbandon(a) {
		return // never sent: nothing reached the callee
	}
	if a.state != attSending {
		m.countTimedOut(a)
	}
	switch {
	case !a.serverHeld:
		m.freeAttempt(a)
	case cancel && a.svc.cancel && !a.edge.irrevocable:
		m.cancel(a) // an irrevocable step's attempt, once sent, is never cancelled
	}
	// Otherwise the callee keeps working; answer sees a.caller == nil.
}

func (m *run) countTimedOut(a *attempt) {
	if a.counted && !a.lost {
		a.lost = true // counted once
		a.svc.c.timedOut++
	}
}

func (m *run) abandonAll(cr *callRun, cancel bool) {
	if len(cr.slots) == 1 && cr.slots[0] == nil {
		return // the common case: the single attempt was answered
	}
	for _, a := range cr.slots {
		if a != nil {
			m.abandon(a, cancel, false)
		}
	}
}

// memberDone records that call cr finished: a request's root call ends the
// request, a step's one call ends the step, a member of a group counts
// toward the group's quorum.
func (m *run) memberDone(cr *callRun, o policies.Outcome, r policies.CallResult) {
	g := cr.grp
	if g == nil {
		// Finish left nothing referring to cr: no attempt, no wake-up.
		owner, req := cr.owner, cr.req
		if cr.edge.hop != nil {
			m.hopDone(cr, o, r) // a call with status queries (edgequery.go)
			return
		}
		if owner == nil && cr.edge.probe != 0 {
			m.cv.probeDone(cr, r)
			return
		}
		m.calls.put(cr)
		if owner == nil {
			m.requestDone(req, r)
			return
		}
		// What complete does for a group needing its one member (o is OK
		// when the call succeeded).
		owner.call = nil
		m.stepDone(owner, r == policies.Succeeded, o)
		return
	}
	g.q.Done(r == policies.Succeeded, o)
	if !g.starting {
		m.evaluate(g)
	}
}

// evaluate completes g once its quorum is met or can no longer be.
func (m *run) evaluate(g *group) {
	if g.done {
		return
	}
	if ok, o, decided := g.q.Verdict(); decided {
		m.complete(g, ok, o)
	}
}

func (m *run) complete(g *group, ok bool, o policies.Outcome) {
	g.done = true
	for _, cr := range g.members {
		if !cr.done {
			m.abortCall(cr)
		}
	}
	owner := g.owner
	m.freeGroupAndMembers(g)
	m.stepDone(owner, ok, o)
}

// abortStep tears down a's step of calls, if it is waiting on one, without
// continuing a (a was cancelled).
func (m *run) abortStep(a *attempt) {
	switch {
	case a.call != nil:
		cr := a.call
		a.call = nil
		m.abortCall(cr)
		m.calls.put(cr)
	case a.grp != nil:
		m.abortGroup(a.grp)
		a.grp = nil
	}
}

// abortGroup tears g down without continuing its owner (the owner was cancelled).
func (m *run) abortGroup(g *group) {
	g.done = true
	for _, cr := range g.members {
		if !cr.done {
			m.abortCall(cr)
		}
	}
	m.freeGroupAndMembers(g)
}

func (m *run) abortCall(cr *callRun) {
	a := cr.pc.Abort(m.eng.Now())
	m.setWake(cr, &a)
	cr.done = true
	m.abandonAll(cr, true)
}

// runStep starts step i of a's downstream calls.
func (m *run) runStep(a *attempt, i int) {
	st := &a.svc.steps[i]
	a.stepIdx = i
	if st.irrevocable {
		// Deadlines stop only the steps before an irrevocable one.
		a.hasDeadline = false
	}
	if st.pub != nil {
		m.async.publish(st.pub)
		m.stepDone(a, true, policies.OK)
		return
	}
	if len(st.members) == 1 {
		// Its call may finish at once and continue a: nothing follows it.
		m.startCall(nil, a, a.req, st.members[0])
		return
	}
	g := m.newGroup(a, a.req, st.need, len(st.members))
	a.grp = g
	g.starting = true
	gen := a.gen
	for _, e := range st.members {
		if !g.q.Start() {
			break // already decided: do not start the rest
		}
		m.startCall(g, a, a.req, e)
		if a.gen != gen {
			// Defensive: answers reach the callers above only through g
			// while it is starting, so a cannot have been cancelled.
			panic("sim: attempt cancelled while starting its calls")
		}
	}
	g.starting = false
	m.evaluate(g)
}

// startRequest creates a logical request arriving now; client is the
// closed-loop client sending it (-1 for open loop).
func (m *run) startRequest(client int, write bool) {
	now := m.eng.Now()
	req := m.newRequest()
	m.nextID++
	req.id, req.arrived, req.client, req.refs = m.nextID, now, client, 1
	req.counted = now >= m.warmup
	req.write = write
	if m.deadline > 0 {
		req.hasDeadline, req.deadline = true, now+m.deadline
	}
	m.iv.offered++
	if req.counted {
		m.totals.offered++
	}
	req.open = true
	if m.cv != nil && write {
		m.cv.begin(req)
	}
	if m.clientDirect {
		m.startDirect(req, true)
		return
	}
	m.startRoot(req)
}

// startRoot starts req's root call over the client's edge (the fleet's
// instance for it, or the direct path).
func (m *run) startRoot(req *request) {
	if m.clientDirect {
		m.startDirect(req, false)
		return
	}
	if m.fleet != nil {
		m.startCall(nil, nil, req, m.fleet[model.InstanceOf(req.id-1, len(m.fleet))])
		return
	}
	m.startCall(nil, nil, req, m.client)
}

// plainEdge reports whether calls over e need no policy state machine: one
// attempt, no budget, breaker, throttle, send rate or hedge. Such a call sends its
// attempt and ends with that attempt's answer, or as Unknown when its
// timeout (the edge's, or the deadline's remainder) fires first;
// startDirect, deliverDirect and directTimedOut do exactly what a
// policies.Call would, without its records.
func plainEdge(e *policies.Edge) bool {
	return e.MaxAttempts == 1 && e.Budget == nil && e.Breaker == nil &&
		e.Throttle == nil && e.SendLimit == nil && e.Hedger == nil
}

// startDirect starts req's root call over a plain client edge (plainEdge):
// it counts the call and its attempt as policies.Call.Start would and sends
// attempt 1, with m.direct as its caller and its timeout armed first, as
// send does. fresh says req was started just now by startRequest, so its
// timer is the run's directTmo on directLane (directTimer's arithmetic for
// a deadline all ahead, done once in build).
func (m *run) startDirect(req *request, fresh bool) {
	e := m.client
	if req.counted {
		e.pe.Stats.Calls++
		e.pe.Stats.Attempts++
	}
	a := m.newAttempt()
	a.svc, a.req, a.edge, a.caller, a.k = e.callee, req, e, &m.direct, 1
	a.serverHeld, a.counted, a.state = true, req.counted, attSending
	req.refs++
	if m.directTimed {
		if fresh && !e.propagate {
			a.tmo = m.eng.AtLane(m.directLane, m.eng.now+m.directTmo, m.hTimeout, a)
		} else {
			m.directTimer(a, req)
		}
	}
	if e.hasNet {
		a.ev = m.eng.After(e.net.Sample(e.pe.Rand), m.hAttArrive, a)
		return
	}
	m.arrive(a)
}

// directTimer arms a direct attempt's timeout as policies.Call would: the
// edge's, cut to the time left before req's deadline. It is kept out of
// startDirect so that runs without timeouts pay a single branch on a flag
// of the run (m.directTimed), not a read of the edge.
func (m *run) directTimer(a *attempt, req *request) {
	timeout := a.edge.pe.Timeout
	if req.hasDeadline {
		if rem := req.deadline - m.eng.Now(); timeout == 0 || rem < timeout {
			timeout = rem
		}
		if a.edge.propagate {
			a.hasDeadline, a.deadline = true, req.deadline
		}
	}
	m.armTimeout(a, timeout)
}

// directTimedOut ends a direct root call whose attempt timed out: the
// attempt is abandoned (and cancelled where the callee honours it) and the
// result is unknown, as policies.Call.TimedOut decides for a single attempt.
func (m *run) directTimedOut(a *attempt) {
	req := a.req
	m.abandon(a, true, true)
	if req.counted {
		m.client.pe.Stats.Unknown++
	}
	m.requestDone(req, policies.Unknown)
}

// deliverDirect ends a direct root call with its attempt's answer: OK
// succeeds, a Timeout class leaves the result unknown (the work may have
// been done), anything else fails — the result policies.Call gives a
// single attempt that cannot be retried. Its timer, if any, is stopped.
// answer calls it directly for a reply that crosses no network, without
// the reply handler's indirect call (a.ev, stale, is zeroed with the
// record).
func (m *run) deliverDirect(a *attempt) {
	if m.directTimed {
		m.eng.Stop(a.tmo)
	}
	req, o := a.req, a.answer
	a.caller = nil
	m.releaseServer(a)
	r := policies.Failed
	switch o {
	case policies.OK:
		r = policies.Succeeded
	case policies.Timeout:
		r = policies.Unknown
	}
	if req.counted {
		st := &m.client.pe.Stats
		switch r {
		case policies.Succeeded:
			st.Succeeded++
		case policies.Failed:
			st.Failed++
		default:
			st.Unknown++
		}
	}
	m.requestDone(req, r)
}

func (m *run) newRequest() *request {
	var r *request
	if n := len(m.requests.free); n > 0 {
		r = m.requests.free[n-1]
		m.requests.free = m.requests.free[:n-1]
	} else {
		r = new(request)
		m.reqRecs = append(m.reqRecs, r)
	}
	*r = request{alive: true}
	m.liveReqs++
	return r
}

// requestDone records a logical request's outcome.
func (m *run) requestDone(req *request, r policies.CallResult) {
	if req.cv != nil && req.cv.resubmitting {
		m.cv.resubmitDone(req, r) // not a new request: the same intent again
		return
	}
	now := m.eng.Now()
	req.result = r
	req.open = false
	switch r {
	case policies.Succeeded:
		lat := now - req.arrived
		m.iv.succeeded++
		m.iv.latSum += float64(lat)
		i := latencyIndex(lat)
		m.ivLat.count(i)
		if req.counted {
			m.totals.succeeded++
			m.lat.add(i, lat)
		}
	case policies.Failed:
		m.iv.failed++
		if req.counted {
			m.totals.failed++
			m.lost[0].record(now - req.arrived)
		}
	default:
		m.iv.unknown++
		if req.counted {
			m.totals.unknown++
			m.lost[1].record(now - req.arrived)
		}
	}
	if req.client >= 0 {
		if next := now + m.think; next < m.duration {
			m.eng.At(next, m.hClient, &m.clients[req.client])
		}
	}
	if req.cv != nil {
		m.cv.rootDone(req, r)
	}
	m.unref(req)
}

// unref drops one hold on req; the last one folds its side-effect
// executions into the totals and frees it (release). Small enough to be
// inlined: every request is unreferenced twice or more, and only the last
// time does more than count.
func (m *run) unref(req *request) {
	req.refs--
	if req.refs <= 0 {
		m.release(req)
	}
}

// release folds req, whose last hold was dropped, and frees it.
func (m *run) release(req *request) {
	if req.irrevocable {
		m.countIrrevocable(req)
	}
	if req.cv != nil || req.counted && req.write {
		m.fold(req) // most requests have nothing to fold: no call
	}
	req.alive = false
	m.liveReqs--
	m.requests.put(req)
}

// fold adds req's side-effect executions to the run's ledger.
func (m *run) fold(req *request) {
	if req.cv != nil {
		m.cv.release(req)
	}
	if !req.counted || !req.write {
		return
	}
	m.ledger.Fold(int64(req.executions), model.View(req.result))
}
