package policies

import (
	"fmt"
	"slices"
	"strings"
)

// EnumError reports a value that is not one of an enumerated key's names.
// The scenario loader places it at the value's line and may add a
// suggestion; Allowed lists every accepted name in documentation order.
type EnumError struct {
	// What names the key's meaning, e.g. "budget kind".
	What    string
	Got     string
	Allowed []string
}

// Error returns "unknown WHAT "GOT" (want A, B or C)".
func (e *EnumError) Error() string {
	return fmt.Sprintf("unknown %s %q (want %s)", e.What, e.Got, OrList(e.Allowed))
}

// OrList joins names as "a, b or c", the form every "want" of an error uses.
func OrList(names []string) string {
	if len(names) <= 1 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// ParseName sets *dst to the name text if it is one of allowed, and
// returns an *EnumError otherwise. The empty name is always accepted: it
// is the zero value, which means "the default" for every enumerated key.
// The enumerated types of this package and of the scenario use it as
// their UnmarshalText, so YAML and JSON decoders reject bad names with a
// message listing the good ones.
func ParseName[T ~string](what string, allowed []T, text []byte, dst *T) error {
	s := T(text)
	if s != "" && !slices.Contains(allowed, s) {
		return &EnumError{What: what, Got: string(s), Allowed: Names(allowed)}
	}
	*dst = s
	return nil
}

// Names returns enumerated names as plain strings, for messages.
func Names[T ~string](xs []T) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = string(x)
	}
	return out
}

// JitterName names a backoff jitter in a config: none, full, equal,
// decorrelated or proportional (see Jitter).
type JitterName string

// UnmarshalText accepts the names of jitterNames.
func (j *JitterName) UnmarshalText(text []byte) error {
	return ParseName("jitter", jitterKinds, text, j)
}

var jitterKinds = func() []JitterName {
	out := make([]JitterName, len(jitterNames))
	for i, n := range jitterNames {
		out[i] = JitterName(n)
	}
	return out
}()

// RetryClass names an outcome class a retry policy may retry:
// unavailable, timeout, error, in_progress or not_sent.
type RetryClass string

var retryClasses = []RetryClass{"unavailable", "timeout", "error", "in_progress", "not_sent"}

// UnmarshalText accepts the retryable outcome classes.
func (c *RetryClass) UnmarshalText(text []byte) error {
	if len(text) == 0 { // a list entry must name a class
		return &EnumError{What: "outcome class", Got: "", Allowed: Names(retryClasses)}
	}
	return ParseName("outcome class", retryClasses, text, c)
}

// BudgetKind is ratio, token_bucket, aws_quota or concurrency.
type BudgetKind string

// UnmarshalText accepts the budget kinds.
func (k *BudgetKind) UnmarshalText(text []byte) error {
	return ParseName("budget kind", []BudgetKind{BudgetRatio, BudgetTokenBucket, BudgetAWSQuota, BudgetConcurrency}, text, k)
}

// BudgetScope is edge (the default) or service.
type BudgetScope string

// Budget scopes.
const (
	ScopeEdge    = "edge"
	ScopeService = "service"
)

// UnmarshalText accepts the budget scopes.
func (s *BudgetScope) UnmarshalText(text []byte) error {
	return ParseName("budget scope", []BudgetScope{ScopeEdge, ScopeService}, text, s)
}

// BreakerKind is consecutive, rate or hystrix.
type BreakerKind string

// UnmarshalText accepts the breaker kinds.
func (k *BreakerKind) UnmarshalText(text []byte) error {
	return ParseName("breaker kind", []BreakerKind{BreakerConsecutive, BreakerRate, BreakerHystrix}, text, k)
}

// WindowType is a rate breaker's window: count or time.
type WindowType string

// UnmarshalText accepts the window types.
func (w *WindowType) UnmarshalText(text []byte) error {
	return ParseName("window type", []WindowType{WindowCount, WindowTime}, text, w)
}

// Discipline orders a service's queue: fifo, lifo or adaptive_lifo.
type Discipline string

// UnmarshalText accepts the queue disciplines.
func (d *Discipline) UnmarshalText(text []byte) error {
	return ParseName("queue discipline", []Discipline{FIFO, LIFO, AdaptiveLIFO}, text, d)
}
