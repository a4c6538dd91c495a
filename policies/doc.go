// Package policies holds the resilience policies a caller and a service
// apply to calls: backoff and jitter, retry classes, retry budgets, circuit
// breakers, hedging, client-side adaptive throttling, and a service's queue
// with its shedding and pushback. The simulator (package sim) and the HTTP
// load driver and servers (package load) use the very same values.
//
// # Time and randomness
//
// No policy reads the clock, sleeps or starts goroutines. Every method that
// depends on time takes now, the offset since the run began, and every
// random draw comes from an injected *rand.Rand (math/rand/v2). Policies are
// non-blocking state machines: they decide, the caller waits. Given the same
// calls with the same times and streams they make the same decisions.
//
// # Configuration
//
// Each policy is configured by a plain struct in config.go (embedded in the
// scenario) with a Validate method whose errors are *FieldError naming the
// field. A zero field means the documented default. Presets (RetryPreset,
// BudgetPreset, BreakerPreset) fill a config with the values of a real
// system; docs/policies.md tables them with their sources, and a test keeps
// the two in step. Resolve expands a preset and applies defaults once, with
// the keys a scenario wrote winning (zero included); the builders use a
// resolved config as it is. Enumerated keys are named string types
// (BudgetKind, JitterName, RetryClass, ...) that reject unknown names.
//
// # Formulas
//
//	backoff       expo(n) = min(Max, Initial·Multiplier^(n−1)), retry n ≥ 1
//	              full U(0, expo), equal expo/2 + U(0, expo/2),
//	              decorrelated min(Max, U(Initial, 3·prev)), proportional expo·U(1−s, 1+s)
//	ratio budget  retries in window ≤ Ratio·requests in window + MinPerSec·Window
//	token bucket  failure: tokens−1 (≥ 0); OK: tokens+TokenRatio (≤ Max); retry iff tokens > Max/2
//	aws quota     retry costs RetryCost, TimeoutCost or ThrottleCost; OK refunds
//	concurrency   active retries < max(⌊Percent/100·active attempts⌋, MinConcurrency)
//	throttle      P(reject) = max(0, (requests − K·accepts)/(requests + 1))
//	pushback      min(Max, RetryAfter + PerQueued·queued)
//
// A Queue holds at most its limit of live items. An owner that cancels a
// queued item calls Cancel: the item stops counting at once (in Len, the
// limit and the concurrency limit) and leaves lazily — when it reaches an
// end of the ring, or when a full ring is at least half cancelled and is
// compacted — so Offer, Next and Cancel are O(1) amortized.
//
// Failures, for budgets and breakers alike, are the outcomes Unavailable,
// Timeout and Error (CountsAsFailure); Conflict and InProgress are answers
// from a healthy callee and count as successes.
//
// # Concurrency
//
// No type in this package is safe for concurrent use; the simulator is
// single-threaded and load mode guards each policy with a mutex. A budget
// with Scope "service" is shared by all of a service's edges: the code that
// builds the call policies constructs it once and hands it to each edge.
// Backoff is an immutable value and may be shared freely.
package policies
