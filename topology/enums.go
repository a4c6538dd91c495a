package topology

import "github.com/stormsim/stormsim/policies"

// The enumerated keys of a scenario are named string types: decoding
// rejects a name that is not listed (an *policies.EnumError, placed at the
// value's line), and comparisons with untyped string constants keep
// working. The empty name means the key's default.

// Arrival is how logical requests arrive: poisson, constant or closed.
type Arrival string

// The arrival processes.
const (
	ArrivalPoisson  Arrival = "poisson"
	ArrivalConstant Arrival = "constant"
	ArrivalClosed   Arrival = "closed"
)

var arrivals = []Arrival{ArrivalPoisson, ArrivalConstant, ArrivalClosed}

// UnmarshalText accepts the arrival processes.
func (a *Arrival) UnmarshalText(text []byte) error {
	return policies.ParseName("arrival", arrivals, text, a)
}

// DistKind names a distribution of durations (see Dist).
type DistKind string

var distKinds = []DistKind{"constant", "exponential", "uniform", "normal", "lognormal", "mixture", "empirical"}

// UnmarshalText accepts the distribution kinds.
func (k *DistKind) UnmarshalText(text []byte) error {
	return policies.ParseName("distribution", distKinds, text, k)
}

// TimeUnit is the unit of an empirical distribution's samples: ns, us (or
// µs), ms or s.
type TimeUnit string

// UnmarshalText accepts the time units.
func (u *TimeUnit) UnmarshalText(text []byte) error {
	return policies.ParseName("unit", []TimeUnit{"ns", "us", "µs", "ms", "s"}, text, u)
}

// ErrorClass is the class of a service's injected errors: error, unavailable or timeout.
type ErrorClass string

var errorClasses = []ErrorClass{"error", "unavailable", "timeout"}

// UnmarshalText accepts the error classes.
func (c *ErrorClass) UnmarshalText(text []byte) error {
	return policies.ParseName("error class", errorClasses, text, c)
}

// DownstreamFailure is what a service answers when a downstream call
// finally fails: propagate, unavailable, error or timeout.
type DownstreamFailure string

var downstreams = []DownstreamFailure{"propagate", "unavailable", "error", "timeout"}

// UnmarshalText accepts the downstream failure answers.
func (f *DownstreamFailure) UnmarshalText(text []byte) error {
	return policies.ParseName("downstream failure", downstreams, text, f)
}

// Balance is how a caller spreads attempts over a callee's replicas:
// round_robin, random, least_request or p2c.
type Balance string

// The balancers.
const (
	BalanceRoundRobin   Balance = "round_robin"
	BalanceRandom       Balance = "random"
	BalanceLeastRequest Balance = "least_request"
	BalanceP2C          Balance = "p2c"
)

var balances = []Balance{BalanceRoundRobin, BalanceRandom, BalanceLeastRequest, BalanceP2C}

// UnmarshalText accepts the balancers.
func (b *Balance) UnmarshalText(text []byte) error {
	return policies.ParseName("balancer", balances, text, b)
}
