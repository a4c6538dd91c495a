package policies

import (
	"math"
	"math/rand/v2"
	"time"
)

// Budget kinds accepted in BudgetConfig.Kind.
const (
	BudgetRatio       = "ratio"
	BudgetTokenBucket = "token_bucket"
	BudgetAWSQuota    = "aws_quota"
	BudgetConcurrency = "concurrency"
)

// Budget defaults, applied by NewBudget when a field is zero.
const (
	// DefaultBudgetWindow is the ratio budget's sliding window (Finagle's ttl).
	DefaultBudgetWindow = 10 * time.Second
	// windowBuckets is how many time buckets a sliding window is cut into.
	windowBuckets = 10
)

// CountsAsFailure reports whether an attempt outcome counts as a failure of
// the callee for breakers, budgets and the gRPC token bucket: Unavailable,
// Timeout and Error do. OK, Conflict (the callee answered, definitely) and
// InProgress (the callee is doing the work) do not; BreakerOpen and
// Throttled never reached the callee and should not be reported at all.
func CountsAsFailure(o Outcome) bool {
	return o == Unavailable || o == Timeout || o == Error
}

// NewBudget builds the retry budget a config describes, after applying its
// preset and defaults. The random stream is accepted for budgets that need
// one; none of the current kinds draws from it, so it may be nil.
//
// A budget is not safe for concurrent use. A budget with Scope "service" is
// shared by every edge of the calling service: whoever builds the call
// policies constructs it once and hands the same value to each edge.
func NewBudget(c BudgetConfig, r *rand.Rand) (Budget, error) {
	_ = r
	c, err := c.Resolve(nil)
	if err != nil {
		return nil, inField("budget", err)
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	switch c.Kind {
	case BudgetRatio:
		return newRatioBudget(c), nil
	case BudgetTokenBucket:
		return &TokenBucketBudget{max: c.MaxTokens, ratio: c.TokenRatio, tokens: c.MaxTokens}, nil
	case BudgetAWSQuota:
		return newAWSQuota(c), nil
	case BudgetConcurrency:
		return &ConcurrencyBudget{percent: c.Percent, min: c.MinConcurrency}, nil
	}
	return nil, fieldErrorf("budget.kind", "unknown kind %q", c.Kind)
}

// withDefaults fills zero fields of the config's kind with their defaults.
// A config with no kind but a ratio is a ratio budget.
func (c BudgetConfig) withDefaults() BudgetConfig {
	if c.Kind == "" && c.Ratio != 0 {
		c.Kind = BudgetRatio
	}
	switch c.Kind {
	case BudgetRatio:
		if c.Window == 0 {
			c.Window = DefaultBudgetWindow
		}
	case BudgetTokenBucket:
		if c.MaxTokens == 0 {
			c.MaxTokens = 10
		}
		if c.TokenRatio == 0 {
			c.TokenRatio = 0.1
		}
	case BudgetAWSQuota:
		if c.Capacity == 0 {
			c.Capacity = 500
		}
		if c.RetryCost == 0 {
			c.RetryCost = 5
		}
		if c.TimeoutCost == 0 {
			c.TimeoutCost = 10
		}
		if c.ThrottleCost == 0 {
			c.ThrottleCost = c.RetryCost
		}
		if c.NoRetryIncrement == 0 {
			c.NoRetryIncrement = 1
		}
	case BudgetConcurrency:
		if c.Percent == 0 {
			c.Percent = 20
		}
		if c.MinConcurrency == 0 {
			c.MinConcurrency = 3
		}
	}
	return c
}

// Validate reports the first field that cannot describe a budget, naming it
// relative to the call edge ("budget.ratio"). It judges the resolved
// config: zero fields not given take their kind's default.
func (c BudgetConfig) Validate() error { return inField("budget", c.validate()) }

// validate is Validate with fields relative to the budget.
func (c BudgetConfig) validate() error {
	c, err := c.Resolve(nil)
	if err != nil {
		return err
	}
	switch c.Scope {
	case "", ScopeEdge, ScopeService:
	default:
		return fieldErrorf("scope", "must be edge or service, got %q", c.Scope)
	}
	switch c.Kind {
	case BudgetRatio:
		if !(c.Ratio > 0 && c.Ratio <= 1) {
			return fieldErrorf("ratio", "must be in (0, 1], got %v", c.Ratio)
		}
		if !(c.MinPerSec >= 0) || math.IsInf(c.MinPerSec, 0) {
			return fieldErrorf("min_per_sec", "must be ≥ 0, got %v", c.MinPerSec)
		}
		if c.Window < time.Millisecond || c.Window > time.Hour {
			return fieldErrorf("window", "must be in [1ms, 1h], got %v", c.Window)
		}
	case BudgetTokenBucket:
		if !(c.MaxTokens > 0 && c.MaxTokens <= 1000) {
			return fieldErrorf("max_tokens", "must be in (0, 1000], got %v", c.MaxTokens)
		}
		if !(c.TokenRatio > 0) || math.IsInf(c.TokenRatio, 0) {
			return fieldErrorf("token_ratio", "must be > 0, got %v", c.TokenRatio)
		}
	case BudgetAWSQuota:
		for _, f := range []struct {
			name string
			v    int
		}{{"capacity", c.Capacity}, {"retry_cost", c.RetryCost}, {"timeout_cost", c.TimeoutCost},
			{"throttle_cost", c.ThrottleCost}, {"no_retry_increment", c.NoRetryIncrement}} {
			if f.v < 0 {
				return fieldErrorf(f.name, "must be ≥ 0, got %d", f.v)
			}
		}
	case BudgetConcurrency:
		if !(c.Percent > 0) || math.IsInf(c.Percent, 0) {
			return fieldErrorf("percent", "must be > 0, got %v", c.Percent)
		}
		if c.MinConcurrency < 0 {
			return fieldErrorf("min_concurrency", "must be ≥ 0, got %d", c.MinConcurrency)
		}
	case "":
		return fieldErrorf("kind", "missing (want ratio, token_bucket, aws_quota or concurrency)")
	default:
		return fieldErrorf("kind", "unknown kind %q (want ratio, token_bucket, aws_quota or concurrency)", c.Kind)
	}
	return nil
}

// slidingCount counts events in a sliding window of time cut into
// windowBuckets buckets, so memory is constant whatever the traffic. The
// window at time t is the bucket holding t plus the windowBuckets−1 before
// it: between (windowBuckets−1)/windowBuckets and one full window long.
type slidingCount struct {
	width time.Duration // of one bucket
	head  int64         // index of the newest bucket
	count [windowBuckets][2]int64
	sum   [2]int64
}

func newSlidingCount(window time.Duration) slidingCount {
	w := window / windowBuckets
	if w <= 0 {
		w = 1
	}
	return slidingCount{width: w}
}

// advance moves the window so its newest bucket holds now, forgetting the
// buckets that slid out. Time never goes back: an earlier now counts in
// the newest bucket.
func (s *slidingCount) advance(now time.Duration) {
	b := int64(now / s.width)
	if b <= s.head {
		return
	}
	if b-s.head >= windowBuckets {
		s.count = [windowBuckets][2]int64{}
		s.sum = [2]int64{}
	} else {
		for i := s.head + 1; i <= b; i++ {
			slot := &s.count[i%windowBuckets]
			s.sum[0] -= slot[0]
			s.sum[1] -= slot[1]
			*slot = [2]int64{}
		}
	}
	s.head = b
}

func (s *slidingCount) add(now time.Duration, series int, n int64) {
	s.advance(now)
	s.count[s.head%windowBuckets][series] += n
	s.sum[series] += n
}

func (s *slidingCount) total(now time.Duration, series int) int64 {
	s.advance(now)
	return s.sum[series]
}

// RatioBudget is Finagle's RetryBudget and the Google SRE per-client budget:
// a retry is admitted when, counting it, the retries in the sliding window
// stay ≤ Ratio × first attempts in the window + MinPerSec × Window.
//
// Finagle's leaky bucket (each request deposits 1, a retry withdraws
// 1/Ratio, a reserve of MinPerSec·ttl retries) admits exactly the same
// sequences, up to the granularity of the window's buckets.
type RatioBudget struct {
	ratio   float64
	reserve float64 // MinPerSec × Window, in retries
	win     slidingCount
}

const (
	seriesRequests = 0
	seriesRetries  = 1
)

func newRatioBudget(c BudgetConfig) *RatioBudget {
	return &RatioBudget{ratio: c.Ratio, reserve: c.MinPerSec * c.Window.Seconds(), win: newSlidingCount(c.Window)}
}

// OnRequest deposits a first attempt.
func (b *RatioBudget) OnRequest(now time.Duration) { b.win.add(now, seriesRequests, 1) }

// TryRetry admits a retry if the window leaves room for it, and counts it.
func (b *RatioBudget) TryRetry(now time.Duration, _ Outcome) bool {
	// A tiny epsilon keeps ratio × requests exact for products like
	// 0.29 × 100 whose binary value falls just below the decimal one.
	if b.room(now)+1e-9 < 1 {
		return false
	}
	b.win.add(now, seriesRetries, 1)
	return true
}

// OnResult does nothing: the ratio budget counts attempts, not results.
func (b *RatioBudget) OnResult(time.Duration, Outcome, bool) {}

// OnRequestDone does nothing.
func (b *RatioBudget) OnRequestDone(time.Duration) {}

// Level is how many more retries the window admits now (may be fractional,
// never below 0).
func (b *RatioBudget) Level(now time.Duration) float64 { return max(b.room(now), 0) }

func (b *RatioBudget) room(now time.Duration) float64 {
	allowed := b.ratio*float64(b.win.total(now, seriesRequests)) + b.reserve
	return allowed - float64(b.win.total(now, seriesRetries))
}

// TokenBucketBudget is gRPC retry throttling (A6): tokens start at MaxTokens;
// each qualifying failure takes 1 (floored at 0), each OK gives TokenRatio
// back (capped at MaxTokens); retries and hedges are admitted only while
// tokens > MaxTokens/2. Every failed attempt costs a token, the last one of
// a call included, as in grpc-go. It does not depend on time.
type TokenBucketBudget struct {
	max, ratio, tokens float64
}

// OnRequest does nothing: first attempts are never throttled.
func (b *TokenBucketBudget) OnRequest(time.Duration) {}

// TryRetry admits while tokens > MaxTokens/2; it charges nothing itself.
func (b *TokenBucketBudget) TryRetry(time.Duration, Outcome) bool { return b.tokens > b.max/2 }

// OnResult takes a token for a failure and gives TokenRatio back for an OK.
func (b *TokenBucketBudget) OnResult(_ time.Duration, o Outcome, _ bool) {
	switch {
	case o == OK:
		b.tokens = min(b.max, b.tokens+b.ratio)
	case CountsAsFailure(o):
		b.tokens = max(0, b.tokens-1)
	}
}

// OnRequestDone does nothing.
func (b *TokenBucketBudget) OnRequestDone(time.Duration) {}

// Level returns the current tokens.
func (b *TokenBucketBudget) Level(time.Duration) float64 { return b.tokens }

// AWSQuota is the AWS SDK standard-mode retry quota (botocore
// retries/quota.py): a retry costs RetryCost (TimeoutCost after a timeout,
// ThrottleCost after Unavailable) out of Capacity and is refused when the
// quota is short; a first-try success refunds NoRetryIncrement, a success
// after retries refunds the cost of the retry that succeeded. The quota never
// exceeds Capacity. First attempts are never blocked.
//
// botocore remembers each request's last charge; the Budget interface does
// not pass it back, so AWSQuota keeps counts of outstanding charges per cost
// and refunds a successful retry at the cheapest outstanding cost. This is
// exact whenever one cost class is in flight at a time.
type AWSQuota struct {
	capacity, available                  int
	retryCost, timeoutCost, throttleCost int
	noRetryIncrement                     int
	outRetry, outTimeout, outThrottle    int
}

func newAWSQuota(c BudgetConfig) *AWSQuota {
	return &AWSQuota{capacity: c.Capacity, available: c.Capacity, retryCost: c.RetryCost,
		timeoutCost: c.TimeoutCost, throttleCost: c.ThrottleCost, noRetryIncrement: c.NoRetryIncrement}
}

// OnRequest does nothing.
func (q *AWSQuota) OnRequest(time.Duration) {}

// TryRetry charges the cost of retrying after cause, if the quota holds it.
func (q *AWSQuota) TryRetry(_ time.Duration, cause Outcome) bool {
	cost, out := q.retryCost, &q.outRetry
	switch cause {
	case Timeout:
		cost, out = q.timeoutCost, &q.outTimeout
	case Unavailable:
		cost, out = q.throttleCost, &q.outThrottle
	}
	if cost > q.available {
		return false
	}
	q.available -= cost
	*out++
	return true
}

// OnResult refunds on success as botocore does and settles a retry's charge.
func (q *AWSQuota) OnResult(_ time.Duration, o Outcome, retry bool) {
	if !retry {
		if o == OK {
			q.refund(q.noRetryIncrement)
		}
		return
	}
	// Settle one outstanding charge: the cheapest on success (refunded),
	// otherwise the dearest (kept).
	type class struct {
		n    *int
		cost int
	}
	cs := [3]class{{&q.outRetry, q.retryCost}, {&q.outTimeout, q.timeoutCost}, {&q.outThrottle, q.throttleCost}}
	pick := -1
	for i, c := range cs {
		if *c.n == 0 {
			continue
		}
		if pick < 0 || (o == OK && c.cost < cs[pick].cost) || (o != OK && c.cost > cs[pick].cost) {
			pick = i
		}
	}
	if pick < 0 {
		return
	}
	*cs[pick].n--
	if o == OK {
		q.refund(cs[pick].cost)
	}
}

func (q *AWSQuota) refund(n int) { q.available = min(q.capacity, q.available+n) }

// OnRequestDone does nothing.
func (q *AWSQuota) OnRequestDone(time.Duration) {}

// Level returns the quota left.
func (q *AWSQuota) Level(time.Duration) float64 { return float64(q.available) }

// ConcurrencyBudget is Envoy's retry_budget: concurrent retries ≤
// max(Percent/100 × active attempts, MinConcurrency), where active attempts
// are the requests in flight on the edge, retries included (Envoy's active
// plus pending upstream requests). A retry is admitted while fewer retries
// than that are active, and stays active until its result is reported.
type ConcurrencyBudget struct {
	percent       float64
	min           int
	active, retry int
}

// OnRequest counts a first attempt as active.
func (b *ConcurrencyBudget) OnRequest(time.Duration) { b.active++ }

// TryRetry admits a retry while active retries are below the allowance.
func (b *ConcurrencyBudget) TryRetry(now time.Duration, _ Outcome) bool {
	if float64(b.retry) >= b.allowed() {
		return false
	}
	b.retry++
	b.active++
	return true
}

// allowed mirrors Envoy's integer arithmetic: the percentage is truncated.
func (b *ConcurrencyBudget) allowed() float64 {
	return float64(max(int(b.percent/100*float64(b.active)), b.min))
}

// OnResult ends an active attempt.
func (b *ConcurrencyBudget) OnResult(_ time.Duration, _ Outcome, retry bool) {
	b.active = max(0, b.active-1)
	if retry {
		b.retry = max(0, b.retry-1)
	}
}

// OnRequestDone does nothing: attempts end through OnResult.
func (b *ConcurrencyBudget) OnRequestDone(time.Duration) {}

// Level returns how many more retries would be admitted now.
func (b *ConcurrencyBudget) Level(time.Duration) float64 {
	return max(0, b.allowed()-float64(b.retry))
}
