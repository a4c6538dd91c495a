package policies

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// DefaultMaxPushback caps an honoured retry-after when an edge names no cap.
const DefaultMaxPushback = 30 * time.Second

// EdgeConfig is the call policy of one call edge (caller → callee) as a
// scenario states it. Nil policy pointers mean the policy is absent.
type EdgeConfig struct {
	// Timeout bounds each attempt; 0 means none (a deadline still applies).
	Timeout time.Duration
	Retry   RetryConfig
	Budget  *BudgetConfig
	Breaker *BreakerConfig
	Hedge   *HedgeConfig
	// Throttle enables client-side adaptive throttling.
	Throttle *ThrottleConfig
	// HonorPushback makes the caller obey a rejection's retry-after and
	// don't-retry hints.
	HonorPushback bool
	// MaxPushback caps an honoured retry-after; 0 means DefaultMaxPushback.
	MaxPushback time.Duration
	// SendRate limits how fast the caller sends attempts on the edge: an
	// attempt without a token waits for the fill that brings one.
	SendRate *RateLimitConfig
	// Phases bound the phases of an attempt (pool wait, connect, TLS,
	// first byte); the driver that models or measures them enforces them.
	Phases PhaseTimeouts
}

// EdgeStats counts what one edge's policies did. The fields mirror
// metrics.EdgeSummary; a Call adds to them only when started with
// CallOptions.Counted.
type EdgeStats struct {
	// Calls counts logical calls started on the edge.
	Calls int64
	// Attempts counts attempts actually sent (fast fails excluded).
	Attempts int64
	// Retries counts attempts sent after a failed one (hedges excluded).
	Retries int64
	// RetriesDenied counts retries and hedges the budget refused.
	RetriesDenied int64
	// RetriesDeadline counts retries not scheduled because they could not
	// start before the call's deadline.
	RetriesDeadline int64
	// BreakerFastFail counts attempts the breaker failed locally.
	BreakerFastFail int64
	HedgesSent      int64
	// HedgesWon counts calls whose OK came from a hedge, not the first attempt.
	HedgesWon int64
	// PushbackWaits counts retries delayed by an honoured retry-after.
	PushbackWaits int64
	// Throttled counts attempts the adaptive throttle rejected locally.
	Throttled int64
	// SendWaits counts attempts delayed by the send-rate limit.
	SendWaits int64
	// TransparentRetries counts not-sent attempts retried transparently
	// (RetryConfig.Transparent), outside the attempt limit and budget.
	TransparentRetries int64
	// NotSent counts attempts that failed before they were sent.
	NotSent   int64
	Succeeded int64
	Failed    int64
	Unknown   int64
}

// Edge holds the policy state shared by every call on one call edge: the
// resolved retry settings, the budget, breaker, throttle and hedge-delay
// tracker, the random stream they draw from, and the edge's counters.
// Policies that are absent are nil. A budget with Scope "service" is shared
// by several edges: build it once and assign it to each Edge's Budget.
//
// An Edge is not safe for concurrent use; load mode serializes access per edge.
type Edge struct {
	// Timeout bounds each attempt; 0 means none.
	Timeout time.Duration
	// MaxAttempts counts every attempt, the first included (≥ 1).
	MaxAttempts int
	// RetryOn is the set of outcome classes that may be retried.
	RetryOn OutcomeSet
	Backoff Backoff
	// BudgetShare, if > 0, caps each call's retries at
	// ⌈BudgetShare × ⌊Budget.Level⌋⌉, read when the call starts (Finagle's
	// RequeueFilter maxRetriesPerReq over the RetryBudget's balance).
	BudgetShare float64
	// HonorPushback obeys retry-after and don't-retry hints, waiting at
	// most MaxPushback.
	HonorPushback bool
	MaxPushback   time.Duration
	// Phases bound an attempt's phases; Transparent retries a not-sent
	// attempt once per call, outside MaxAttempts and the budget (gRPC A6).
	Phases      PhaseTimeouts
	Transparent bool
	// The reverse proxies' rules (RetryConfig): a sent write is not
	// retried (HoldWrites); after not_sent the retry waits TurnAround
	// unless retry n is redispatched (Redispatch, with MaxAttempts, as
	// RetryConfig.RedispatchAt); no attempt starts RetryWindow or later
	// after the call began.
	HoldWrites  bool
	TurnAround  time.Duration
	Redispatch  int
	RetryWindow time.Duration

	Budget   Budget
	Breaker  Breaker
	Throttle *Throttle
	// SendLimit delays attempts to the edge's send rate.
	SendLimit *RateLimiter
	Hedger    *Hedger
	// HedgeMax is the number of attempts a hedged call may have in flight
	// at once, the first included; hedging needs ≥ 2.
	HedgeMax int
	// HedgeForce hedges non-idempotent writes too.
	HedgeForce bool
	// HedgeCancelOthers asks the driver to cancel the losing attempts when
	// a hedged call succeeds.
	HedgeCancelOthers bool

	// Rand is the edge's random stream (jitter, throttle draws).
	Rand  *rand.Rand
	Stats EdgeStats
}

