package policies

import "time"

// This file holds the plain-data configuration of every policy. The scenario
// (package topology) embeds these structs directly, so a policy's YAML keys,
// defaults, presets and validation live next to the code that implements it.
// A zero value means "off" or "use the documented default". Retry, budget
// and breaker configs name presets; Resolve expands them, once, with every
// key given explicitly winning over the preset, zero included.

// RetryConfig configures how a caller retries one call edge.
//
// Defaults: MaxAttempts 1 (no retry), On [unavailable, timeout], and the
// Backoff defaults.
type RetryConfig struct {
	// Preset names a real system's retry policy: grpc, aws-standard,
	// aws-standard-2026, envoy, finagle (see presets.go). Keys given beside
	// the preset override it.
	Preset string `yaml:"preset,omitempty" json:"preset,omitempty"`
	// MaxAttempts counts every attempt, the first included. 0 means 1.
	MaxAttempts int `yaml:"max_attempts,omitempty" json:"max_attempts,omitempty"`
	// On lists the outcome classes that may be retried: unavailable,
	// timeout, error. Empty means [unavailable, timeout].
	On []RetryClass `yaml:"on,omitempty" json:"on,omitempty"`
	// Backoff shapes the wait before each retry.
	Backoff BackoffConfig `yaml:"backoff,omitempty" json:"backoff,omitempty"`
	// BudgetShare, in [0, 1], caps each call's retries at ⌈BudgetShare ×
	// budget balance⌉, the balance (whole retries) read when the call
	// starts: Finagle's RequeueFilter (0.2). 0 means no such cap.
	BudgetShare float64 `yaml:"budget_share,omitempty" json:"budget_share,omitempty"`
	// OtherHost makes a retry or hedge avoid the callee replicas this call
	// already tried, while others remain (Envoy's previous_hosts predicate).
	OtherHost bool `yaml:"other_host,omitempty" json:"other_host,omitempty"`
	// Transparent retries an attempt that failed before it was sent
	// (not_sent: pool wait, connect, TLS) once per call, at once, outside
	// MaxAttempts and any budget, as gRPC A6 specifies. A sent attempt is
	// never retried this way, so a write is not duplicated by it.
	Transparent bool `yaml:"transparent,omitempty" json:"transparent,omitempty"`

	// The rules of retrying reverse proxies (the nginx and haproxy
	// presets, and pasted nginx_conf and haproxy_cfg files).

	// HoldWrites stops a write from being retried once an attempt of it
	// was sent: only a failure before sending (not_sent) is retried
	// (nginx's rule for POST, LOCK and PATCH without non_idempotent;
	// HAProxy's http-request disable-l7-retry).
	HoldWrites bool `yaml:"hold_writes,omitempty" json:"hold_writes,omitempty"`
	// EachServerOnce sends every attempt of a call to a replica it has not
	// tried, never the same one twice, and caps the attempts at the
	// callee's replicas (nginx's tried peers); MaxAttempts 0 then means
	// one attempt per replica (proxy_next_upstream_tries 0). The scenario
	// loader resolves the cap.
	EachServerOnce bool `yaml:"each_server_once,omitempty" json:"each_server_once,omitempty"`
	// SameServer sends a retry to the replica of the attempt before it
	// (HAProxy's retries stay on their server) unless Redispatch says the
	// retry is redispatched: then it goes to another replica.
	SameServer bool `yaml:"same_server,omitempty" json:"same_server,omitempty"`
	// Redispatch is HAProxy's option redispatch interval with SameServer:
	// 0 never redispatches (no option redispatch), P > 0 every P-th retry,
	// −N the N-th retry before the last (−1: the last retry).
	Redispatch int `yaml:"redispatch,omitempty" json:"redispatch,omitempty"`
	// TurnAround is the wait before retrying the same replica after a
	// not_sent failure, other retries going at once: HAProxy's
	// min(timeout connect, 1 s). It replaces the backoff after not_sent;
	// a redispatched retry does not wait.
	TurnAround time.Duration `yaml:"turn_around,omitempty" json:"turn_around,omitempty"`
	// RetryWindow forbids a new attempt once this long has passed since
	// the call began (nginx's proxy_next_upstream_timeout); attempts
	// already sent run on. 0 means no limit.
	RetryWindow time.Duration `yaml:"retry_window,omitempty" json:"retry_window,omitempty"`

	resolved bool // by Resolve: preset expanded, defaults applied
}

// RedispatchAt reports whether retry n (1 for the first retry) of a
// SameServer policy goes to another replica: HAProxy 2.6's
// stream_choose_redispatch, counting retries as its conn_retries does.
func (c RetryConfig) RedispatchAt(n int) bool {
	return redispatchAt(c.Redispatch, c.MaxAttempts, n)
}

func redispatchAt(every, maxAttempts, n int) bool {
	switch {
	case every > 0:
		return n%every == 0
	case every < 0:
		// HAProxy: conn_retries % (retries + 1 + redispatch_after) == 0.
		m := maxAttempts + every
		return m > 0 && n%m == 0
	}
	return false
}

