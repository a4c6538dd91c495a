package policies

import (
	"fmt"
	"slices"
	"sort"
	"time"
)

// Presets name the policies of real systems. Each returns a fully filled
// config; docs/policies.md lists every value in a table that a test checks
// against these functions, with the source of each and what the preset
// cannot express.

var retryPresets = map[string]RetryConfig{
	// gRPC A6 example policy; backoff jitter as revised in 2024 (±20 %).
	"grpc": {MaxAttempts: 4, On: []string{"unavailable"},
		Backoff: BackoffConfig{Initial: 100 * time.Millisecond, Multiplier: 2, Max: time.Second, Jitter: "proportional", Spread: 0.2}},
	// botocore standard mode before 2026: U(0,1)·min(1s·2^i, 20s), i = 0 at the first retry.
	"aws-standard": {MaxAttempts: 3, On: []string{"unavailable", "timeout", "error"},
		Backoff: BackoffConfig{Initial: time.Second, Multiplier: 2, Max: 20 * time.Second, Jitter: "full"}},
	// The 2026 behaviour for transient errors (50 ms base).
	"aws-standard-2026": {MaxAttempts: 3, On: []string{"unavailable", "timeout", "error"},
		Backoff: BackoffConfig{Initial: 50 * time.Millisecond, Multiplier: 2, Max: 20 * time.Second, Jitter: "full"}},
	// Envoy route retry policy: num_retries 1, retry_on 5xx, U[0, min(25ms·2^(n−1), 250ms)).
	"envoy": {MaxAttempts: 2, On: []string{"unavailable", "timeout", "error"},
		Backoff: BackoffConfig{Initial: 25 * time.Millisecond, Multiplier: 2, Max: 250 * time.Millisecond, Jitter: "full"}},
	// Finagle requeues: only failures that never reached the server, retried
	// at once (Backoff.constant(0)), bounded by the RetryBudget and per request
	// by ⌈0.2 × budget balance⌉, which is 20 retries at an idle default budget.
	"finagle": {MaxAttempts: 21, On: []string{"unavailable"},
		Backoff: BackoffConfig{Multiplier: 2}},
	// Google SRE book: at most 3 attempts with randomized exponential backoff;
	// the book gives no delays, the 50 ms / 1 s values are stormsim's.
	"sre": {MaxAttempts: 3, On: []string{"unavailable", "timeout"},
		Backoff: BackoffConfig{Initial: 50 * time.Millisecond, Multiplier: 2, Max: time.Second, Jitter: "full"}},
}

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
	"hystrix": {Kind: BreakerRate, OpenFor: 5 * time.Second, HalfOpenCalls: 1, WindowType: WindowTime,
		WindowSize: 10, MinCalls: 20, FailureRate: 50, SlowCallRate: 100, SlowCallDuration: 60 * time.Second},
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
// aws-standard, aws-standard-2026, envoy, finagle or sre.
func RetryPreset(name string) (RetryConfig, error) {
	c, ok := retryPresets[name]
	if !ok {
		return RetryConfig{}, fmt.Errorf("retry.preset: unknown preset %q (want one of %v)", name, RetryPresetNames())
	}
	c.On = slices.Clone(c.On)
	return c, nil
}

// BudgetPreset returns the retry budget of a named system: finagle, sre,
// grpc, aws, aws-2026 or envoy.
func BudgetPreset(name string) (BudgetConfig, error) {
	c, ok := budgetPresets[name]
	if !ok {
		return BudgetConfig{}, fmt.Errorf("budget.preset: unknown preset %q (want one of %v)", name, BudgetPresetNames())
	}
	return c, nil
}

// BreakerPreset returns the circuit breaker of a named library with its
// defaults: resilience4j, gobreaker or hystrix.
func BreakerPreset(name string) (BreakerConfig, error) {
	c, ok := breakerPresets[name]
	if !ok {
		return BreakerConfig{}, fmt.Errorf("breaker.preset: unknown preset %q (want one of %v)", name, BreakerPresetNames())
	}
	return c, nil
}