// NewEdge resolves c into an Edge drawing from r. It expands the retry
// preset (RetryConfig.Resolve, the expansion the scenario loader uses;
// a config it resolved is used as it is) and builds the budget, breaker,
// throttle and hedger c asks for. Errors are *FieldError naming the
// offending key relative to the call ("retry.on", "budget.ratio").
func NewEdge(c EdgeConfig, r *rand.Rand) (*Edge, error) {
	if r == nil {
		return nil, fmt.Errorf("policies: NewEdge needs a random stream")
	}
	if c.Timeout < 0 {
		return nil, fieldErrorf("timeout", "must be ≥ 0, got %v", c.Timeout)
	}
	if c.MaxPushback < 0 {
		return nil, fieldErrorf("max_pushback", "must be ≥ 0, got %v", c.MaxPushback)
	}
	if err := c.Phases.Validate(); err != nil {
		return nil, err
	}
	retry, err := c.Retry.Resolve(nil)
	if err != nil {
		return nil, inField("retry", err)
	}
	e := &Edge{Timeout: c.Timeout, MaxAttempts: retry.MaxAttempts, BudgetShare: retry.BudgetShare,
		HonorPushback: c.HonorPushback, MaxPushback: c.MaxPushback, Rand: r,
		Phases: c.Phases, Transparent: retry.Transparent,
		HoldWrites: retry.HoldWrites, TurnAround: retry.TurnAround, Redispatch: retry.Redispatch, RetryWindow: retry.RetryWindow}
	if !(e.BudgetShare >= 0 && e.BudgetShare <= 1) {
		return nil, fieldErrorf("retry.budget_share", "must be in [0, 1], got %v", retry.BudgetShare)
	}
	if e.MaxAttempts < 1 {
		if retry.EachServerOnce {
			return nil, fieldErrorf("retry.max_attempts", "0 with each_server_once means one attempt per replica: resolve it against the callee's replicas first")
		}
		return nil, fieldErrorf("retry.max_attempts", "must be ≥ 1, got %d", retry.MaxAttempts)
	}
	if e.MaxPushback == 0 {
		e.MaxPushback = DefaultMaxPushback
	}
	if e.RetryOn, err = ParseOutcomeSet(retry.On, DefaultRetryOn); err != nil {
		return nil, &FieldError{Field: "retry.on", Err: err}
	}
	if e.Backoff, err = NewBackoff(retry.Backoff); err != nil {
		return nil, inField("retry", err)
	}
	if c.Budget != nil {
		if e.Budget, err = NewBudget(*c.Budget); err != nil {
			return nil, err
		}
	}
	if c.Breaker != nil {
		if e.Breaker, err = NewBreaker(*c.Breaker); err != nil {
			return nil, err
		}
	}
	if c.Throttle != nil {
		if e.Throttle, err = NewThrottle(*c.Throttle); err != nil {
			return nil, err
		}
	}
	if c.SendRate != nil {
		if e.SendLimit, err = NewRateLimiter(*c.SendRate); err != nil {
			return nil, inField("send_rate", err)
		}
	}
	if h := c.Hedge; h != nil {
		if e.Hedger, err = NewHedger(*h); err != nil {
			return nil, err
		}
		e.HedgeMax, e.HedgeForce, e.HedgeCancelOthers = e.Hedger.MaxAttempts(), h.Force, h.CancelOthers
	}
	return e, nil
}

// CallResult is what the caller of a logical call learnt.
type CallResult uint8

