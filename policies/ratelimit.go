package policies

import (
	"time"

	"golang.org/x/time/rate"
)

// RateLimitConfig is a token bucket: it holds at most MaxTokens, gains
// TokensPerFill every FillInterval (spread evenly over the interval) and
// lets a request through for each token. It is the token_bucket of Envoy's
// local rate limit filter (envoy.extensions.filters.http.local_ratelimit.v3,
// type.v3.TokenBucket) on a service, and a client's send-rate limit on a
// call edge.
type RateLimitConfig struct {
	MaxTokens int `yaml:"max_tokens" json:"max_tokens"`
	// TokensPerFill defaults to 1, as Envoy's does.
	TokensPerFill int           `yaml:"tokens_per_fill,omitempty" json:"tokens_per_fill,omitempty"`
	FillInterval  time.Duration `yaml:"fill_interval" json:"fill_interval"`
}

// Validate reports the first field that cannot describe a token bucket.
func (c RateLimitConfig) Validate() error {
	switch {
	case c.MaxTokens < 1:
		return fieldErrorf("max_tokens", "must be ≥ 1, got %d", c.MaxTokens)
	case c.TokensPerFill < 0:
		return fieldErrorf("tokens_per_fill", "must be ≥ 1, got %d", c.TokensPerFill)
	case c.FillInterval <= 0:
		return fieldErrorf("fill_interval", "must be > 0, got %v", c.FillInterval)
	}
	return nil
}

// rateEpoch anchors the simulated clock for golang.org/x/time/rate, whose
// explicit-time methods take a time.Time: now (an offset since the run
// began) becomes rateEpoch.Add(now). It is a constant, so no clock is read.
var rateEpoch = time.Unix(0, 0).UTC()

// RateLimiter is a token bucket over golang.org/x/time/rate's Limiter, used
// only through its explicit-time methods (AllowN, ReserveN, TokensAt), so it
// stays clock-free like every policy. Envoy adds TokensPerFill at once on
// each fill timer, capped at MaxTokens (local_ratelimit_impl.cc
// onFillTimer); the Limiter refills continuously at TokensPerFill per
// FillInterval. Consulting the Limiter only at fill instants — at
// ⌊now/FillInterval⌋·FillInterval — makes the two the same: between two
// instants the Limiter gains exactly TokensPerFill, capped at MaxTokens.
// Not safe for concurrent use.
type RateLimiter struct {
	lim  *rate.Limiter
	fill time.Duration
}

// NewRateLimiter builds the limiter c describes, full.
func NewRateLimiter(c RateLimitConfig) (*RateLimiter, error) {
	if c.TokensPerFill == 0 {
		c.TokensPerFill = 1
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	perSec := float64(c.TokensPerFill) / c.FillInterval.Seconds()
	lim := rate.NewLimiter(rate.Limit(perSec), c.MaxTokens)
	lim.AllowN(rateEpoch, 0) // the bucket is full at time 0
	return &RateLimiter{lim: lim, fill: c.FillInterval}, nil
}

// lastFill returns the fill instant at or before now.
func (l *RateLimiter) lastFill(now time.Duration) time.Duration { return now - now%l.fill }

// Admit takes a token at now if there is one. If not, retryAfter is how
// long until the next fill brings one: the Retry-After a server-side limit
// answers with (Envoy answers 429; stormsim's callee answers unavailable).
func (l *RateLimiter) Admit(now time.Duration) (ok bool, retryAfter time.Duration) {
	f := l.lastFill(now)
	if l.lim.AllowN(rateEpoch.Add(f), 1) {
		return true, 0
	}
	return false, f + l.fill - now
}

// Reserve takes a token for a send at now and returns how long the sender
// must wait before using it (0 if one is there): a client's send-rate
// limit delays attempts rather than failing them. Reservations queue: each
// waits for the fill that brings its token.
func (l *RateLimiter) Reserve(now time.Duration) time.Duration {
	f := l.lastFill(now)
	t := rateEpoch.Add(f)
	d := l.lim.ReserveN(t, 1).DelayFrom(t)
	if d <= 0 {
		return 0
	}
	fills := (d + l.fill - 1) / l.fill
	return f + fills*l.fill - now
}

// Tokens reports the tokens in the bucket at now, for time series.
func (l *RateLimiter) Tokens(now time.Duration) float64 {
	return l.lim.TokensAt(rateEpoch.Add(l.lastFill(now)))
}
