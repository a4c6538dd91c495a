package policies

import (
	"math"
	"time"
)

// Breaker kinds and rate-window types accepted in BreakerConfig.
const (
	BreakerConsecutive = "consecutive"
	BreakerRate        = "rate"
	WindowCount        = "count"
	WindowTime         = "time"
)

// withDefaults fills zero fields with the defaults of the kind's reference
// library: gobreaker for consecutive (trips on the 6th failure in a row,
// open 60 s, 1 probe), resilience4j for rate (see BreakerPreset).
func (c BreakerConfig) withDefaults() BreakerConfig {
	if c.Kind == "" {
		c.Kind = BreakerConsecutive
	}
	var d BreakerConfig
	switch c.Kind {
	case BreakerConsecutive:
		d = breakerPresets["gobreaker"]
	case BreakerRate:
		d = breakerPresets["resilience4j"]
		if c.WindowType == WindowTime && c.WindowSize == 0 {
			c.WindowSize = 10 // resilience4j's documented example; 100 s would be odd
		}
	case BreakerHystrix:
		d = breakerPresets["hystrix"]
		if c.MaxConcurrent == 0 {
			c.MaxConcurrent = d.MaxConcurrent
		}
		if c.ExecutionTimeout == 0 {
			c.ExecutionTimeout = d.ExecutionTimeout
		}
	default:
		return c
	}
	if c.Failures == 0 {
		c.Failures = d.Failures
	}
	if c.OpenFor == 0 {
		c.OpenFor = d.OpenFor
	}
	if c.HalfOpenCalls == 0 {
		c.HalfOpenCalls = d.HalfOpenCalls
	}
	if c.WindowType == "" {
		c.WindowType = d.WindowType
	}
	if c.WindowSize == 0 {
		c.WindowSize = d.WindowSize
	}
	if c.MinCalls == 0 {
		c.MinCalls = d.MinCalls
	}
	if c.FailureRate == 0 {
		c.FailureRate = d.FailureRate
	}
	if c.SlowCallRate == 0 {
		c.SlowCallRate = d.SlowCallRate
	}
	if c.SlowCallDuration == 0 {
		c.SlowCallDuration = d.SlowCallDuration
	}
	return c
}

// Validate reports the first field that cannot describe a breaker, naming
// it relative to the call edge ("breaker.failures"). It judges the resolved
// config: zero fields not given take their kind's default, and a zero given
// explicitly where zero means nothing is an error, not a default.
func (c BreakerConfig) Validate() error { return inField("breaker", c.validate()) }

// validate is Validate with fields relative to the breaker.
func (c BreakerConfig) validate() error {
	c, err := c.Resolve(nil)
	if err != nil {
		return err
	}
	switch c.Kind {
	case BreakerConsecutive, BreakerRate, BreakerHystrix:
	default:
		return fieldErrorf("kind", "unknown kind %q (want consecutive, rate or hystrix)", c.Kind)
	}
	switch {
	case c.Kind == BreakerConsecutive && c.Failures < 1:
		return fieldErrorf("failures", "must be > 0, got %d", c.Failures)
	case c.OpenFor < 0:
		return fieldErrorf("open_for", "must be ≥ 0, got %v", c.OpenFor)
	case c.HalfOpenCalls < 1:
		return fieldErrorf("half_open_calls", "must be > 0, got %d", c.HalfOpenCalls)
	}
	if c.Kind == BreakerHystrix {
		return validateHystrix(c)
	}
	if c.Kind != BreakerRate {
		return nil
	}
	switch {
	case c.WindowType != WindowCount && c.WindowType != WindowTime:
		return fieldErrorf("window_type", "must be count or time, got %q", c.WindowType)
	case c.WindowSize < 1 || c.WindowSize > 1_000_000:
		return fieldErrorf("window_size", "must be in [1, 1000000], got %d", c.WindowSize)
	case c.MinCalls < 1:
		return fieldErrorf("min_calls", "must be ≥ 1, got %d", c.MinCalls)
	case !(c.FailureRate > 0 && c.FailureRate <= 100):
		return fieldErrorf("failure_rate", "must be a percentage in (0, 100], got %v", c.FailureRate)
	case !(c.SlowCallRate > 0 && c.SlowCallRate <= 100):
		return fieldErrorf("slow_call_rate", "must be a percentage in (0, 100], got %v", c.SlowCallRate)
	case c.SlowCallDuration < 0:
		return fieldErrorf("slow_call_duration", "must be ≥ 0, got %v", c.SlowCallDuration)
	}
	return nil
}