const (
	// Pending: the call has not finished.
	Pending CallResult = iota
	// Succeeded: an attempt answered OK.
	Succeeded
	// Failed: a definite failure; no attempt can have done the work
	// (every attempt sent was answered, none OK and none timed out).
	Failed
	// Unknown: the call ended without OK while some attempt timed out or
	// was abandoned unanswered, so the work may have been done.
	Unknown
)

var callResultNames = [...]string{"pending", "succeeded", "failed", "unknown"}

func (r CallResult) String() string {
	if int(r) < len(callResultNames) {
		return callResultNames[r]
	}
	return fmt.Sprintf("result(%d)", r)
}

// ActionKind says what a Call wants its driver to do next.
type ActionKind uint8

const (
	// Wait: nothing to do now; call Wake at WakeAt if Wake is set, and
	// report answers and timeouts as they happen.
	Wait ActionKind = iota
	// Send: send attempt Attempt now with per-attempt timeout Timeout.
	Send
	// Finish: the call is over with Outcome and Result; abandon every
	// attempt still in flight (cancelling it if CancelOthers).
	Finish
)

var actionNames = [...]string{"wait", "send", "finish"}

func (k ActionKind) String() string {
	if int(k) < len(actionNames) {
		return actionNames[k]
	}
	return fmt.Sprintf("action(%d)", k)
}

// Action is a Call's answer to each step: the one thing to do now, and
// when to wake it next. At most one wake-up is pending per call: each Action
// restates it, so a driver that holds one timer per call re-arms it when
// WakeAt changes and stops it when Wake is false.
type Action struct {
	Kind ActionKind
	// Attempt is the 1-based number of the attempt to send (Send).
	Attempt int
	// Timeout bounds the attempt (Send): min(edge timeout, time left to
	// the deadline); 0 means none.
	Timeout time.Duration
	// Hedge marks an attempt sent beside others still in flight (Send).
	Hedge bool
	// Wake and WakeAt ask to be woken (Wait and Send).
	Wake   bool
	WakeAt time.Duration
	// Outcome is the class the call ended with (Finish): OK, or the last
	// failure (a local Timeout when the deadline or the attempts ran out).
	Outcome Outcome
	Result  CallResult
	// CancelOthers asks that attempts still in flight be cancelled at their
	// callee, not merely ignored (Finish, hedged calls with cancel_others).
	CancelOthers bool
}

// CallOptions describes one logical call.
type CallOptions struct {
	// Write marks a non-idempotent call: it is never hedged unless the
	// edge forces hedging.
	Write bool
	// Deadline is the absolute time after which no attempt may run, if
	// HasDeadline.
	Deadline    time.Duration
	HasDeadline bool
	// Counted makes the call add to its edge's Stats.
	Counted bool
}

type wakeKind uint8

const (
	wakeNone wakeKind = iota
	wakeRetry
	wakeHedge
	wakeSend // an attempt waits for its send-rate token
)

type attemptState struct {
	sentAt time.Duration
	ticket uint64
	live   bool    // sent and neither answered nor timed out
	retry  bool    // admitted by the budget as a retry or hedge
	cause  Outcome // what the budget was asked with (retry)
	hedge  bool
}

