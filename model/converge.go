package model

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/stormsim/stormsim/dist"
	"github.com/stormsim/stormsim/idempotency"
	"github.com/stormsim/stormsim/policies"
)

// This file holds the clock-free machines of convergence after UNKNOWN
// (issue 34): the record states a query by key answers, the committing
// callee's query endpoint and owner crashes, recovery's decision, the
// client's query schedule (Querier), the reconciliation job (Reconciler)
// and the certainty of each intent (Intent, Tally). Like Callee they take
// now and return what to do; the simulator drives them from engine events
// and serve from handlers.

// RecordState is a write's record at the committing service, as a status
// query by key answers it.
type RecordState uint8

const (
	// NotFound: no record (the write never started, was aborted, or its
	// key was forgotten).
	NotFound RecordState = iota
	// Processing: an owner holds the key (its lease may have ended: then
	// recovery decides).
	Processing
	// Succeeded: the write committed (by its owner, recovery or
	// reconciliation).
	Succeeded
	// FailedFinal: the write is known not to have happened and never will.
	FailedFinal
	// Unknown: handed to reconciliation (PENDING_CONFIRMATION).
	Unknown
	numRecordStates
)

var recordStateNames = [...]string{"NOT_FOUND", "PROCESSING", "SUCCEEDED", "FAILED_FINAL", "UNKNOWN"}

// String returns the state's name as the issue and the docs write it.
func (s RecordState) String() string {
	if s < numRecordStates {
		return recordStateNames[s]
	}
	return fmt.Sprintf("RecordState(%d)", uint8(s))
}

// Terminal reports whether the state is a known end: SUCCEEDED or FAILED_FINAL.
func (s RecordState) Terminal() bool { return s == Succeeded || s == FailedFinal }

// Saved results of a settled record: what a query answers.
const (
	resultSucceeded = int(policies.OK)
	resultFailed    = int(policies.Error)
)

// stateOf maps the store's record to the answer of a query by key.
func stateOf(r idempotency.Record) RecordState {
	switch r.State {
	case idempotency.Processing:
		return Processing
	case idempotency.Held:
		return Unknown
	case idempotency.Completed:
		if r.Result.Status == resultSucceeded {
			return Succeeded
		}
		return FailedFinal
	}
	return NotFound // absent, or a tombstone: too old to say
}

// EnableQueries gives the callee its query-by-key endpoint: queries hold a
// worker for a time drawn from queryTime with rng (a stream of its own,
// QueryStream, so queries reshuffle no service-time draw). crash, when not
// nil, draws owner crashes (crash_owner) from a stream of their own.
func (c *callee) EnableQueries(queryTime dist.Sampler, rng, crash *rand.Rand) {
	c.qtime, c.qrng, c.crashRng = queryTime, rng, crash
}

// QueryTime draws the service time of one query at the endpoint.
func (c *callee) QueryTime() time.Duration {
	if c.qrng == nil {
		return 0
	}
	return c.qtime.Sample(c.qrng) + c.fs.LatencyAdd
}

// QueryByKey answers a status query for the write keyed key at now from
// the idempotency store; a callee that keeps no store answers NotFound.
func (c *callee) QueryByKey(now time.Duration, key string) RecordState {
	if c.store == nil {
		return NotFound
	}
	return stateOf(c.store.Lookup(now, c.name, key))
}

// Lookup is QueryByKey with what a recovery or reconciliation task needs
// besides: whether a task may settle the record now (held, or PROCESSING
// past its lease) and when its owner began.
func (c *callee) Lookup(now time.Duration, key string) (st RecordState, settleable bool, began time.Duration) {
	if c.store == nil {
		return NotFound, false, 0
	}
	r := c.store.Lookup(now, c.name, key)
	st = stateOf(r)
	return st, st == Unknown || st == Processing && !r.LeaseLive, r.Began
}

// Lease is how long an owner holds a key (the committing service's lease).
func (c *callee) Lease() time.Duration {
	if c.store == nil {
		return 0
	}
	return c.store.Config().Lease
}