// NewBreaker builds the circuit breaker a config describes, after applying
// its preset and defaults. A breaker is not safe for concurrent use.
func NewBreaker(c BreakerConfig) (Breaker, error) {
	c, err := c.Resolve(nil)
	if err != nil {
		return nil, inField("breaker", err)
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if c.Kind == BreakerHystrix {
		return newHystrixBreaker(c), nil
	}
	if c.Kind == BreakerConsecutive {
		return &consecutiveBreaker{breakerCore: breakerCore{openFor: c.OpenFor, probes: c.HalfOpenCalls}, failures: c.Failures}, nil
	}
	b := &rateBreaker{
		breakerCore: breakerCore{openFor: c.OpenFor, probes: c.HalfOpenCalls}, minCalls: c.MinCalls,
		failureRate: c.FailureRate, slowRate: c.SlowCallRate, slowAfter: c.SlowCallDuration,
	}
	if c.WindowType == WindowCount {
		b.win = newCountWindow(c.WindowSize)
		b.minCalls = min(b.minCalls, c.WindowSize)
	} else {
		b.win = newTimeWindow(c.WindowSize)
	}
	b.probe = newCountWindow(c.HalfOpenCalls)
	return b, nil
}

// breakerCore is the state machine both breakers share: the state, the
// generation that tickets carry, when the breaker opened, and half-open
// admission. Every transition starts a new generation; the consecutive
// breaker discards results of attempts admitted before it, as gobreaker
// does, while the rate breaker hands every result to the current state, as
// resilience4j and Hystrix do.
type breakerCore struct {
	state    BreakerState
	gen      uint64
	openedAt time.Duration
	openFor  time.Duration
	probes   int // admitted per half-open generation
	admitted int // probes admitted in this half-open generation
	opens    int64
}

// refresh applies the lazy open → half-open transition, once the open time
// has strictly passed: gobreaker (expiry.Before(now)), resilience4j
// (isAfter) and Hystrix (currentTime > openedAt + sleepWindow) all wait
// past the boundary.
func (b *breakerCore) refresh(now time.Duration) {
	if b.state == Open && now-b.openedAt > b.openFor {
		b.state = HalfOpen
		b.gen++
		b.admitted = 0
	}
}

func (b *breakerCore) allow(now time.Duration) (uint64, bool) {
	b.refresh(now)
	switch b.state {
	case Closed:
		return b.gen, true
	case HalfOpen:
		if b.admitted < b.probes {
			b.admitted++
			return b.gen, true
		}
	}
	return b.gen, false
}

func (b *breakerCore) open(now time.Duration) {
	b.state = Open
	b.openedAt = now
	b.gen++
	b.opens++
}

func (b *breakerCore) close() {
	b.state = Closed
	b.gen++
}

// cancel frees the half-open place of a probe that was abandoned unanswered.
func (b *breakerCore) cancel(now time.Duration, ticket uint64) {
	b.refresh(now)
	if b.state == HalfOpen && ticket == b.gen && b.admitted > 0 {
		b.admitted--
	}
}

// current reports whether a result with ticket belongs to the current
// generation and should count.
func (b *breakerCore) current(now time.Duration, ticket uint64, o Outcome) bool {
	b.refresh(now)
	return ticket == b.gen && o != BreakerOpen && o != Throttled
}

// consecutiveBreaker is sony/gobreaker's breaker: it opens when Failures
// failures in a row are reported while closed; after OpenFor it turns
// half-open and admits HalfOpenCalls probes; any failed probe reopens it and
// HalfOpenCalls successes close it. Failures are CountsAsFailure outcomes;
// every other reported outcome is a success.
type consecutiveBreaker struct {
	breakerCore
	failures  int
	consec    int // failures in a row while closed
	successes int // successful probes while half-open
}

// Allow admits an attempt unless the breaker is open, or half-open with all
// its probes already admitted.
func (b *consecutiveBreaker) Allow(now time.Duration) (uint64, bool) { return b.allow(now) }

// Done records an admitted attempt's result; a stale ticket is ignored.
func (b *consecutiveBreaker) Done(now time.Duration, ticket uint64, o Outcome, _ time.Duration) {
	if !b.current(now, ticket, o) {
		return
	}
	fail := CountsAsFailure(o)
	switch b.state {
	case Closed:
		if !fail {
			b.consec = 0
			return
		}
		b.consec++
		if b.consec >= b.failures {
			b.consec = 0
			b.open(now)
		}
	case HalfOpen:
		if fail {
			b.successes = 0
			b.open(now)
			return
		}
		b.successes++
		if b.successes >= b.probes {
			b.successes = 0
			b.close()
		}
	}
}

// Cancel forgets an abandoned attempt, as gobreaker v2's IsExcluded does
// with its error: it counts neither way, and a probe's place is freed.
func (b *consecutiveBreaker) Cancel(now time.Duration, ticket uint64) { b.cancel(now, ticket) }

// State returns the state at now.
func (b *consecutiveBreaker) State(now time.Duration) BreakerState {
	b.refresh(now)
	return b.state
}

// Opens counts transitions to open.
func (b *consecutiveBreaker) Opens() int64 { return b.opens }

// rateBreaker is resilience4j's breaker: while closed it records calls in a
// sliding window (the last WindowSize calls, or the last WindowSize seconds
// in one-second buckets) and opens when, with at least MinCalls calls
// recorded, the failure rate or the slow-call rate (latency >
// SlowCallDuration, failed or not) reaches its threshold. After OpenFor it
// turns half-open, admits HalfOpenCalls calls and judges them as one batch
// once all have reported: a rate at or above a threshold reopens it,
// otherwise it closes with an empty window.
//
// Like resilience4j's CircuitBreakerStateMachine (and Hystrix's
// markSuccess / markNonSuccess), it hands every result to the state current
// when the result arrives: a call admitted while closed that answers in
// half-open counts as one of the half-open calls; results that arrive while
// open are dropped.
type rateBreaker struct {
	breakerCore
	minCalls              int
	failureRate, slowRate float64
	slowAfter             time.Duration
	win                   callWindow
	probe                 callWindow
}

// Allow admits an attempt unless the breaker is open, or half-open with all
// its probes already admitted.
func (b *rateBreaker) Allow(now time.Duration) (uint64, bool) { return b.allow(now) }

// Done records an admitted attempt's result in the current state.
func (b *rateBreaker) Done(now time.Duration, _ uint64, o Outcome, latency time.Duration) {
	b.refresh(now)
	if o == BreakerOpen || o == Throttled {
		return
	}
	fail, slow := CountsAsFailure(o), latency > b.slowAfter
	switch b.state {
	case Closed:
		b.win.record(now, fail, slow)
		if b.tripped(b.win, now, b.minCalls) {
			b.win.reset()
			b.open(now)
		}
	case HalfOpen:
		b.probe.record(now, fail, slow)
		calls, _, _ := b.probe.totals(now)
		if calls < b.probes {
			return
		}
		tripped := b.tripped(b.probe, now, b.probes)
		b.probe.reset()
		if tripped {
			b.open(now)
		} else {
			b.win.reset()
			b.close()
		}
	}
}

func (b *rateBreaker) tripped(w callWindow, now time.Duration, minCalls int) bool {
	calls, fails, slows := w.totals(now)
	if calls == 0 || calls < minCalls {
		return false
	}
	return 100*float64(fails)/float64(calls) >= b.failureRate ||
		100*float64(slows)/float64(calls) >= b.slowRate
}

// Cancel forgets an abandoned attempt (resilience4j's releasePermission):
// it is not recorded, and a probe's place is freed.
func (b *rateBreaker) Cancel(now time.Duration, ticket uint64) { b.cancel(now, ticket) }

// State returns the state at now.
func (b *rateBreaker) State(now time.Duration) BreakerState {
	b.refresh(now)
	return b.state
}

// Opens counts transitions to open.
func (b *rateBreaker) Opens() int64 { return b.opens }

// callWindow counts calls, failures and slow calls over a sliding window.
type callWindow interface {
	record(now time.Duration, fail, slow bool)
	totals(now time.Duration) (calls, fails, slows int)
	reset()
}

// countWindow is a ring of the last len(ring) calls.
type countWindow struct {
	ring               []uint8 // bit 0: recorded, bit 1: failed, bit 2: slow
	pos                int
	calls, fails, slow int
}

func newCountWindow(n int) *countWindow { return &countWindow{ring: make([]uint8, max(n, 1))} }

func (w *countWindow) record(_ time.Duration, fail, slow bool) {
	old := w.ring[w.pos]
	if old&1 != 0 {
		w.calls--
		w.fails -= int(old >> 1 & 1)
		w.slow -= int(old >> 2 & 1)
	}
	v := uint8(1)
	if fail {
		v |= 2
		w.fails++
	}
	if slow {
		v |= 4
		w.slow++
	}
	w.calls++
	w.ring[w.pos] = v
	w.pos = (w.pos + 1) % len(w.ring)
}

func (w *countWindow) totals(time.Duration) (int, int, int) { return w.calls, w.fails, w.slow }

func (w *countWindow) reset() {
	clear(w.ring)
	w.pos, w.calls, w.fails, w.slow = 0, 0, 0, 0
}

// timeWindow holds the last len(buckets) seconds in one-second buckets, as
// resilience4j's TIME_BASED window does.
type timeWindow struct {
	buckets []timeBucket
	head    int64 // newest second
	sum     timeBucket
}

type timeBucket struct{ calls, fails, slow int }

func newTimeWindow(seconds int) *timeWindow {
	return &timeWindow{buckets: make([]timeBucket, max(seconds, 1)), head: math.MinInt64}
}

func (w *timeWindow) advance(now time.Duration) {
	s := int64(now / time.Second)
	if s <= w.head {
		return
	}
	n := int64(len(w.buckets))
	if w.head == math.MinInt64 || s-w.head >= n {
		w.reset()
	} else {
		for i := w.head + 1; i <= s; i++ {
			b := &w.buckets[i%n]
			w.sum.calls -= b.calls
			w.sum.fails -= b.fails
			w.sum.slow -= b.slow
			*b = timeBucket{}
		}
	}
	w.head = s
}

func (w *timeWindow) record(now time.Duration, fail, slow bool) {
	w.advance(now)
	b := &w.buckets[w.head%int64(len(w.buckets))]
	b.calls++
	w.sum.calls++
	if fail {
		b.fails++
		w.sum.fails++
	}
	if slow {
		b.slow++
		w.sum.slow++
	}
}

func (w *timeWindow) totals(now time.Duration) (int, int, int) {
	w.advance(now)
	return w.sum.calls, w.sum.fails, w.sum.slow
}

func (w *timeWindow) reset() {
	clear(w.buckets)
	w.sum = timeBucket{}
}