// Call is the state machine of one logical call over one edge: all its
// attempts, retries and hedges. It never reads a clock or sleeps: the driver
// (the simulator, or load mode's HTTP client) reports what happened with
// the time it happened — Start, Answered, TimedOut, Wake, Abort — and each
// step returns the Action to take. The same Call serves both drivers, so
// there is one retry implementation.
//
// Rules, in order of precedence after an attempt fails with class o:
//   - Conflict is never retried; with an honoured don't-retry hint nothing is.
//   - o must be in the edge's RetryOn (InProgress always qualifies: the
//     idempotency store asked for a later retry), and fewer than the limit of
//     attempts may have been made: MaxAttempts, or max(MaxAttempts,
//     HedgeMax) for a hedged call.
//   - The wait is the honoured retry-after (capped at MaxPushback; it resets
//     the backoff count, as gRPC does), else Backoff.Delay(n) for the n-th
//     retry since the last pushback; a hedged call retries at once.
//   - A retry that could not start before the deadline is not scheduled
//     (counted in RetriesDeadline).
//   - The budget is asked at the failure, before the wait (TryRetry), as
//     grpc-go, the AWS SDKs and Envoy do; refused, the call ends
//     (RetriesDenied).
//
// A failure whose class is not retried is fatal: it ends the call even when
// hedges are in flight (gRPC A6), and they are cancelled. Attempts still in
// flight when a call ends with an answer are cancelled — reported to the
// budget and breaker as neither success nor failure — while those abandoned
// by Abort count as timed out.
//
// Each attempt first passes the throttle (refused: a local Throttled
// failure) and the breaker (open: a local BreakerOpen failure); these are
// attempts in the numbering but are not sent. A hedged call sends a further
// attempt each Hedger.Delay() after the last one while fewer than HedgeMax
// are in flight; hedges need the budget. The first OK wins.
//
// The zero Call is ready for Start. A Call is reusable: Start resets it and
// keeps its storage, so a pooled Call does not allocate in steady state. It
// is not safe for concurrent use.
type Call struct {
	e      *Edge
	opt    CallOptions
	att    []attemptState
	sent   int // attempts numbered so far (1..sent)
	live   int // attempts in flight
	limit  int
	hedged bool

	retryN    int // retries since the last pushback (backoff exponent)
	startedAt time.Duration
	prevDelay time.Duration
	wake      wakeKind
	wakeAt    time.Duration
	last      Outcome
	maybeDone bool // an attempt timed out or was abandoned: work may have happened
	aborted   bool // the caller gave up (Abort)
	// pendingCause is the failure a retry admitted by the budget and
	// waiting out its backoff (wake == wakeRetry) follows.
	pendingCause Outcome
	// An attempt waiting for its send-rate token (wake == wakeSend): was
	// it a retry, a hedge, and the cause its budget was asked with.
	sendRetry, sendHedge, sendReady bool
	// transparentUsed: the call's one transparent retry is spent.
	transparentUsed bool
	// proxyAnswered: the answer being decided is the proxy's own 503 from
	// its queue (WaitTimedOut), which the edge does not retry.
	proxyAnswered bool
	result        CallResult
	outcome       Outcome
	// bare: the edge has no budget, breaker, throttle or hedger, so an
	// OK answer ends the call with none of finish's reports (answered).
	bare bool
}

// Start begins a logical call on e at now and returns the first Action
// (normally Send attempt 1).
func (c *Call) Start(now time.Duration, e *Edge, opt CallOptions) (a Action) {
	c.start(now, e, opt, &a)
	return a
}

// start is Start writing its Action through a (see answered): Start,
// left a wrapper, inlines where it is called.
func (c *Call) start(now time.Duration, e *Edge, opt CallOptions, a *Action) {
	c.e, c.opt, c.startedAt = e, opt, now
	c.sent, c.live, c.retryN, c.prevDelay = 0, 0, 0, 0
	c.wake, c.wakeAt, c.last, c.maybeDone, c.aborted = wakeNone, 0, OK, false, false
	c.sendReady, c.transparentUsed = false, false
	c.result, c.outcome = Pending, OK
	c.limit = e.MaxAttempts
	c.bare = e.Budget == nil && e.Breaker == nil && e.Throttle == nil && e.Hedger == nil
	c.hedged = e.Hedger != nil && e.HedgeMax >= 2 && (!opt.Write || e.HedgeForce)
	if c.hedged && e.HedgeMax > c.limit {
		c.limit = e.HedgeMax
	}
	if opt.Counted {
		e.Stats.Calls++
	}
	if e.Budget != nil {
		e.Budget.OnRequest(now)
		if e.BudgetShare > 0 {
			// Finagle deposits the request, then reads the balance in whole
			// retries; the epsilon keeps 0.2 × 80 at 16.
			balance := math.Floor(e.Budget.Level(now) + 1e-9)
			c.limit = min(c.limit, 1+int(math.Ceil(e.BudgetShare*balance-1e-9)))
		}
	}
	c.launch(now, false, false, OK, a)
}

// Result returns how the call ended (Pending while it runs).
func (c *Call) Result() CallResult { return c.result }

// Outcome returns the class the call ended with; meaningful once finished.
func (c *Call) Outcome() Outcome { return c.outcome }

// Attempts returns how many attempts have been numbered, fast fails included.
func (c *Call) Attempts() int { return c.sent }

// InFlight returns how many attempts are sent and unanswered.
func (c *Call) InFlight() int { return c.live }

