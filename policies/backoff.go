package policies

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Jitter selects how a backoff delay is randomized.
type Jitter uint8

const (
	// NoJitter: delay = expo(n).
	NoJitter Jitter = iota
	// FullJitter: delay = U(0, expo(n)) (Brooker, AWS).
	FullJitter
	// EqualJitter: delay = expo(n)/2 + U(0, expo(n)/2).
	EqualJitter
	// DecorrelatedJitter: delay = min(Max, U(Initial, 3·previous delay)),
	// starting from previous = Initial.
	DecorrelatedJitter
	// ProportionalJitter: delay = expo(n)·U(1−Spread, 1+Spread) (gRPC ±20%).
	ProportionalJitter
)

var jitterNames = [...]string{"none", "full", "equal", "decorrelated", "proportional"}

// String returns the jitter's name as used in scenario files.
func (j Jitter) String() string {
	if int(j) < len(jitterNames) {
		return jitterNames[j]
	}
	return fmt.Sprintf("jitter(%d)", j)
}

// ParseJitter is the inverse of String; "" means none.
func ParseJitter[S ~string](s S) (Jitter, error) {
	if s == "" {
		return NoJitter, nil
	}
	for i, n := range jitterNames {
		if n == string(s) {
			return Jitter(i), nil
		}
	}
	return 0, &EnumError{What: "jitter", Got: string(s), Allowed: jitterNames[:]}
}

// Backoff is capped exponential backoff with jitter, resolved from a
// BackoffConfig. The zero value retries immediately. It holds no state: the
// caller passes the previous delay (needed by decorrelated jitter) and the
// random stream, so one Backoff serves every call on an edge.
type Backoff struct {
	Initial    time.Duration
	Multiplier float64
	Max        time.Duration // 0: no cap
	Jitter     Jitter
	Spread     float64
	// ThrottleInitial replaces Initial after Unavailable when > 0.
	ThrottleInitial time.Duration
}

// NewBackoff resolves a config, applying defaults (Multiplier 2).
func NewBackoff(c BackoffConfig) (Backoff, error) {
	j, err := ParseJitter(c.Jitter)
	if err != nil {
		return Backoff{}, &FieldError{Field: "backoff.jitter", Err: err}
	}
	b := Backoff{Initial: c.Initial, Multiplier: c.Multiplier, Max: c.Max, Jitter: j, Spread: c.Spread, ThrottleInitial: c.ThrottleInitial}
	if b.Multiplier == 0 {
		b.Multiplier = 2
	}
	return b, inField("backoff", b.validate())
}

// Validate reports a configuration that cannot produce delays, naming the
// field relative to the retry block ("backoff.max").
func (b Backoff) Validate() error { return inField("backoff", b.validate()) }

// validate is Validate with fields relative to the backoff.
func (b Backoff) validate() error {
	switch {
	case b.Initial < 0:
		return fieldErrorf("initial", "must be ≥ 0, got %v", b.Initial)
	case b.Max < 0:
		return fieldErrorf("max", "must be ≥ 0, got %v", b.Max)
	case b.Multiplier < 1 || math.IsNaN(b.Multiplier) || math.IsInf(b.Multiplier, 0):
		return fieldErrorf("multiplier", "must be ≥ 1, got %v", b.Multiplier)
	case b.Spread < 0 || b.Spread > 1:
		return fieldErrorf("spread", "must be in [0, 1], got %v", b.Spread)
	case b.Max > 0 && b.Max < b.Initial:
		return fieldErrorf("max", "must be ≥ backoff.initial (%v), got %v", b.Initial, b.Max)
	case b.ThrottleInitial < 0:
		return fieldErrorf("throttle_initial", "must be ≥ 0, got %v", b.ThrottleInitial)
	case b.Max > 0 && b.Max < b.ThrottleInitial:
		return fieldErrorf("max", "must be ≥ backoff.throttle_initial (%v), got %v", b.ThrottleInitial, b.Max)
	}
	return nil
}

// after returns the backoff that applies to a retry after cause: the
// throttling base replaces Initial after Unavailable.
func (b Backoff) after(cause Outcome) Backoff {
	if cause == Unavailable && b.ThrottleInitial > 0 {
		b.Initial = b.ThrottleInitial
	}
	return b
}

// Expo returns min(Max, Initial·Multiplier^(n−1)) for retry n ≥ 1, the
// un-jittered delay.
func (b Backoff) Expo(n int) time.Duration {
	// The first retry's is Initial, Multiplier⁰ = 1: no Pow (a retry storm
	// computes it for every failed attempt).
	d := float64(b.Initial)
	if n > 1 {
		d *= math.Pow(b.Multiplier, float64(n-1))
	}
	if b.Max > 0 && d > float64(b.Max) {
		return b.Max
	}
	if d > math.MaxInt64/2 {
		return math.MaxInt64 / 2
	}
	return time.Duration(d)
}

// Delay returns the wait before retry n (n = 1 for the first retry). prev is
// the delay returned for retry n−1 (0 for the first); only decorrelated
// jitter uses it.
func (b Backoff) Delay(n int, prev time.Duration, r *rand.Rand) time.Duration {
	switch b.Jitter {
	case FullJitter:
		return time.Duration(r.Float64() * float64(b.Expo(n)))
	case EqualJitter:
		e := float64(b.Expo(n))
		return time.Duration(e/2 + r.Float64()*e/2)
	case DecorrelatedJitter:
		if prev < b.Initial {
			prev = b.Initial
		}
		lo, hi := float64(b.Initial), min(3*float64(prev), math.MaxInt64/2)
		d := time.Duration(lo + r.Float64()*(hi-lo))
		if b.Max > 0 && d > b.Max {
			d = b.Max
		}
		return d
	case ProportionalJitter:
		f := 1 - b.Spread + 2*b.Spread*r.Float64()
		return time.Duration(float64(b.Expo(n)) * f)
	default:
		return b.Expo(n)
	}
}
