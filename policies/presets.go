package policies

import (
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"
)

// Presets name the policies of real systems. Each returns a fully filled
// config; docs/policies.md lists every value in a table that a test checks
// against these functions, with the source of each and what the preset
// cannot express.

var retryPresets = map[string]RetryConfig{
	// gRPC A6 example policy; backoff jitter as revised in 2024 (±20 %).
	"grpc": {MaxAttempts: 4, On: []RetryClass{"unavailable"},
		Backoff: BackoffConfig{Initial: 100 * time.Millisecond, Multiplier: 2, Max: time.Second, Jitter: "proportional", Spread: 0.2}},
	// botocore standard mode before 2026: U(0,1)·min(1s·2^i, 20s), i = 0 at the first retry.
	"aws-standard": {MaxAttempts: 3, On: []RetryClass{"unavailable", "timeout", "error"},
		Backoff: BackoffConfig{Initial: time.Second, Multiplier: 2, Max: 20 * time.Second, Jitter: "full"}},
	// The 2026 behaviour (aws-sdk-go-v2 v1.48.0 aws/retry/standard.go,
	// jitter_backoff.go): 50 ms base after transient errors, 1 s after throttling.
	"aws-standard-2026": {MaxAttempts: 3, On: []RetryClass{"unavailable", "timeout", "error"},
		Backoff: BackoffConfig{Initial: 50 * time.Millisecond, Multiplier: 2, Max: 20 * time.Second, Jitter: "full", ThrottleInitial: time.Second}},
	// Envoy route retry policy: num_retries 1, retry_on 5xx, U[0, min(25ms·2^(n−1), 250ms)).
	"envoy": {MaxAttempts: 2, On: []RetryClass{"unavailable", "timeout", "error"},
		Backoff: BackoffConfig{Initial: 25 * time.Millisecond, Multiplier: 2, Max: 250 * time.Millisecond, Jitter: "full"}},
	// Finagle requeues: only failures that never reached the server, retried
	// at once (Backoff.constant(0)), bounded by the RetryBudget and per request
	// by ⌈0.2 × budget balance⌉ (RequeueFilter). Finagle has no attempt
	// limit of its own; 1000 only bounds an edge without a budget.
	"finagle": {MaxAttempts: 1000, On: []RetryClass{"unavailable"}, BudgetShare: 0.2,
		Backoff: BackoffConfig{Multiplier: 2}},
	// nginx 1.22 proxy_next_upstream defaults: error and timeout (a
	// connect error is not_sent; a sent attempt's error or timeout is
	// timeout here), each server at most once, tries 0 (every server),
	// at once; POST, LOCK and PATCH are not passed on once sent.
	"nginx": {On: []RetryClass{"not_sent", "timeout"}, EachServerOnce: true, HoldWrites: true,
		Backoff: BackoffConfig{Multiplier: 2}},
	// HAProxy 2.6 defaults: retries 3, retry-on conn-failure, retries on
	// the same server (no option redispatch), after a turn-around of
	// min(timeout connect, 1 s).
	"haproxy": {MaxAttempts: 4, On: []RetryClass{"not_sent"}, SameServer: true, TurnAround: time.Second,
		Backoff: BackoffConfig{Multiplier: 2}},
	// Google SRE book: at most 3 attempts with randomized exponential backoff;
	// the book gives no delays, the 50 ms / 1 s values are stormsim's.
	"sre": {MaxAttempts: 3, On: []RetryClass{"unavailable", "timeout"},
		Backoff: BackoffConfig{Initial: 50 * time.Millisecond, Multiplier: 2, Max: time.Second, Jitter: "full"}},
}

// NginxHeldMethods are the methods nginx does not pass to the next server
// once the request was sent, unless proxy_next_upstream lists
// non_idempotent (ngx_http_upstream_next, 1.22): the writes that the
// nginx preset's hold_writes holds. PUT and DELETE are passed on.
var NginxHeldMethods = []string{"POST", "LOCK", "PATCH"}