// Live reports whether attempt k is in flight.
func (c *Call) Live(k int) bool { return k >= 1 && k <= len(c.att) && c.att[k-1].live }

// Answered reports attempt k's answer at now: its class and, for a
// rejection, the callee's retry-after and don't-retry hints. Answers for
// attempts no longer in flight are ignored.
func (c *Call) Answered(now time.Duration, k int, o Outcome, retryAfter time.Duration, dontRetry bool) (a Action) {
	c.answered(now, k, o, retryAfter, dontRetry, &a)
	return a
}

// The unexported steps write their Action through a pointer: returning the
// nine-field struct by value from one step to the next costs a copy at each
// level.

func (c *Call) answered(now time.Duration, k int, o Outcome, retryAfter time.Duration, dontRetry bool, a *Action) {
	if c.result != Pending || !c.Live(k) {
		c.waiting(a)
		return
	}
	st := &c.att[k-1]
	st.live = false
	c.live--
	if o == OK && c.bare && c.live == 0 {
		// The usual answer: what finish does for it at a bare edge, with
		// nothing left in flight and no budget to hear of a retry dropped.
		c.result, c.outcome, c.wake = Succeeded, OK, wakeNone
		if c.opt.Counted {
			c.e.Stats.Succeeded++
		}
		*a = Action{Kind: Finish, Outcome: OK, Result: Succeeded}
		return
	}
	e := c.e
	if e.Breaker != nil || e.Budget != nil || e.Throttle != nil {
		c.report(now, st, o, dontRetry)
	}
	if o == Timeout {
		c.maybeDone = true
	}
	if o == OK {
		// The hedge delay estimates the latency of a call's first attempt:
		// later attempts are not observed, and a first attempt a hedge beat
		// is observed, censored, in finish.
		if e.Hedger != nil && k == 1 {
			e.Hedger.Observe(now - st.sentAt)
		}
		if st.hedge && c.opt.Counted {
			e.Stats.HedgesWon++
		}
		c.finish(now, OK, c.hedged && e.HedgeCancelOthers, a)
		return
	}
	c.failed(now, o, retryAfter, dontRetry, a)
}

// report tells the edge's breaker, budget and throttle, those it has, that
// the attempt st ended with class o at now. (A method of its own: its calls
// would make answered's frame larger for the edges that have none.)
func (c *Call) report(now time.Duration, st *attemptState, o Outcome, dontRetry bool) {
	e := c.e
	if e.Breaker != nil {
		e.Breaker.Done(now, st.ticket, o, now-st.sentAt)
	}
	if e.Budget != nil {
		e.Budget.OnResult(now, Report{Outcome: o, Retry: st.retry, Cause: st.cause,
			Retryable: c.retryable(o), DontRetry: dontRetry && e.HonorPushback})
	}
	if e.Throttle != nil {
		e.Throttle.Record(now, o != Unavailable && o != Timeout)
	}
}

// TimedOut reports that attempt k's timeout expired at now. The driver
// abandons the attempt (its callee may still do the work).
func (c *Call) TimedOut(now time.Duration, k int) (a Action) {
	c.answered(now, k, Timeout, 0, false, &a)
	return a
}

// WaitTimedOut reports that attempt k's wait for a slot of its replica's
// pool ran out at now (the bound of PhaseTimeouts.PoolWait); it was never
// sent. A caller's own pool (pool_timeout) fails it NotSent, an answer
// like any other. A proxy's per-server queue (queue_timeout) is answered
// by the proxy itself with 503, Unavailable, and that ends the call: the
// proxy's retries act on connection attempts and servers' answers, never
// on its queue's 503 (HAProxy logs such a request <NOSRV> with no retry,
// even under retry-on 503). The 503 reaches the caller above the proxy,
// whose own policy may retry unavailable.
func (c *Call) WaitTimedOut(now time.Duration, k int) (a Action) {
	_, o := c.e.Phases.PoolWait()
	c.proxyAnswered = o == Unavailable
	c.answered(now, k, o, 0, false, &a)
	c.proxyAnswered = false
	return a
}

// Wake is called at or after the WakeAt of the last Action; early or
// unexpected wake-ups are ignored.
func (c *Call) Wake(now time.Duration) (a Action) {
	c.wakeUp(now, &a)
	return a
}

