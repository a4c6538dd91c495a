package policies

import "time"

// BreakerHystrix is the breaker kind that follows Netflix Hystrix.
const BreakerHystrix BreakerKind = "hystrix"

// Hystrix's fixed intervals (HystrixCommandProperties defaults).
const (
	// hystrixSnapshot is metrics.healthSnapshot.intervalInMilliseconds: the
	// breaker judges the error rate only on these ticks.
	hystrixSnapshot = 500 * time.Millisecond
)

// hystrixBreaker is Hystrix's circuit breaker (HystrixCircuitBreaker.java,
// Netflix/Hystrix master after 1.5.12) with the command around it. Every
// hystrixSnapshot the health counts of the last WindowSize seconds (kept in
// 500 ms buckets, as HealthCountsStream does) are judged: with at least
// MinCalls requests and an error percentage ≥ FailureRate a closed breaker
// opens. Strictly after OpenFor the first request is let through
// (half-open); any result arriving while half-open decides — a success
// closes the breaker and restarts the counts, a failure reopens it —
// whether or not it is the trial's. Errors are failures, timeouts (any
// result slower than ExecutionTimeout) and thread-pool rejections: at most
// MaxConcurrent attempts run at once (no queue), and one more is rejected
// and counted as an error.
type hystrixBreaker struct {
	breakerCore
	minCalls    int
	failureRate float64
	maxInFlight int
	execTimeout time.Duration
	inFlight    int
	base        time.Duration // when the counts (re)started: ticks are base + k·500ms
	lastTick    time.Duration // the last tick judged
	buckets     []timeBucket  // ring of 500 ms buckets
	head        int64         // index (since base) of the newest bucket
}

func newHystrixBreaker(c BreakerConfig) *hystrixBreaker {
	n := max(1, int(time.Duration(c.WindowSize)*time.Second/hystrixSnapshot))
	return &hystrixBreaker{breakerCore: breakerCore{openFor: c.OpenFor, probes: 1}, minCalls: c.MinCalls,
		failureRate: c.FailureRate, maxInFlight: c.MaxConcurrent, execTimeout: c.ExecutionTimeout,
		buckets: make([]timeBucket, n)}
}

// bucketOf returns the bucket index (since base) holding time t.
func (b *hystrixBreaker) bucketOf(t time.Duration) int64 {
	return int64((t - b.base) / hystrixSnapshot)
}

// roll moves the ring so its newest bucket is index i, clearing the ones
// that slid out.
func (b *hystrixBreaker) roll(i int64) {
	if i <= b.head {
		return
	}
	n := int64(len(b.buckets))
	for k := max(b.head+1, i-n+1); k <= i; k++ {
		b.buckets[k%n] = timeBucket{}
	}
	b.head = i
}

// judge applies every snapshot tick up to now: at tick T the health counts
// are those of the n buckets that ended by T. Ticks whose window holds no
// recorded bucket cannot change anything and are skipped.
func (b *hystrixBreaker) judge(now time.Duration) {
	n := int64(len(b.buckets))
	quiet := b.base + time.Duration(b.head+1+n)*hystrixSnapshot // from here on the window is empty
	for next := b.lastTick + hystrixSnapshot; next <= now; next += hystrixSnapshot {
		if next > quiet {
			b.lastTick = now - (now-b.lastTick)%hystrixSnapshot
			return
		}
		b.lastTick = next
		if b.state != Closed {
			continue
		}
		t := b.bucketOf(next) // the bucket starting at this tick
		var total, errs int
		for k := max(0, t-n, b.head-n+1); k < t && k <= b.head; k++ {
			total += b.buckets[k%n].calls
			errs += b.buckets[k%n].fails
		}
		if total > 0 && total >= b.minCalls && 100*float64(errs)/float64(total) >= b.failureRate {
			b.open(next)
		}
	}
}

func (b *hystrixBreaker) record(now time.Duration, fail bool) {
	i := b.bucketOf(now)
	b.roll(i)
	if i < b.head-int64(len(b.buckets))+1 {
		return
	}
	bk := &b.buckets[i%int64(len(b.buckets))]
	bk.calls++
	if fail {
		bk.fails++
	}
}

// restart clears the counts, as metrics.resetStream does on closing.
func (b *hystrixBreaker) restart(now time.Duration) {
	clear(b.buckets)
	b.base, b.head, b.lastTick = now, 0, now
}

// Allow admits an attempt while closed and the pool has a free thread;
// strictly after OpenFor it admits one trial. A pool rejection counts as an
// error in the health counts.
func (b *hystrixBreaker) Allow(now time.Duration) (uint64, bool) {
	b.judge(now)
	if b.state == HalfOpen {
		return b.gen, false
	}
	if b.maxInFlight > 0 && b.inFlight >= b.maxInFlight {
		b.record(now, true)
		return b.gen, false
	}
	t, ok := b.allow(now)
	if ok {
		b.inFlight++
	}
	return t, ok
}

// Done records a result in the counts and, while half-open, decides.
func (b *hystrixBreaker) Done(now time.Duration, _ uint64, o Outcome, latency time.Duration) {
	b.judge(now)
	if o == BreakerOpen || o == Throttled {
		return
	}
	b.inFlight = max(0, b.inFlight-1)
	fail := CountsAsFailure(o) || (b.execTimeout > 0 && latency >= b.execTimeout)
	b.record(now, fail)
	if b.state != HalfOpen {
		return
	}
	if fail {
		b.open(now)
		return
	}
	b.close()
	b.restart(now)
}

// Cancel frees the attempt's thread. A cancelled trial reopens the breaker,
// as an unsubscribed Hystrix command does.
func (b *hystrixBreaker) Cancel(now time.Duration, _ uint64) {
	b.judge(now)
	b.inFlight = max(0, b.inFlight-1)
	if b.state == HalfOpen {
		b.open(now)
	}
}

// State returns the state at now.
func (b *hystrixBreaker) State(now time.Duration) BreakerState {
	b.judge(now)
	b.refresh(now)
	return b.state
}

// Opens counts transitions to open.
func (b *hystrixBreaker) Opens() int64 { return b.opens }

func validateHystrix(c BreakerConfig) error {
	switch {
	case c.WindowSize < 1 || c.WindowSize > 3600:
		return fieldErrorf("window_size", "must be in [1, 3600] seconds, got %d", c.WindowSize)
	case c.MinCalls < 0:
		return fieldErrorf("min_calls", "must be ≥ 1, got %d", c.MinCalls)
	case !(c.FailureRate > 0 && c.FailureRate <= 100):
		return fieldErrorf("failure_rate", "must be a percentage in (0, 100], got %v", c.FailureRate)
	case c.MaxConcurrent < 0:
		return fieldErrorf("max_concurrent", "must be ≥ 0, got %d", c.MaxConcurrent)
	case c.ExecutionTimeout < 0:
		return fieldErrorf("execution_timeout", "must be ≥ 0, got %v", c.ExecutionTimeout)
	}
	return nil
}
