package policies

import (
	"math"
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
// preset and defaults. No budget kind draws randomness.
//
// A budget is not safe for concurrent use. A budget with Scope "service" is
// shared by every edge of the calling service: whoever builds the call
// policies constructs it once and hands the same value to each edge.
func NewBudget(c BudgetConfig) (Budget, error) {
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
		return &tokenBucketBudget{max: c.MaxTokens, ratio: c.TokenRatio, tokens: c.MaxTokens}, nil
	case BudgetAWSQuota:
		return newAWSQuota(c), nil
	case BudgetConcurrency:
		return &concurrencyBudget{percent: c.Percent, min: c.MinConcurrency}, nil
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

// ratioBudget is Finagle's RetryBudget and the Google SRE per-client budget:
// a retry is admitted when, counting it, the retries in the sliding window
// stay ≤ Ratio × first attempts in the window + MinPerSec × Window.
//
// Finagle's leaky bucket (each request deposits 1, a retry withdraws
// 1/Ratio, a reserve of MinPerSec·ttl retries) admits exactly the same
// sequences, up to the granularity of the window's buckets.
type ratioBudget struct {
	ratio   float64
	reserve float64 // MinPerSec × Window, in retries
	win     slidingCount
}

const (
	seriesRequests = 0
	seriesRetries  = 1
)

func newRatioBudget(c BudgetConfig) *ratioBudget {
	return &ratioBudget{ratio: c.Ratio, reserve: c.MinPerSec * c.Window.Seconds(), win: newSlidingCount(c.Window)}
}

// OnRequest deposits a first attempt.
func (b *ratioBudget) OnRequest(now time.Duration) { b.win.add(now, seriesRequests, 1) }

// TryRetry admits a retry if the window leaves room for it, and counts it.
func (b *ratioBudget) TryRetry(now time.Duration, _ Outcome) bool {
	// A tiny epsilon keeps ratio × requests exact for products like
	// 0.29 × 100 whose binary value falls just below the decimal one.
	if b.room(now)+1e-9 < 1 {
		return false
	}
	b.win.add(now, seriesRetries, 1)
	return true
}

// OnResult does nothing: the ratio budget counts attempts, not results.
func (b *ratioBudget) OnResult(time.Duration, Report) {}

// OnRequestDone does nothing.
func (b *ratioBudget) OnRequestDone(time.Duration) {}

// Level is how many more retries the window admits now (may be fractional,
// never below 0).
func (b *ratioBudget) Level(now time.Duration) float64 { return max(b.room(now), 0) }

func (b *ratioBudget) room(now time.Duration) float64 {
	allowed := b.ratio*float64(b.win.total(now, seriesRequests)) + b.reserve
	return allowed - float64(b.win.total(now, seriesRetries))
}

// tokenBucketBudget is gRPC retry throttling (A6) as grpc-go implements it
// (stream.go shouldRetry, clientconn.go retryThrottler, v1.85.0): tokens
// start at MaxTokens; each failure whose status the retry policy retries
// (or that carries a don't-retry pushback) takes 1, floored at 0, the last
// attempt of a call included; each successful call gives TokenRatio back,
// capped at MaxTokens. A retry or hedge is admitted only while tokens >
// MaxTokens/2, judged right after the failure's token is taken.
// Non-retryable failures and cancelled attempts cost nothing. It does not
// depend on time.
type tokenBucketBudget struct {
	max, ratio, tokens float64
}

// OnRequest does nothing: first attempts are never throttled.
func (b *tokenBucketBudget) OnRequest(time.Duration) {}

// TryRetry admits while tokens > MaxTokens/2; it charges nothing itself.
func (b *tokenBucketBudget) TryRetry(time.Duration, Outcome) bool { return b.tokens > b.max/2 }

// OnResult takes a token for a retryable failure and gives TokenRatio back
// for an OK.
func (b *tokenBucketBudget) OnResult(_ time.Duration, r Report) {
	switch {
	case r.Cancelled:
	case r.Outcome == OK:
		b.tokens = min(b.max, b.tokens+b.ratio)
	case CountsAsFailure(r.Outcome) && (r.Retryable || r.DontRetry):
		b.tokens = max(0, b.tokens-1)
	}
}

// OnRequestDone does nothing.
func (b *tokenBucketBudget) OnRequestDone(time.Duration) {}

// Level returns the current tokens.
func (b *tokenBucketBudget) Level(time.Duration) float64 { return b.tokens }

// awsQuota is the AWS SDK standard-mode retry quota (botocore
// retries/quota.py; aws-sdk-go-v2 aws/retry/standard.go and
// aws/ratelimit/token_rate_limit.go, v1.48.0): a retry costs RetryCost
// (TimeoutCost after a timeout, ThrottleCost after Unavailable) out of
// Capacity, taken at the failure before the backoff, and is refused when
// the quota is short; a first-try success refunds NoRetryIncrement, a
// successful retry refunds the cost its own retry was charged. The quota
// never exceeds Capacity. First attempts are never blocked.
type awsQuota struct {
	capacity, available                  int
	retryCost, timeoutCost, throttleCost int
	noRetryIncrement                     int
}

func newAWSQuota(c BudgetConfig) *awsQuota {
	return &awsQuota{capacity: c.Capacity, available: c.Capacity, retryCost: c.RetryCost,
		timeoutCost: c.TimeoutCost, throttleCost: c.ThrottleCost, noRetryIncrement: c.NoRetryIncrement}
}

// OnRequest does nothing.
func (q *awsQuota) OnRequest(time.Duration) {}

func (q *awsQuota) cost(cause Outcome) int {
	switch cause {
	case Timeout:
		return q.timeoutCost
	case Unavailable:
		return q.throttleCost
	}
	return q.retryCost
}

// TryRetry charges the cost of retrying after cause, if the quota holds it.
func (q *awsQuota) TryRetry(_ time.Duration, cause Outcome) bool {
	cost := q.cost(cause)
	if cost > q.available {
		return false
	}
	q.available -= cost
	return true
}

// OnResult refunds on success as the SDKs do: NoRetryIncrement for a first
// attempt, the attempt's own charge for a retry. Failures keep the charge.
func (q *awsQuota) OnResult(_ time.Duration, r Report) {
	if r.Outcome != OK || r.Cancelled {
		return
	}
	if r.Retry {
		q.refund(q.cost(r.Cause))
		return
	}
	q.refund(q.noRetryIncrement)
}

func (q *awsQuota) refund(n int) { q.available = min(q.capacity, q.available+n) }

// OnRequestDone does nothing.
func (q *awsQuota) OnRequestDone(time.Duration) {}

// Level returns the quota left.
func (q *awsQuota) Level(time.Duration) float64 { return float64(q.available) }

// concurrencyBudget is Envoy's retry_budget: concurrent retries ≤
// max(Percent/100 × active attempts, MinConcurrency), where active attempts
// are the requests in flight on the edge, retries included (Envoy's active
// plus pending upstream requests). A retry is admitted while fewer retries
// than that are active, and stays active from when it is scheduled — its
// backoff included, as Envoy's router counts it — until its result is
// reported.
type concurrencyBudget struct {
	percent       float64
	min           int
	active, retry int
}

// OnRequest counts a first attempt as active.
func (b *concurrencyBudget) OnRequest(time.Duration) { b.active++ }

// TryRetry admits a retry while active retries are below the allowance.
// The retry counts against the allowance from now (Envoy's retries()
// resource), but is an active request only once sent (onSend), as Envoy's
// requests() + pending_requests() count upstream requests.
func (b *concurrencyBudget) TryRetry(now time.Duration, _ Outcome) bool {
	if float64(b.retry) >= b.allowed() {
		return false
	}
	b.retry++
	return true
}

// onSend makes a sent retry an active request.
func (b *concurrencyBudget) onSend(time.Duration) { b.active++ }

// allowed mirrors Envoy's integer arithmetic: the percentage is truncated.
func (b *concurrencyBudget) allowed() float64 {
	return float64(max(int(b.percent/100*float64(b.active)), b.min))
}

// OnResult ends an attempt (a cancelled one too); a retry that was never
// sent was never active.
func (b *concurrencyBudget) OnResult(_ time.Duration, r Report) {
	if !r.Retry || !r.Unsent {
		b.active = max(0, b.active-1)
	}
	if r.Retry {
		b.retry = max(0, b.retry-1)
	}
}

// OnRequestDone does nothing: attempts end through OnResult.
func (b *concurrencyBudget) OnRequestDone(time.Duration) {}

// Level returns how many more retries would be admitted now.
func (b *concurrencyBudget) Level(time.Duration) float64 {
	return max(0, b.allowed()-float64(b.retry))
}