func (c *Call) wakeUp(now time.Duration, a *Action) {
	if c.result != Pending || c.wake == wakeNone || now < c.wakeAt {
		c.waiting(a)
		return
	}
	kind := c.wake
	c.wake = wakeNone
	if kind == wakeSend {
		c.sendReady = true // its token is taken
		c.launch(now, c.sendRetry, c.sendHedge, c.pendingCause, a)
		return
	}
	if kind == wakeRetry {
		// The budget admitted this retry at the failure.
		if c.sent >= c.limit {
			c.dropRetry(now, c.pendingCause)
			c.settle(now, a)
			return
		}
		c.launch(now, true, false, c.pendingCause, a)
		return
	}
	if c.sent >= c.limit {
		c.settle(now, a)
		return
	}
	if c.e.Budget != nil && !c.e.Budget.TryRetry(now, OK) {
		if c.opt.Counted {
			c.e.Stats.RetriesDenied++
		}
		c.limit = c.sent // no further hedges or retries for this call
		c.settle(now, a)
		return
	}
	c.launch(now, true, true, OK, a)
}

// dropRetry reports a retry or hedge the budget admitted (asked with
// cause) that will never be sent.
func (c *Call) dropRetry(now time.Duration, cause Outcome) {
	if c.e.Budget != nil {
		c.e.Budget.OnResult(now, Report{Outcome: c.last, Retry: true, Cause: cause, Cancelled: true, Unsent: true})
	}
}

// Abort ends the call at now because its caller gave up (its own timeout,
// deadline or cancellation). Attempts in flight are abandoned: they are not
// answered (they may still be working), are reported to the breaker and
// budget as timed out, and make the result Unknown. The
// returned Action is a Finish (or a Wait if the call had already finished).
func (c *Call) Abort(now time.Duration) (a Action) {
	if c.result != Pending {
		c.waiting(&a)
		return a
	}
	o := c.last
	if c.live > 0 || c.sent == 0 {
		o = Timeout
	}
	c.aborted = true
	c.finish(now, o, false, &a)
	return a
}

// launch numbers the next attempt and either sends it or fails it locally.
// cause is what the budget was asked with for a retry or hedge.
func (c *Call) launch(now time.Duration, retry, hedge bool, cause Outcome, a *Action) {
	e := c.e
	if c.opt.HasDeadline && now >= c.opt.Deadline {
		if retry {
			c.dropRetry(now, cause)
		}
		c.last = Timeout
		c.settle(now, a)
		return
	}
	if e.SendLimit != nil && !c.sendReady && c.waitToken(now, retry, hedge, cause, a) {
		return
	}
	c.sendReady = false
	c.sent++
	if len(c.att) < c.sent {
		c.att = append(c.att, attemptState{})
	}
	st := &c.att[c.sent-1]
	*st = attemptState{sentAt: now, retry: retry, cause: cause, hedge: hedge}
	if (e.Throttle != nil || e.Breaker != nil) && !c.admit(now, st, a) {
		return
	}
	st.live = true
	c.live++
	if retry {
		if s, ok := e.Budget.(sendCounter); ok {
			s.onSend(now)
		}
	}
	if c.opt.Counted {
		e.Stats.Attempts++
		if hedge {
			e.Stats.HedgesSent++
		} else if retry {
			e.Stats.Retries++
		}
	}
	timeout := e.Timeout
	if c.opt.HasDeadline {
		if rem := c.opt.Deadline - now; timeout == 0 || rem < timeout {
			timeout = rem
		}
	}
	if c.hedged {
		c.armHedge(now)
	}
	*a = Action{Kind: Send, Attempt: c.sent, Timeout: timeout, Hedge: hedge}
	if c.wake != wakeNone { // the call is pending: restate its wake-up
		a.Wake, a.WakeAt = true, c.wakeAt
	}
}

// waitToken makes an attempt about to launch wait for its send-rate token,
// if it has none now (then it returns true with a set to Wait).
func (c *Call) waitToken(now time.Duration, retry, hedge bool, cause Outcome, a *Action) bool {
	e := c.e
	d := e.SendLimit.Reserve(now)
	if d <= 0 {
		return false
	}
	if c.opt.Counted {
		e.Stats.SendWaits++
	}
	c.sendRetry, c.sendHedge, c.pendingCause = retry, hedge, cause
	c.wake, c.wakeAt = wakeSend, now+d
	c.waiting(a)
	return true
}