var budgetPresets = map[string]BudgetConfig{
	"finagle":  {Kind: BudgetRatio, Ratio: 0.2, MinPerSec: 10, Window: 10 * time.Second},
	"sre":      {Kind: BudgetRatio, Ratio: 0.1, Window: 10 * time.Second},
	"grpc":     {Kind: BudgetTokenBucket, MaxTokens: 10, TokenRatio: 0.1},
	"aws":      {Kind: BudgetAWSQuota, Capacity: 500, RetryCost: 5, TimeoutCost: 10, ThrottleCost: 5, NoRetryIncrement: 1},
	"aws-2026": {Kind: BudgetAWSQuota, Capacity: 500, RetryCost: 14, TimeoutCost: 14, ThrottleCost: 5, NoRetryIncrement: 1},
	"envoy":    {Kind: BudgetConcurrency, Percent: 20, MinConcurrency: 3},
}

var breakerPresets = map[string]BreakerConfig{
	"resilience4j": {Kind: BreakerRate, OpenFor: 60 * time.Second, HalfOpenCalls: 10, WindowType: WindowCount,
		WindowSize: 100, MinCalls: 100, FailureRate: 50, SlowCallRate: 100, SlowCallDuration: 60 * time.Second},
	"gobreaker": {Kind: BreakerConsecutive, Failures: 6, OpenFor: 60 * time.Second, HalfOpenCalls: 1},
	"hystrix": {Kind: BreakerHystrix, OpenFor: 5 * time.Second, HalfOpenCalls: 1,
		WindowSize: 10, MinCalls: 20, FailureRate: 50, MaxConcurrent: 10, ExecutionTimeout: time.Second},
}

func presetNames[T any](m map[string]T) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// RetryPresetNames lists the retry presets, sorted.
func RetryPresetNames() []string { return presetNames(retryPresets) }

// BudgetPresetNames lists the budget presets, sorted.
func BudgetPresetNames() []string { return presetNames(budgetPresets) }

// BreakerPresetNames lists the breaker presets, sorted.
func BreakerPresetNames() []string { return presetNames(breakerPresets) }

// RetryPreset returns the retry policy of a named system: grpc,
// aws-standard, aws-standard-2026, envoy, finagle, sre, or the reverse
// proxies nginx and haproxy.
func RetryPreset(name string) (RetryConfig, error) {
	c, ok := retryPresets[name]
	if !ok {
		return RetryConfig{}, &FieldError{Field: "preset", Err: &EnumError{What: "retry preset", Got: name, Allowed: RetryPresetNames()}}
	}
	c.On = slices.Clone(c.On)
	return c, nil
}

// BudgetPreset returns the retry budget of a named system: finagle, sre,
// grpc, aws, aws-2026 or envoy.
func BudgetPreset(name string) (BudgetConfig, error) {
	c, ok := budgetPresets[name]
	if !ok {
		return BudgetConfig{}, &FieldError{Field: "preset", Err: &EnumError{What: "budget preset", Got: name, Allowed: BudgetPresetNames()}}
	}
	return c, nil
}

// BreakerPreset returns the circuit breaker of a named library with its
// defaults: resilience4j, gobreaker or hystrix.
func BreakerPreset(name string) (BreakerConfig, error) {
	c, ok := breakerPresets[name]
	if !ok {
		return BreakerConfig{}, &FieldError{Field: "preset", Err: &EnumError{What: "breaker preset", Got: name, Allowed: BreakerPresetNames()}}
	}
	return c, nil
}

// Given reports whether a config's key was written explicitly, by the
// key's path in scenario key names relative to the config: "min_per_sec",
// "backoff.initial". Resolve takes every non-zero field as written (all a
// Go caller can express, and what a config pasted from elsewhere holds);
// a Given adds the keys written as zero. It may be nil.
type Given func(key string) bool

