package model

import (
	"fmt"
	"math/rand/v2"
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

// Admission is what happens to an attempt arriving at a callee.
type Admission uint8

const (
	// Started: the attempt holds a worker; the driver calls Begin.
	Started Admission = iota
	// Queued: the attempt waits; the driver starts it when Next returns it.
	Queued
	// Rejected: the attempt is answered at once, without work, with the
	// Answer the machine gives.
	Rejected
)

// Answer is a callee's reply to one attempt: its class, and the pushback
// it carries.
type Answer struct {
	Outcome    policies.Outcome
	RetryAfter time.Duration
	DontRetry  bool
	// Limited marks a refusal by the service's local rate limit
	// (overload.rate_limit), which serve answers 429 as Envoy does.
	Limited bool
}

// Callee is the clock-free state machine of one service's callee side, the
// twin of policies.Call on the caller side. T is the driver's record of a
// queued attempt (the simulator's *attempt, serve's *waiter), so the
// simulator allocates nothing per event.
//
// Transitions, each given the time now:
//
//	arrival    Arrive -> Started | Queued | Rejected (with Answer)
//	start      Begin  -> service time, or the idempotency store's PresetAnswer
//	work done  WorkDone -> injected error, or the downstream steps
//	steps done DownstreamFailure maps a failed step to the answer
//	answer     Finish records the execution, settles the key, frees the
//	           worker; Reply decides the answer's fate (delivered, wasted,
//	           lost); Next hands out the queued attempts now allowed to start
//
// A Callee is not safe for concurrent use: serve holds a mutex around it.
type Callee[T any] struct {
	callee
	queue *policies.Queue[T]
}

// callee is the part of the machine that does not depend on the queued
// item's type: its methods are plain (not generic) calls, which the
// compiler inlines on the simulator's hot path.
type callee struct {
	name      string
	rng       *rand.Rand
	st        dist.Sampler
	stMean    float64 // > 0: st is exponential with this mean (ns), drawn by dist.Exp inline
	slow      time.Duration
	workers   int
	allowed   int // workers that may be busy now (capacity faults)
	busy      int
	inflight  int // attempts arrived and not yet answered or cancelled
	commits   bool
	store     *idempotency.Store
	downFail  uint8
	errClass  policies.Outcome
	errorRate float64
	pushback  *policies.PushbackConfig
	limiter   *policies.RateLimiter // overload.rate_limit (Envoy local rate limit)
	rejectExp bool
	preset    Answer // the store's answer of the last preset Begin
	noErrors  bool   // no error rate, from the service or a fault
	// overload.concurrency_limit is set: the queue may refuse to start an
	// attempt even on a free worker, so ArriveIdle leaves it to Arrive
	concLimited bool
	plainQ      bool // the queue is Plain: Next pops its head while nothing is cancelled
	// no rate limit, and a queue that refuses nothing: an attempt that
	// does not start is queued (Enqueue)
	openQ bool

	// fault state
	faults []*topology.Fault
	fs     FaultState

	// convergence (converge.go): the query endpoint's service time and
	// stream, the owner-crash stream, and whether an owner whose step
	// ended unknown holds its record for reconciliation
	qtime          dist.Sampler
	qrng, crashRng *rand.Rand
	holdUnknown    bool

	// the queue's live items and all it holds (cancelled ones too), as of
	// its last change, so that the type-independent part can read them
	qlen, qheld int

	// time integrals in worker·ns and item·ns since the start
	lastT               time.Duration
	busyArea, queueArea float64
	// the measured window (StartMeasuring): the integrals at its start,
	// and the longest queue since
	measuring           bool
	warmBusy, warmQueue float64
	qmax                int
}

// NewCallee builds the machine of service cfg drawing from rng. commits
// marks the committing service (Plan.Committer, topology's rule); keyed
// says whether writes carry idempotency keys, which the committing service
// then dedupes.
func NewCallee[T any](cfg *topology.Service, rng *rand.Rand, commits, keyed bool) (*Callee[T], error) {
	c := &Callee[T]{callee: callee{name: cfg.Name, rng: rng, workers: cfg.Workers, allowed: cfg.Workers,
		slow: cfg.SlowdownPerInflight, errorRate: cfg.ErrorRate, rejectExp: cfg.RejectExpired,
		pushback: cfg.Overload.Pushback, commits: commits, fs: FaultState{Capacity: 1}, noErrors: cfg.ErrorRate == 0,
		concLimited: cfg.Overload.ConcurrencyLimit > 0}}
	var err error
	if c.st, _, err = Delay(&cfg.ServiceTime, "service_time"); err != nil {
		return nil, err
	}
	if mean, ok := c.st.ExpMean(); ok {
		c.stMean = mean
	}
	if rl := cfg.Overload.RateLimit; rl != nil {
		if c.limiter, err = policies.NewRateLimiter(*rl); err != nil {
			return nil, fmt.Errorf("overload.rate_limit.%w", err)
		}
	}
	switch cfg.ErrorClass {
	case "", "error":
		c.errClass = policies.Error
	case "unavailable":
		c.errClass = policies.Unavailable
	case "timeout":
		c.errClass = policies.Timeout
	default:
		return nil, fmt.Errorf("error_class: must be error, unavailable or timeout, got %q", cfg.ErrorClass)
	}
	switch cfg.DownstreamFailure {
	case "", "propagate":
		c.downFail = dfPropagate
	case "unavailable":
		c.downFail = dfUnavailable
	case "error":
		c.downFail = dfError
	case "timeout":
		c.downFail = dfTimeout
	default:
		return nil, fmt.Errorf("downstream_failure: must be propagate, unavailable, error or timeout, got %q", cfg.DownstreamFailure)
	}
	limit := -1
	if cfg.Queue != nil {
		limit = *cfg.Queue
	}
	if c.queue, err = policies.NewQueue[T](limit, cfg.Overload); err != nil {
		return nil, err // names overload.<key>
	}
	c.plainQ = c.queue.Plain()
	c.openQ = c.limiter == nil && c.queue.Unlimited()
	if commits && keyed {
		var ic idempotency.Config
		if i := cfg.Idempotency; i != nil {
			ic = idempotency.Config{Retention: i.Retention, Lease: i.Lease, InProgressRetryAfter: i.InProgressRetryAfter}
		}
		// With recovery an expired lease waits for the recovery task
		// instead of being taken over: the fence holds.
		ic.HoldExpired = cfg.Recovery != nil
		c.holdUnknown = cfg.Reconciliation != nil
		if c.store, err = idempotency.NewStore(ic); err != nil {
			return nil, fmt.Errorf("idempotency: %w", err)
		}
	}
	return c, nil
}

// Delay resolves an optional distribution of a delay. An absent one (nil,
// or naming neither a kind nor a value) means no delay: has is false and the
// sampler is the zero Sampler, a constant 0 that draws nothing. A bare value
// is a constant.
func Delay(d *topology.Dist, field string) (s dist.Sampler, has bool, err error) {
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

// TrackCancelled tells the queue how to recognize a cancelled queued item
// and who receives it when it leaves (policies.Queue.TrackCancelled).
func (c *Callee[T]) TrackCancelled(cancelled func(T) bool, drop func(T)) {
	c.queue.TrackCancelled(cancelled, drop)
}

// Name returns the service's name.
func (c *callee) Name() string { return c.name }

// Commits reports whether the service executes writes' side effects.
func (c *callee) Commits() bool { return c.commits }

// Keyed reports whether the service keeps an idempotency store: a write
// starting here then consults it (Begin needs its key).
func (c *callee) Keyed() bool { return c.store != nil }

// Workers returns the nominal worker count.
func (c *callee) Workers() int { return c.workers }

// Busy returns the workers busy now.
func (c *callee) Busy() int { return c.busy }

// Inflight returns the attempts arrived and not yet answered or cancelled.
func (c *callee) Inflight() int { return c.inflight }

// QueueLen returns the number of live attempts waiting.
func (c *callee) QueueLen() int { return c.qlen }

// Areas returns the integrals of busy workers and queue length over time
// (worker·ns, item·ns) up to the last Advance.
func (c *callee) Areas() (busy, queue float64) { return c.busyArea, c.queueArea }

// StartMeasuring starts the measured window at at, the end of the run's
// warm-up: utilization, mean queue and the longest queue count from there
// on, to the end of the run (its drain included), in the simulator and in
// serve alike. The driver calls it once, when its clock reaches the
// warm-up (at 0 without one), before anything else happens at at.
func (c *callee) StartMeasuring(at time.Duration) {
	c.advance(at)
	c.warmBusy, c.warmQueue = c.busyArea, c.queueArea
	c.qmax = c.qlen
	c.measuring = true
}

// NoteQueue records the queue's length, after it grew, in the longest
// queue of the measured window.
func (c *callee) NoteQueue() {
	if c.measuring && c.qlen > c.qmax {
		c.qmax = c.qlen
	}
}

// QueueMax returns the longest queue of the measured window so far (the
// queue's length when it started, at least).
func (c *callee) QueueMax() int { return c.qmax }

// Measured returns the integrals of busy workers and queue length over
// the measured window (worker·ns, item·ns), up to the last Advance: zero
// before it starts.
func (c *callee) Measured() (busy, queue float64) {
	if !c.measuring {
		return 0, 0
	}
	return c.busyArea - c.warmBusy, c.queueArea - c.warmQueue
}

// MeasureStart returns the integrals at the start of the measured window
// (Areas minus Measured), for a driver summing several machines' areas.
func (c *callee) MeasureStart() (busy, queue float64) { return c.warmBusy, c.warmQueue }

// Advance integrates busy workers and queue length up to now. Time only
// moves forward: an earlier now is a no-op.
func (c *callee) Advance(now time.Duration) { c.advance(now) }

// advance is Advance with the integration out of line, for the callers
// that must stay inlinable: most events come at a new instant, but its
// branch costs less than the multiplications it guards.
func (c *callee) advance(now time.Duration) {
	if now > c.lastT {
		c.integrate(now)
	}
}

func (c *callee) integrate(now time.Duration) {
	dt := float64(now - c.lastT)
	c.busyArea += dt * float64(c.busy)
	c.queueArea += dt * float64(c.qlen)
	c.lastT = now
}

// Expired reports whether an attempt with the given deadline is refused
// at now (reject_expired).
func (c *callee) Expired(now time.Duration, hasDeadline bool, deadline time.Duration) bool {
	return c.rejectExp && hasDeadline && now >= deadline
}

// Arrive admits an attempt (item v) at now: rejected when expired
// (Timeout), rejected as Unavailable with a Retry-After to the next fill
// when the local rate limit has no token, started on a free worker,
// queued, or rejected as Unavailable with the service's pushback when the
// queue refuses it.
func (c *Callee[T]) Arrive(now time.Duration, v T, expired bool) (Admission, Answer) {
	c.Advance(now)
	c.inflight++
	if expired {
		return Rejected, Answer{Outcome: policies.Timeout}
	}
	if c.limiter != nil {
		if ok, ra := c.limiter.Admit(now); !ok {
			return Rejected, Answer{Outcome: policies.Unavailable, RetryAfter: ra, Limited: true}
		}
	}
	if c.busy < c.allowed && c.qlen == 0 && c.queue.Admits(c.busy) {
		c.busy++
		return Started, Answer{}
	}
	ok := c.queue.Offer(now, v, c.busy)
	c.sync()
	if !ok {
		return Rejected, c.Overloaded()
	}
	return Queued, Answer{}
}

// Open reports whether the service has no rate limit and a queue that
// refuses nothing: an arriving attempt that is not expired either starts
// (ArriveIdle) or is queued (Enqueue).
func (c *callee) Open() bool { return c.openQ }

// Enqueue is Arrive's common case at a busy service in a form the
// compiler inlines, for a caller that has seen Open hold and ArriveIdle
// decline an attempt not expired, and has advanced the machine to now
// (Advance): ArriveIdle then declines only where Arrive queues, so v is
// queued. It reports whether it queued v; when it did not (the queue's
// ring must grow), nothing changed and the caller goes on with Arrive.
func (c *Callee[T]) Enqueue(now time.Duration, v T) bool {
	if !c.queue.Push(now, v) {
		return false
	}
	c.inflight++
	c.qlen++
	c.qheld++
	return true
}

// ArriveIdle is Arrive's common case in a form the compiler inlines: an
// attempt that is not expired, at a service with no rate limit, a free
// worker and an empty queue starts at once. It reports whether it started
// the attempt; when it did not, nothing changed and the caller goes on
// with Arrive.
func (c *callee) ArriveIdle(now time.Duration, expired bool) bool {
	if expired || c.limiter != nil || c.busy >= c.allowed || c.qlen != 0 || c.concLimited {
		return false
	}
	c.Advance(now)
	c.inflight++
	c.busy++
	return true
}

// Overloaded is the answer to an attempt refused or shed by the queue.
func (c *callee) Overloaded() Answer {
	ra, dr := policies.RetryAfter(c.pushback, c.qlen)
	return Answer{Outcome: policies.Unavailable, RetryAfter: ra, DontRetry: dr}
}

// Next hands out, while a worker is allowed, the next queued attempt to
// start; the machine counts its worker busy once the driver calls Start.
// Attempts the queue sheds go to shed (their answer is Overloaded).
func (c *Callee[T]) Next(now time.Duration, shed func(T)) (v T, ok bool) {
	if !c.CanStart() {
		return v, false
	}
	if c.plainQ && c.qheld == c.qlen { // a plain fifo with no cancelled item
		v, ok = c.queue.Pop(now)
	} else {
		v, ok = c.queue.Next(now, shed)
	}
	c.sync()
	return v, ok
}

// Pop is Next's common case in a form the compiler inlines, for a caller
// that has just seen CanStart hold: at a plain fifo (no shedding) holding
// no cancelled item, it hands out the head, as Next would. ok is false,
// with nothing changed, at any other queue; the caller then goes on with
// Next.
func (c *Callee[T]) Pop() (v T, ok bool) {
	if !c.plainQ || c.qheld != c.qlen {
		return v, false
	}
	c.qlen--
	c.qheld--
	return c.queue.Shift(), true // CanStart held: it holds a live item
}

// CanStart reports whether a queued attempt may start now: a worker is
// allowed and the queue holds something (Next may still find only shed or
// cancelled items).
func (c *callee) CanStart() bool { return c.busy < c.allowed && c.qheld > 0 }

// sync mirrors the queue's length after it changed.
func (c *Callee[T]) sync() {
	c.qlen, c.qheld = c.queue.Len(), c.queue.Held()
}

// Start puts an attempt Next handed out on a worker.
func (c *callee) Start() { c.busy++ }

// Begin decides a started attempt's work at now: the idempotency store's
// answer for a deduped write (key and digest name it), else a service time
// drawn from the distribution, plus the fault latency, plus the contention
// slowdown of every other attempt in flight (queued ones included: they
// hold connections and memory too). fence > 0: the attempt owns its key
// and settles it in Finish. preset: the store decided, the attempt does no
// work and answers PresetAnswer.
func (c *callee) Begin(now time.Duration, write bool, key string, digest uint64) (service time.Duration, fence uint64, preset bool) {
	if c.store != nil && write {
		if fence, preset = c.consult(now, key, digest); preset {
			return 0, 0, true
		}
	}
	return c.ServiceTime(), fence, false
}

// PresetAnswer is the store's answer of the last Begin that returned preset.
func (c *callee) PresetAnswer() Answer { return c.preset }

// ServiceTime draws the work of a started attempt that does not consult
// the idempotency store (a read, or any attempt at a service that is not
// Keyed): what Begin returns for it, without Begin's extra call on the
// simulator's hot path.
func (c *callee) ServiceTime() time.Duration {
	var d time.Duration
	if c.stMean > 0 {
		d = dist.Exp(c.rng, c.stMean) // what c.st.Sample draws, without its call
	} else {
		d = c.st.Sample(c.rng)
	}
	d += c.fs.LatencyAdd
	if c.slow > 0 && c.inflight > 1 {
		d += time.Duration(c.inflight-1) * c.slow
	}
	return d
}

// consult asks the idempotency store about a write starting at now. A
// preset answer: a replayed OK, InProgress with the store's retry-after,
// Conflict, Unavailable when the store is full, Error when the key expired
// (too old to dedupe or replay: the caller may retry).
func (c *callee) consult(now time.Duration, key string, digest uint64) (fence uint64, preset bool) {
	d, fence, saved := c.store.Begin(now, c.name, key, digest)
	a := Answer{Outcome: policies.OK}
	switch d {
	case idempotency.Execute:
		return fence, false
	case idempotency.Replay:
		// The saved result: OK for a commit, the failure recovery or
		// reconciliation settled it with (FAILED_FINAL).
		a.Outcome = policies.Outcome(saved.Status)
	case idempotency.InProgress:
		a = Answer{Outcome: policies.InProgress, RetryAfter: c.store.Config().InProgressRetryAfter}
	case idempotency.Conflict:
		a.Outcome = policies.Conflict
	case idempotency.Full:
		a.Outcome = policies.Unavailable
	default: // Expired
		a.Outcome = policies.Error
	}
	c.preset = a
	return 0, true
}

// WorkDone decides, when an attempt's service time is over, whether it
// fails with an injected error (fault error_rate replacing the service's).
// ok means it goes on to its downstream steps, or answers OK if it has none.
func (c *callee) WorkDone() (o policies.Outcome, ok bool) {
	if c.noErrors {
		return policies.OK, true // no draw: the common case, inlined
	}
	return c.injected()
}

func (c *callee) injected() (o policies.Outcome, ok bool) {
	rate := c.errorRate
	if c.fs.HasErrorRate {
		rate = c.fs.ErrorRate
	}
	if rate > 0 && c.rng.Float64() < rate {
		return c.errClass, false
	}
	return policies.OK, true
}

// DownstreamFailure maps a failed step's class o to this service's answer,
// per downstream_failure: propagate (the class itself, a breaker or
// throttle fast-fail as unavailable), or a fixed class.
func (c *callee) DownstreamFailure(o policies.Outcome) policies.Outcome {
	switch c.downFail {
	case dfUnavailable:
		return policies.Unavailable
	case dfError:
		return policies.Error
	case dfTimeout:
		return policies.Timeout
	}
	if o == policies.BreakerOpen || o == policies.Throttled {
		return policies.Unavailable
	}
	return o
}

// Ending is how an attempt's stay at a callee ended (Finish). The zero
// Ending but for its Outcome is an attempt answered without work: refused,
// shed, expired, or answered by the idempotency store.
type Ending struct {
	// Outcome is the class of the answer.
	Outcome policies.Outcome
	// Worked: the attempt did its work (it was not refused, nor answered
	// by the store).
	Worked bool
	// Write: the attempt is a write's.
	Write bool
	// Key and Fence name the idempotency key the attempt owns, from Begin
	// (Fence 0: none), which Finish commits or aborts.
	Key   string
	Fence uint64
	// Unknown: the write's downstream step ended unknown (timed out); at a
	// service with reconciliation its key is held (UNKNOWN), not aborted.
	Unknown bool
}

// Finish ends an attempt's stay at now as e says. It settles the key the
// attempt owns and reports whether the write's side effect executed: a
// write that worked and answered OK at the committing service. The
// worker, if held, is freed by Release.
func (c *callee) Finish(now time.Duration, e Ending) (executed bool) {
	c.advance(now)
	c.inflight--
	executed = e.Worked && e.Outcome == policies.OK && c.commits && e.Write
	switch {
	case e.Fence > 0 && !executed && e.Unknown && c.holdUnknown:
		_ = c.store.Hold(now, c.name, e.Key, e.Fence) // fenced: a newer owner decides
	case e.Fence > 0:
		c.settle(now, e.Key, e.Fence, executed)
	}
	return executed
}

// FinishPlain is Finish for an attempt that owns no key and is not a
// write at the committing service (Commits): nothing executes, nothing is
// settled. It
// inlines, which Finish does not: it is the common case on the
// simulator's hot path.
func (c *callee) FinishPlain(now time.Duration) {
	c.advance(now)
	c.inflight--
}

// settle commits or aborts the key an attempt owns.
func (c *callee) settle(now time.Duration, key string, fence uint64, ok bool) {
	if ok {
		// A refused commit (fenced by a newer owner) is the store doing its job.
		_ = c.store.Commit(now, c.name, key, fence, idempotency.Result{Status: int(policies.OK)})
	} else {
		_ = c.store.Abort(now, c.name, key, fence)
	}
}

// Release frees a worker.
func (c *callee) Release() { c.busy-- }

// Fate is what becomes of a callee's answer to an attempt (Reply).
type Fate uint8

const (
	// Delivered: the answer goes back to the caller.
	Delivered Fate = iota
	// Gone: the caller stopped waiting before an answer without work (a
	// rejection): nobody hears it, and nothing was wasted.
	Gone
	// Wasted: the caller stopped waiting before an answer after work:
	// the work was done for nobody.
	Wasted
	// Lost: a drop_response fault lost the reply of an answer after work;
	// the caller hears nothing and times out.
	Lost
)

// String names the fate.
func (f Fate) String() string {
	switch f {
	case Delivered:
		return "delivered"
	case Gone:
		return "gone"
	case Wasted:
		return "wasted"
	case Lost:
		return "lost"
	}
	return fmt.Sprintf("Fate(%d)", uint8(f))
}

// Reply decides the fate of the answer to an attempt: worked says it is
// an answer after work, which an answer the idempotency store gave (a
// replay, in progress, a conflict) is too — the attempt held a worker and
// was answered by the service, so its reply may be lost and it may be
// wasted like any other; gone says the caller stopped waiting. A lost
// reply is drawn only for an answer after work that someone waits for.
func (c *callee) Reply(worked, gone bool) Fate {
	if !gone {
		if worked && c.fs.Drop > 0 {
			return c.drawLost()
		}
		return Delivered // no draw: the common case, inlined
	}
	if worked {
		return Wasted
	}
	return Gone
}

// drawLost draws whether a drop_response fault loses a reply, out of line
// so that Reply inlines.
//
//go:noinline
func (c *callee) drawLost() Fate {
	if c.rng.Float64() < c.fs.Drop {
		return Lost
	}
	return Delivered
}

// CancelQueued records at now that a queued attempt's caller went away: it
// leaves the queue (lazily) and is no longer in flight.
func (c *Callee[T]) CancelQueued(now time.Duration) {
	c.Advance(now)
	c.queue.Cancel(now)
	c.sync()
	c.inflight--
}

// CancelDeferred records that an attempt out of the queue, waiting for its
// rejection, is no longer in flight.
func (c *callee) CancelDeferred() { c.inflight-- }

// CancelWorking records at now that a started attempt's caller went away
// and the service stopped its work: its key (fence) is aborted and its
// worker, if held, freed.
func (c *callee) CancelWorking(now time.Duration, key string, fence uint64, holding bool) {
	if fence > 0 {
		c.settle(now, key, fence, false)
	}
	c.Advance(now)
	c.inflight--
	if holding {
		c.busy--
	}
}

// Refusing reports whether an active fault refuses connections: an
// attempt sent to the service now fails not_sent before reaching it.
func (c *callee) Refusing() bool { return c.fs.Refuse }

// SetFaults makes active the faults now in effect, in the order they
// started, combined by Combine. The machine keeps them (a copy of
// active), so that a driver setting them at each window edge (serve) and
// one applying each edge (FaultStarted, FaultEnded: the simulator) draw
// the owner crashes of the same faults.
func (c *callee) SetFaults(now time.Duration, active []*topology.Fault) {
	c.faults = append(c.faults[:0], active...)
	c.fs = Combine(active)
	c.noErrors = c.errorRate == 0 && !c.fs.HasErrorRate
	c.Advance(now)
	c.allowed = c.fs.Workers(c.workers)
}

// FaultStarted and FaultEnded apply one fault's window edge at now.
func (c *callee) FaultStarted(now time.Duration, f *topology.Fault) {
	c.faults = append(c.faults, f)
	c.SetFaults(now, c.faults)
}

// FaultEnded removes fault f at now.
func (c *callee) FaultEnded(now time.Duration, f *topology.Fault) {
	for i, g := range c.faults {
		if g == f {
			c.faults = append(c.faults[:i], c.faults[i+1:]...)
			break
		}
	}
	c.SetFaults(now, c.faults)
}

// Drained reports whether nothing is left at the service: no busy worker,
// no queued or cancelled-but-held attempt, nothing in flight.
func (c *callee) Drained() bool {
	return c.busy == 0 && c.qheld == 0 && c.inflight == 0
}

// ShareStore makes c dedupe writes in the idempotency store of o: the
// replicas of a committing service share one store, as they would share
// the database that holds it, so a retry that lands on another replica is
// still recognised.
func (c *Callee[T]) ShareStore(o *Callee[T]) { c.store = o.store }