// admit passes the attempt st launches through the throttle and the
// breaker. Refused, it is a local failure, not sent: admit returns false
// with a set to what follows it.
func (c *Call) admit(now time.Duration, st *attemptState, a *Action) bool {
	e := c.e
	if e.Throttle != nil && !e.Throttle.Allow(now, e.Rand) {
		c.refuse(now, st, Throttled, &e.Stats.Throttled, a)
		return false
	}
	if e.Breaker != nil {
		t, ok := e.Breaker.Allow(now)
		if !ok {
			c.refuse(now, st, BreakerOpen, &e.Stats.BreakerFastFail, a)
			return false
		}
		st.ticket = t
	}
	return true
}

// refuse fails the attempt st locally with class o, before it is sent,
// counting it in n (one of the edge's Stats).
func (c *Call) refuse(now time.Duration, st *attemptState, o Outcome, n *int64, a *Action) {
	if c.opt.Counted {
		*n++
	}
	if c.e.Budget != nil {
		c.e.Budget.OnResult(now, Report{Outcome: o, Retry: st.retry, Cause: st.cause, Retryable: c.retryable(o), Unsent: true})
	}
	c.failed(now, o, 0, false, a)
}

// armHedge schedules the next hedge if the call may still send one.
func (c *Call) armHedge(now time.Duration) {
	if !c.hedged || c.wake != wakeNone || c.sent >= c.limit || c.live >= c.e.HedgeMax || c.live == 0 {
		return
	}
	at := now + c.e.Hedger.Delay()
	if c.opt.HasDeadline && at >= c.opt.Deadline {
		return
	}
	c.wake, c.wakeAt = wakeHedge, at
}

// retryable reports whether the edge's retry policy retries class o.
func (c *Call) retryable(o Outcome) bool {
	return (c.e.RetryOn.Has(o) || o == InProgress) && o != Conflict
}

// failed decides what follows an attempt that ended with class o.
func (c *Call) failed(now time.Duration, o Outcome, retryAfter time.Duration, dontRetry bool, a *Action) {
	c.last = o
	e := c.e
	if o == NotSent {
		if c.opt.Counted {
			e.Stats.NotSent++
		}
		if c.transparent(now, a) {
			return
		}
	}
	if !c.retryable(o) || (e.HonorPushback && dontRetry) || (e.HoldWrites && c.opt.Write && o != NotSent) || c.proxyAnswered {
		// Fatal: it ends a hedged call too (A6). A held write that was
		// sent is not passed on either (nginx's non-idempotent rule).
		c.finish(now, o, c.hedged && e.HedgeCancelOthers, a)
		return
	}
	if c.sent >= c.limit {
		c.settle(now, a)
		return
	}
	if c.wake == wakeRetry || c.wake == wakeSend {
		// A hedged call already has a retry on its way (waiting out a
		// pushback or its send token): this failure adds none.
		c.waiting(a)
		return
	}
	var wait time.Duration
	pushback := retryAfter > 0 && (e.HonorPushback || o == InProgress)
	switch {
	case pushback:
		wait = min(retryAfter, e.MaxPushback)
		c.retryN, c.prevDelay = 0, 0
		if c.opt.Counted {
			c.e.Stats.PushbackWaits++
		}
	case c.hedged:
		wait = 0
	case o == NotSent && e.TurnAround > 0:
		// HAProxy's turn-around before connecting to the same server
		// again; retry c.sent goes elsewhere without it.
		if !redispatchAt(e.Redispatch, e.MaxAttempts, c.sent) {
			wait = e.TurnAround
		}
	default:
		c.retryN++
		wait = e.Backoff.after(o).Delay(c.retryN, c.prevDelay, e.Rand)
		c.prevDelay = wait
	}
	if e.RetryWindow > 0 && now+wait-c.startedAt >= e.RetryWindow {
		// nginx's proxy_next_upstream_timeout forbids a new try only.
		c.limit = c.sent
		c.settle(now, a)
		return
	}
	if c.opt.HasDeadline && now+wait >= c.opt.Deadline {
		if c.opt.Counted {
			e.Stats.RetriesDeadline++
		}
		c.limit = c.sent
		c.settle(now, a)
		return
	}
	if e.Budget != nil && !e.Budget.TryRetry(now, o) {
		if c.opt.Counted {
			e.Stats.RetriesDenied++
		}
		c.settle(now, a)
		return
	}
	c.pendingCause = o
	c.wake, c.wakeAt = wakeRetry, now+wait
	if wait == 0 {
		c.wakeUp(now, a)
		return
	}
	c.waiting(a)
}