// Resolve expands the config's preset and applies the defaults, once: a
// key given explicitly wins, zero included; a key not given takes the
// preset's value, then the default. The result is marked resolved, and
// NewEdge and Validate use a resolved config as it is, so a config the
// scenario loader resolved (with the keys of the file as given) is never
// expanded again. Problems are *FieldError with fields relative to the
// config ("preset").
func (c RetryConfig) Resolve(given Given) (RetryConfig, error) {
	return resolveConfig(c, c.resolved, c.Preset, RetryPreset, given, RetryConfig.withDefaults, func(r *RetryConfig) { r.resolved = true })
}

// withDefaults fills the retry defaults: one attempt (one per replica
// with each_server_once), multiplier 2.
func (c RetryConfig) withDefaults() RetryConfig {
	if c.MaxAttempts == 0 && !c.EachServerOnce {
		c.MaxAttempts = 1
	}
	if c.Backoff.Multiplier == 0 {
		c.Backoff.Multiplier = 2
	}
	return c
}

// Resolve expands the preset and applies the kind's defaults, once; see
// RetryConfig.Resolve.
func (c BudgetConfig) Resolve(given Given) (BudgetConfig, error) {
	return resolveConfig(c, c.resolved, c.Preset, BudgetPreset, given, BudgetConfig.withDefaults, func(b *BudgetConfig) { b.resolved = true })
}

// Resolve expands the preset and applies the kind's defaults, once; see
// RetryConfig.Resolve.
func (c BreakerConfig) Resolve(given Given) (BreakerConfig, error) {
	return resolveConfig(c, c.resolved, c.Preset, BreakerPreset, given, BreakerConfig.withDefaults, func(b *BreakerConfig) { b.resolved = true })
}

// resolveConfig is the one expansion rule: the named preset (if any) as
// the base, then every given key of c over it, then defaults for what is
// still zero, then the given keys again so that an explicit zero survives
// the defaults. A config already resolved is returned as it is.
func resolveConfig[T any](c T, resolved bool, preset string, lookup func(string) (T, error), given Given, defaults func(T) T, mark func(*T)) (T, error) {
	if resolved {
		return c, nil
	}
	var out T
	if preset != "" {
		p, err := lookup(preset)
		if err != nil {
			return c, err
		}
		out = p
	}
	written := nonZeroKeys(reflect.ValueOf(c))
	if given != nil {
		nonZero := written
		written = func(key string) bool { return nonZero(key) || given(key) }
	}
	overlay(reflect.ValueOf(&out).Elem(), reflect.ValueOf(c), written)
	out = defaults(out)
	overlay(reflect.ValueOf(&out).Elem(), reflect.ValueOf(c), written)
	mark(&out)
	return out, nil
}

// overlay copies each field of src whose key is given into dst; keys are
// the fields' yaml names, joined by dots in nested configs. The preset's
// name is always copied: it records where the values came from.
func overlay(dst, src reflect.Value, given Given) {
	from := make(map[string]reflect.Value)
	leaves(src, "", func(key string, f reflect.Value) { from[key] = f })
	leaves(dst, "", func(key string, f reflect.Value) {
		if key == "preset" || given(key) {
			f.Set(from[key])
		}
	})
}

// nonZeroKeys is the Given of a Go caller: the keys of c's non-zero fields.
func nonZeroKeys(c reflect.Value) Given {
	set := make(map[string]bool)
	leaves(c, "", func(key string, f reflect.Value) {
		set[key] = !f.IsZero() && !(f.Kind() == reflect.Slice && f.Len() == 0)
	})
	return func(key string) bool { return set[key] }
}

// leaves calls fn with the key and value of every exported field of the
// config v, descending into nested configs (a retry's backoff).
func leaves(v reflect.Value, prefix string, fn func(key string, f reflect.Value)) {
	t := v.Type()
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
		key := prefix + name
		if sf.Type.Kind() == reflect.Struct && sf.Type != durationType {
			leaves(v.Field(i), key+".", fn)
			continue
		}
		fn(key, v.Field(i))
	}
}

var durationType = reflect.TypeFor[time.Duration]()