// WithPreset returns the config with its Preset expanded: the preset's
// values, overridden by every non-zero field of c. Without a preset it
// returns c unchanged.
func (c RetryConfig) WithPreset() (RetryConfig, error) {
	if c.Preset == "" {
		return c, nil
	}
	p, err := RetryPreset(c.Preset)
	if err != nil {
		return c, err
	}
	p.Preset = c.Preset
	if c.MaxAttempts != 0 {
		p.MaxAttempts = c.MaxAttempts
	}
	if len(c.On) > 0 {
		p.On = slices.Clone(c.On)
	}
	b := &p.Backoff
	if c.Backoff.Initial != 0 {
		b.Initial = c.Backoff.Initial
	}
	if c.Backoff.Multiplier != 0 {
		b.Multiplier = c.Backoff.Multiplier
	}
	if c.Backoff.Max != 0 {
		b.Max = c.Backoff.Max
	}
	if c.Backoff.Jitter != "" {
		b.Jitter = c.Backoff.Jitter
	}
	if c.Backoff.Spread != 0 {
		b.Spread = c.Backoff.Spread
	}
	return p, nil
}

// WithPreset returns the config with its Preset expanded: the preset's
// values, overridden by every non-zero field of c.
func (c BudgetConfig) WithPreset() (BudgetConfig, error) {
	if c.Preset == "" {
		return c, nil
	}
	p, err := BudgetPreset(c.Preset)
	if err != nil {
		return c, err
	}
	p.Preset = c.Preset
	if c.Kind != "" {
		p.Kind = c.Kind
	}
	if c.Scope != "" {
		p.Scope = c.Scope
	}
	setF := func(dst *float64, v float64) {
		if v != 0 {
			*dst = v
		}
	}
	setI := func(dst *int, v int) {
		if v != 0 {
			*dst = v
		}
	}
	setF(&p.Ratio, c.Ratio)
	setF(&p.MinPerSec, c.MinPerSec)
	if c.Window != 0 {
		p.Window = c.Window
	}
	setF(&p.MaxTokens, c.MaxTokens)
	setF(&p.TokenRatio, c.TokenRatio)
	setI(&p.Capacity, c.Capacity)
	setI(&p.RetryCost, c.RetryCost)
	setI(&p.TimeoutCost, c.TimeoutCost)
	setI(&p.ThrottleCost, c.ThrottleCost)
	setI(&p.NoRetryIncrement, c.NoRetryIncrement)
	setF(&p.Percent, c.Percent)
	setI(&p.MinConcurrency, c.MinConcurrency)
	return p, nil
}

// WithPreset returns the config with its Preset expanded: the preset's
// values, overridden by every non-zero field of c.
func (c BreakerConfig) WithPreset() (BreakerConfig, error) {
	if c.Preset == "" {
		return c, nil
	}
	p, err := BreakerPreset(c.Preset)
	if err != nil {
		return c, err
	}
	p.Preset = c.Preset
	setS := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	setI := func(dst *int, v int) {
		if v != 0 {
			*dst = v
		}
	}
	setD := func(dst *time.Duration, v time.Duration) {
		if v != 0 {
			*dst = v
		}
	}
	setF := func(dst *float64, v float64) {
		if v != 0 {
			*dst = v
		}
	}
	setS(&p.Kind, c.Kind)
	setI(&p.Failures, c.Failures)
	setD(&p.OpenFor, c.OpenFor)
	setI(&p.HalfOpenCalls, c.HalfOpenCalls)
	setS(&p.WindowType, c.WindowType)
	setI(&p.WindowSize, c.WindowSize)
	setI(&p.MinCalls, c.MinCalls)
	setF(&p.FailureRate, c.FailureRate)
	setF(&p.SlowCallRate, c.SlowCallRate)
	setD(&p.SlowCallDuration, c.SlowCallDuration)
	return p, nil
}