// settle finishes the call if nothing is in flight, else keeps waiting for
// the attempts that are.
func (c *Call) settle(now time.Duration, a *Action) {
	if c.live > 0 {
		c.armHedge(now)
		c.waiting(a)
		return
	}
	c.finish(now, c.last, false, a)
}

// waiting sets a to a Wait that restates the pending wake-up, if any.
func (c *Call) waiting(a *Action) {
	if c.wake == wakeNone || c.result != Pending {
		*a = Action{Kind: Wait}
		return
	}
	*a = Action{Kind: Wait, Wake: true, WakeAt: c.wakeAt}
}

func (c *Call) finish(now time.Duration, o Outcome, cancelOthers bool, a *Action) {
	switch {
	case o == OK:
		c.result = Succeeded
	case c.maybeDone || c.live > 0:
		c.result = Unknown
	default:
		c.result = Failed
	}
	c.outcome = o
	if c.wake == wakeRetry || (c.wake == wakeSend && c.sendRetry) {
		c.dropRetry(now, c.pendingCause)
	}
	c.wake = wakeNone
	e := c.e
	if o == OK && e.Hedger != nil && c.sent > 0 && c.att[0].live {
		// The first attempt lost the race: its latency is at least its
		// elapsed time. Leaving it out would bias the learnt percentile low
		// (only fast first attempts would be seen) and hedge too often.
		e.Hedger.Observe(now - c.att[0].sentAt)
	}
	if c.live > 0 {
		c.abandonLive(now, o)
	}
	if c.opt.Counted {
		switch c.result {
		case Succeeded:
			e.Stats.Succeeded++
		case Failed:
			e.Stats.Failed++
		default:
			e.Stats.Unknown++
		}
	}
	if e.Budget != nil {
		e.Budget.OnRequestDone(now)
	}
	*a = Action{Kind: Finish, Outcome: o, Result: c.result, CancelOthers: cancelOthers}
}

// abandonLive abandons the attempts still in flight when the call ends
// with class o. The breaker and budget must hear of every attempt once: if
// the caller gave up (Abort) they timed out; if the call ended with an
// answer they were cancelled, which neither succeeds nor fails (a losing
// hedge is no sign of trouble).
func (c *Call) abandonLive(now time.Duration, o Outcome) {
	e := c.e
	for i := 0; c.live > 0 && i < c.sent; i++ {
		st := &c.att[i]
		if !st.live {
			continue
		}
		st.live = false
		c.live--
		if c.aborted {
			if e.Breaker != nil {
				e.Breaker.Done(now, st.ticket, Timeout, now-st.sentAt)
			}
			if e.Budget != nil {
				e.Budget.OnResult(now, Report{Outcome: Timeout, Retry: st.retry, Cause: st.cause, Retryable: c.retryable(Timeout)})
			}
			continue
		}
		if e.Breaker != nil {
			e.Breaker.Cancel(now, st.ticket)
		}
		if e.Budget != nil {
			e.Budget.OnResult(now, Report{Outcome: o, Retry: st.retry, Cause: st.cause, Cancelled: true})
		}
	}
}

// transparent retries a not-sent attempt at once, if the edge allows it
// and the call has not used its one transparent retry: gRPC A6's
// transparent retry. The request never left the caller, so it is retried
// even when the class is not in RetryOn and even for a write; it adds to
// the attempt limit rather than using it up, and asks no budget.
func (c *Call) transparent(now time.Duration, a *Action) bool {
	e := c.e
	if !e.Transparent || c.transparentUsed || (c.opt.HasDeadline && now >= c.opt.Deadline) {
		return false
	}
	if c.wake == wakeRetry || c.wake == wakeSend {
		return false // a retry is already on its way
	}
	c.transparentUsed = true
	c.limit++
	if c.opt.Counted {
		e.Stats.TransparentRetries++
	}
	c.launch(now, false, false, OK, a)
	return true
}