// OwnerCrashes draws at now whether a write's owner, its steps done, dies
// before recording the result (crash_owner): its record stays PROCESSING
// and no reply goes. Without crash faults it draws nothing.
func (c *callee) OwnerCrashes(now time.Duration) bool {
	return c.crashRng != nil && c.commits && Crashes(c.crashRng, c.faults, CrashOwner, now)
}

// FinishCrashed ends at now the stay of an owner that crashed
// (OwnerCrashes): nothing is settled, the record keeps its lease, which a
// recovery task (or, without recovery, a takeover) ends.
func (c *callee) FinishCrashed(now time.Duration) {
	c.advance(now)
	c.inflight--
}

// Fact is what a fact query learns from a downstream's own records.
type Fact uint8

const (
	// FactUnknown: the downstream cannot tell (no query endpoint), or the
	// fact query failed or timed out.
	FactUnknown Fact = iota
	// FactFound: the downstream did the write's work.
	FactFound
	// FactAbsent: the downstream has no record of it.
	FactAbsent
)

var factNames = [...]string{"unknown", "found", "absent"}

// String names the fact.
func (f Fact) String() string {
	if int(f) < len(factNames) {
		return factNames[f]
	}
	return fmt.Sprintf("Fact(%d)", uint8(f))
}

// FactAnswer is a downstream's answer to a fact query: a service with a
// query endpoint answers from its records (done: it did the write's work),
// one without cannot tell.
func FactAnswer(hasEndpoint, done bool) Fact {
	switch {
	case !hasEndpoint:
		return FactUnknown
	case done:
		return FactFound
	}
	return FactAbsent
}

// Recovery is what a recovery task decides for a record whose owner's
// lease ended without a commit.
type Recovery uint8

const (
	// RecoverSucceeded: the facts show the work done: mark SUCCEEDED.
	RecoverSucceeded Recovery = iota
	// RecoverFailed: the facts show nothing done: mark FAILED_FINAL.
	RecoverFailed
	// RecoverResume: nothing done, and the task does the work itself once.
	RecoverResume
	// RecoverUnknown: the facts cannot tell: hand to reconciliation.
	RecoverUnknown
)

var recoveryNames = [...]string{"succeeded", "failed_final", "resumed", "unknown"}

// String names the decision.
func (r Recovery) String() string {
	if int(r) < len(recoveryNames) {
		return recoveryNames[r]
	}
	return fmt.Sprintf("Recovery(%d)", uint8(r))
}

// Recover is recovery's rule: found -> SUCCEEDED; absent -> FAILED_FINAL,
// or resume when on_absent is resume; unknown -> reconciliation.
func Recover(f Fact, resume bool) Recovery {
	switch f {
	case FactFound:
		return RecoverSucceeded
	case FactAbsent:
		if resume {
			return RecoverResume
		}
		return RecoverFailed
	}
	return RecoverUnknown
}

// Settle applies at now a recovery or reconciliation decision to the
// record of key: SUCCEEDED and resume complete it as succeeded,
// FAILED_FINAL as failed, unknown holds it for reconciliation. ok is false
// when the record was no longer the task's to settle (its owner's lease
// runs, it completed meanwhile, it expired); executed says the decision
// itself did the work (resume).
func (c *callee) Settle(now time.Duration, key string, d Recovery) (ok, executed bool) {
	if c.store == nil {
		return false, false
	}
	var err error
	switch d {
	case RecoverSucceeded, RecoverResume:
		err = c.store.Settle(now, c.name, key, idempotency.Result{Status: resultSucceeded})
	case RecoverFailed:
		err = c.store.Settle(now, c.name, key, idempotency.Result{Status: resultFailed})
	default:
		err = c.store.Hold(now, c.name, key, 0)
	}
	return err == nil, err == nil && d == RecoverResume
}