// BackoffConfig is capped exponential backoff with jitter:
// expo(n) = min(Max, Initial·Multiplier^(n−1)) for retry n ≥ 1, then jitter.
//
// Defaults: Initial 0 (retry at once), Multiplier 2, Max unlimited, Jitter none.
type BackoffConfig struct {
	Initial    time.Duration `yaml:"initial,omitempty" json:"initial,omitempty"`
	Multiplier float64       `yaml:"multiplier,omitempty" json:"multiplier,omitempty"`
	Max        time.Duration `yaml:"max,omitempty" json:"max,omitempty"`
	// Jitter is none, full, equal, decorrelated or proportional.
	Jitter JitterName `yaml:"jitter,omitempty" json:"jitter,omitempty"`
	// Spread is the half-width of proportional jitter: the delay is
	// expo·U(1−Spread, 1+Spread). gRPC uses 0.2. Ignored by other kinds.
	Spread float64 `yaml:"spread,omitempty" json:"spread,omitempty"` // ThrottleInitial, if set, replaces Initial for a retry after
	// Unavailable (AWS's throttling errors): the AWS SDKs' 2026 behaviour
	// waits from a 1 s base there and a 50 ms one after transient errors.
	ThrottleInitial time.Duration `yaml:"throttle_initial,omitempty" json:"throttle_initial,omitempty"`
}

// BudgetConfig limits retries (and hedges) on a call edge, or on all edges of
// a service when Scope is "service".
type BudgetConfig struct {
	Preset string `yaml:"preset,omitempty" json:"preset,omitempty"`
	// Kind is ratio, token_bucket, aws_quota or concurrency.
	Kind BudgetKind `yaml:"kind,omitempty" json:"kind,omitempty"`
	// Scope is edge (default) or service.
	Scope BudgetScope `yaml:"scope,omitempty" json:"scope,omitempty"`

	// ratio (Finagle RetryBudget / Google SRE): retries in the last Window
	// ≤ Ratio × requests in the last Window + MinPerSec × Window.
	Ratio     float64       `yaml:"ratio,omitempty" json:"ratio,omitempty"`
	MinPerSec float64       `yaml:"min_per_sec,omitempty" json:"min_per_sec,omitempty"`
	Window    time.Duration `yaml:"window,omitempty" json:"window,omitempty"`

	// token_bucket (gRPC retry throttling): tokens start at MaxTokens; a
	// failure takes 1, a success gives TokenRatio back; retries only while
	// tokens > MaxTokens/2.
	MaxTokens  float64 `yaml:"max_tokens,omitempty" json:"max_tokens,omitempty"`
	TokenRatio float64 `yaml:"token_ratio,omitempty" json:"token_ratio,omitempty"`

	// aws_quota (AWS SDK standard mode): a retry costs RetryCost (TimeoutCost
	// after a timeout) out of Capacity; a first-try success refunds
	// NoRetryIncrement, a success after retries refunds that retry's cost.
	Capacity    int `yaml:"capacity,omitempty" json:"capacity,omitempty"`
	RetryCost   int `yaml:"retry_cost,omitempty" json:"retry_cost,omitempty"`
	TimeoutCost int `yaml:"timeout_cost,omitempty" json:"timeout_cost,omitempty"`
	// ThrottleCost is the cost of a retry after Unavailable (AWS's
	// throttling errors); 0 means RetryCost. The 2026 SDKs charge 5 here
	// and 14 for other transient errors.
	ThrottleCost     int `yaml:"throttle_cost,omitempty" json:"throttle_cost,omitempty"`
	NoRetryIncrement int `yaml:"no_retry_increment,omitempty" json:"no_retry_increment,omitempty"`

	// concurrency (Envoy retry_budget): active retries ≤
	// max(Percent/100 × active requests, MinConcurrency).
	Percent        float64 `yaml:"percent,omitempty" json:"percent,omitempty"`
	MinConcurrency int     `yaml:"min_concurrency,omitempty" json:"min_concurrency,omitempty"`

	resolved bool // by Resolve: preset expanded, defaults applied
}