// QueryPolicy is the client's status-query schedule (topology.Query)
// resolved: shared by every intent's Querier, with the schedule's jitter
// stream. It is read-only but for Rand.
type QueryPolicy struct {
	// First is the wait before the first query, after the write's call
	// ended unknown; Backoff the waits between queries.
	First   time.Duration
	Backoff policies.Backoff
	// Deadline bounds the queries, from the intent's first attempt;
	// MaxQueries, when positive, bounds their number.
	Deadline   time.Duration
	MaxQueries int
	// Lease is the committing service's: NOT_FOUND past it (from the last
	// write sent) means the write never happened.
	Lease time.Duration
	// Resubmit sends the write again with the same key after that.
	Resubmit bool
	// Phase > 0 adds U(0, Phase) to the first wait (random_phase).
	Phase time.Duration
	// Rand draws the jitter (QueryScheduleStream).
	Rand *rand.Rand
}

// QueryStep is what a Querier asks its driver to do.
type QueryStep uint8

const (
	// QueryWait: wake the Querier at At.
	QueryWait QueryStep = iota
	// QuerySend: send one status query now (a call over the query edge),
	// and report its answer with Answered.
	QuerySend
	// QueryResubmit: send the write again with the same key now, and call
	// Start again if its outcome is unknown too.
	QueryResubmit
	// QueryStop: stop querying: Resolved says the answer made the intent
	// certain (State: a terminal state, or NotFound past the lease without
	// resubmit — the write failed), otherwise the deadline passed.
	QueryStop
)

// QueryAction is a Querier's decision.
type QueryAction struct {
	Step     QueryStep
	At       time.Duration
	Resolved bool
	State    RecordState
}

// Querier is one intent's status-query schedule, the twin of
// policies.Call for queries. The zero Querier is ready; it holds no
// pointer, so the driver keeps it inside its record of the intent.
//
//	Start(first attempt, write sent)  -> Wait(now + First) | Stop
//	Wake                              -> Send | Stop (deadline, max queries)
//	Answered(terminal)                -> Stop, resolved
//	Answered(NOT_FOUND past lease)    -> Resubmit (with Resubmit) | Stop, resolved (failed)
//	Answered(other), or no answer     -> Wait(now + Backoff.Delay(n)) | Stop
type Querier struct {
	first, sent time.Duration // the intent's first attempt; the last write sent
	n           int           // queries sent
	prev        time.Duration // the last wait, for decorrelated jitter
}

// Start begins (or, after a resubmitted write ended unknown, resumes) the
// schedule at now; first is the intent's first attempt and sent when its
// last write was sent.
func (q *Querier) Start(p *QueryPolicy, now, first, sent time.Duration) QueryAction {
	at := now + p.First
	if q.n == 0 {
		q.first = first
		if p.Phase > 0 {
			at += time.Duration(p.Rand.Float64() * float64(p.Phase))
		}
	}
	q.sent = sent
	return q.wait(p, at)
}

// Wake is the Querier's wake-up at now.
func (q *Querier) Wake(p *QueryPolicy, now time.Duration) QueryAction {
	if now > q.first+p.Deadline || (p.MaxQueries > 0 && q.n >= p.MaxQueries) {
		return QueryAction{Step: QueryStop}
	}
	q.n++
	return QueryAction{Step: QuerySend}
}

// Answered reports at now the answer of the query sent last: answered is
// false when the query itself got no answer (it failed or timed out).
func (q *Querier) Answered(p *QueryPolicy, now time.Duration, answered bool, st RecordState) QueryAction {
	switch {
	case answered && st.Terminal():
		return QueryAction{Step: QueryStop, Resolved: true, State: st}
	case answered && st == NotFound && now >= q.sent+p.Lease:
		// Past the lease no owner holds the key: the write never
		// happened (it never started, or was cancelled or aborted).
		// That is final: send it again, or the write failed.
		if p.Resubmit {
			return QueryAction{Step: QueryResubmit}
		}
		return QueryAction{Step: QueryStop, Resolved: true, State: NotFound}
	}
	d := p.Backoff.Delay(q.n, q.prev, p.Rand)
	q.prev = d
	return q.wait(p, now+d)
}

func (q *Querier) wait(p *QueryPolicy, at time.Duration) QueryAction {
	if at > q.first+p.Deadline {
		return QueryAction{Step: QueryStop}
	}
	return QueryAction{Step: QueryWait, At: at}
}

// Sent is the number of queries the Querier asked for.
func (q *Querier) Sent() int { return q.n }