// BreakerConfig configures a circuit breaker on a call edge. An open breaker
// fails calls locally (outcome BreakerOpen), counted apart from the callee's
// own failures.
type BreakerConfig struct {
	Preset string `yaml:"preset,omitempty" json:"preset,omitempty"`
	// Kind is consecutive (gobreaker-like), rate (resilience4j-like) or
	// hystrix (Hystrix's command and breaker).
	Kind BreakerKind `yaml:"kind,omitempty" json:"kind,omitempty"`

	// Failures: consecutive failures that open the breaker.
	Failures int `yaml:"failures,omitempty" json:"failures,omitempty"`
	// OpenFor: how long the breaker stays open before half-open.
	OpenFor time.Duration `yaml:"open_for,omitempty" json:"open_for,omitempty"`
	// HalfOpenCalls: probe calls admitted while half-open.
	HalfOpenCalls int `yaml:"half_open_calls,omitempty" json:"half_open_calls,omitempty"`

	// rate kind: WindowType count (WindowSize calls) or time (WindowSize seconds).
	WindowType       WindowType    `yaml:"window_type,omitempty" json:"window_type,omitempty"`
	WindowSize       int           `yaml:"window_size,omitempty" json:"window_size,omitempty"`
	MinCalls         int           `yaml:"min_calls,omitempty" json:"min_calls,omitempty"`
	FailureRate      float64       `yaml:"failure_rate,omitempty" json:"failure_rate,omitempty"`     // percent, trips at ≥
	SlowCallRate     float64       `yaml:"slow_call_rate,omitempty" json:"slow_call_rate,omitempty"` // percent, trips at ≥
	SlowCallDuration time.Duration `yaml:"slow_call_duration,omitempty" json:"slow_call_duration,omitempty"`

	// hystrix kind: MaxConcurrent attempts run at once (the thread pool,
	// no queue; 0: no limit) and one more is rejected as an error;
	// ExecutionTimeout counts a slower result as a timeout error.
	MaxConcurrent    int           `yaml:"max_concurrent,omitempty" json:"max_concurrent,omitempty"`
	ExecutionTimeout time.Duration `yaml:"execution_timeout,omitempty" json:"execution_timeout,omitempty"`

	resolved bool // by Resolve: preset expanded, defaults applied
}

// HedgeConfig sends extra attempts of a call that has not answered yet.
type HedgeConfig struct {
	// Delay before each further attempt; 0 with Percentile 0 sends all at once.
	Delay time.Duration `yaml:"delay,omitempty" json:"delay,omitempty"`
	// Percentile (0–1, e.g. 0.95) uses the edge's observed latency at that
	// quantile as the delay once MinSamples have been seen; Delay until then.
	Percentile float64 `yaml:"percentile,omitempty" json:"percentile,omitempty"`
	MinSamples int     `yaml:"min_samples,omitempty" json:"min_samples,omitempty"`
	// MaxAttempts counts the first attempt too (≥ 2 to hedge at all).
	MaxAttempts int `yaml:"max_attempts,omitempty" json:"max_attempts,omitempty"`
	// CancelOthers cancels the remaining attempts when one succeeds.
	CancelOthers bool `yaml:"cancel_others,omitempty" json:"cancel_others,omitempty"`
	// Force hedges non-idempotent writes too (duplicates will show).
	Force bool `yaml:"force,omitempty" json:"force,omitempty"`
}

// ThrottleConfig is Google SRE client-side adaptive throttling: a request is
// rejected locally with probability max(0, (requests − K·accepts)/(requests+1))
// over the last Window. Defaults: K 2, Window 2m.
type ThrottleConfig struct {
	K      float64       `yaml:"k,omitempty" json:"k,omitempty"`
	Window time.Duration `yaml:"window,omitempty" json:"window,omitempty"`
}

// OverloadConfig is a service's own protection against overload.
type OverloadConfig struct {
	// ConcurrencyLimit caps requests admitted (in service plus queued);
	// 0 means no limit beyond workers and queue.
	ConcurrencyLimit int `yaml:"concurrency_limit,omitempty" json:"concurrency_limit,omitempty"`
	// Discipline orders the queue: fifo (default), lifo or adaptive_lifo
	// (LIFO while a standing queue exists).
	Discipline Discipline `yaml:"discipline,omitempty" json:"discipline,omitempty"`
	// CoDel drops queued work whose queue time stays above Target for an Interval.
	CoDel *CoDelConfig `yaml:"codel,omitempty" json:"codel,omitempty"`
	// MaxQueueTime sheds requests that waited in the queue longer than this.
	MaxQueueTime time.Duration `yaml:"max_queue_time,omitempty" json:"max_queue_time,omitempty"`
	// Pushback makes rejections carry a retry-after hint.
	Pushback *PushbackConfig `yaml:"pushback,omitempty" json:"pushback,omitempty"`
	// RateLimit is Envoy's local rate limit in front of the service: a
	// request finding the bucket empty is answered unavailable at once
	// (Envoy's 429) with a Retry-After until the next fill.
	RateLimit *RateLimitConfig `yaml:"rate_limit,omitempty" json:"rate_limit,omitempty"`
}

// CoDelConfig is controlled delay on queue time. Defaults: Target 5ms, Interval 100ms.
type CoDelConfig struct {
	Target   time.Duration `yaml:"target,omitempty" json:"target,omitempty"`
	Interval time.Duration `yaml:"interval,omitempty" json:"interval,omitempty"`
}

// PushbackConfig is the retry-after a service sends with an overload rejection:
// RetryAfter + PerQueued × queue length, capped at Max. DontRetry sends
// "do not retry" instead of a delay.
type PushbackConfig struct {
	RetryAfter time.Duration `yaml:"retry_after,omitempty" json:"retry_after,omitempty"`
	PerQueued  time.Duration `yaml:"per_queued,omitempty" json:"per_queued,omitempty"`
	Max        time.Duration `yaml:"max,omitempty" json:"max,omitempty"`
	DontRetry  bool          `yaml:"dont_retry,omitempty" json:"dont_retry,omitempty"`
}
