package topology

import (
	"fmt"
	"time"

	"github.com/stormsim/stormsim/policies"
)

// This file holds the defaults a decoded scenario gets before validation
// (validate.go) checks it: every documented default (docs/scenario.md),
// the committing service's mark, and the bounds they imply.

// Defaults applied after decoding; docs/scenario.md lists each one.
const (
	DefaultSeed           = 1
	DefaultInterval       = time.Second
	DefaultArrival        = "poisson"
	DefaultWriteMethod    = "POST"
	DefaultErrorClass     = "error"
	DefaultDownstream     = "propagate"
	DefaultMaxPushback    = 30 * time.Second
	DefaultRetention      = 24 * time.Hour
	DefaultLease          = 10 * time.Second
	DefaultInProgressWait = 100 * time.Millisecond
	DefaultMaxInflight    = 1_000_000
	DefaultMaxEvents      = 2_000_000_000
	DefaultMaxEventRate   = 20_000_000
)

// applyDefaults fills every documented default. A key given explicitly as
// 0 where 0 is meaningless (interval, max_attempts, fanout) is left for
// validation to reject rather than silently defaulted.
func (v *validator) applyDefaults() {
	sc := v.sc
	if sc.Seed == 0 {
		sc.Seed = DefaultSeed
	}
	if sc.Interval == 0 && !v.given("interval") {
		sc.Interval = DefaultInterval
	}
	if sc.Workload.Arrival == "" {
		sc.Workload.Arrival = DefaultArrival
	}
	if sc.Workload.WriteMethod == "" {
		sc.Workload.WriteMethod = DefaultWriteMethod
	}
	v.callDefaults(&sc.Workload.Client, "workload.client")
	for i := range sc.Services {
		s := &sc.Services[i]
		p := fmt.Sprintf("services[%d]", i)
		if s.ErrorClass == "" {
			s.ErrorClass = DefaultErrorClass
		}
		if s.DownstreamFailure == "" {
			s.DownstreamFailure = DefaultDownstream
		}
		if s.Idempotency != nil {
			idempotencyDefaults(s.Idempotency)
		}
		for j := range s.Calls {
			v.callDefaults(&s.Calls[j], fmt.Sprintf("%s.calls[%d]", p, j))
			if pb := s.Calls[j].Publish; pb != nil {
				v.publishDefaults(pb, fmt.Sprintf("%s.calls[%d]", p, j))
			}
		}
		if s.Consumes != nil {
			v.consumeDefaults(s.Consumes, p)
		}
	}
	v.convergeDefaults()
	// An omitted limit takes its default; one written as 0 is an error
	// (limits), not a silent default.
	if sc.Limits.MaxInflight == 0 && !v.given("limits.max_inflight") {
		sc.Limits.MaxInflight = DefaultMaxInflight
	}
	if sc.Limits.MaxEventRate == 0 && !v.given("limits.max_event_rate") {
		sc.Limits.MaxEventRate = DefaultMaxEventRate
	}
	if sc.Limits.MaxEvents == 0 && !v.given("limits.max_events") {
		sc.Limits.MaxEvents = DefaultMaxEvents
	}
	if sc.Limits.MaxDrain == 0 && !v.given("limits.max_drain") {
		sc.Limits.MaxDrain = DefaultMaxDrain
	}
}

// callDefaults resolves the policies of a call: presets expanded and
// defaults applied, once, with every key the file gives winning (zero
// included), by the policies' own Resolve.
func (v *validator) callDefaults(c *Call, path string) {
	v.pasteConfigs(c, path)
	c.Retry = resolved(v, path+".retry", c.Retry, policies.RetryConfig.Resolve)
	v.proxyDefaults(c, path)
	if c.Budget != nil {
		*c.Budget = resolved(v, path+".budget", *c.Budget, policies.BudgetConfig.Resolve)
	}
	if c.Breaker != nil {
		*c.Breaker = resolved(v, path+".breaker", *c.Breaker, policies.BreakerConfig.Resolve)
	}
	if c.Fanout == 0 && !v.given(path+".fanout") && len(c.Parallel) == 0 {
		c.Fanout = 1
	}
	if c.MaxPushback == 0 {
		c.MaxPushback = DefaultMaxPushback
	}
	if od := c.OutlierDetection; od != nil {
		outlierDefaults(od, func(key string) bool { return v.given(path + ".outlier_detection." + key) })
	}
	for i := range c.Parallel {
		v.callDefaults(&c.Parallel[i], fmt.Sprintf("%s.parallel[%d]", path, i))
	}
}

// resolved resolves the policy config at path with the keys the file gave;
// a problem (an unknown preset) is reported at its field and the config is
// left as written, its block marked so that it is not judged again.
func resolved[T any](v *validator, path string, c T, resolve func(T, policies.Given) (T, error)) T {
	if v.brokenUnder(path) {
		return c
	}
	r, err := resolve(c, func(key string) bool { return v.given(path + "." + key) })
	if err != nil {
		v.policyProblem(path, err)
		v.broken[path] = true
		return c
	}
	return r
}

func idempotencyDefaults(id *Idempotency) {
	if id.Retention == 0 {
		id.Retention = DefaultRetention
	}
	if id.Lease == 0 {
		id.Lease = DefaultLease
	}
	if id.InProgressRetryAfter == 0 {
		id.InProgressRetryAfter = DefaultInProgressWait
	}
}

// defaultCommits marks the committing service chosen by Committer and
// gives it an idempotency store with default settings if it has none.
func (v *validator) defaultCommits() {
	i := v.sc.Committer()
	if i < 0 {
		return
	}
	s := &v.sc.Services[i]
	s.Commits = true
	if s.Idempotency == nil {
		s.Idempotency = &Idempotency{}
		idempotencyDefaults(s.Idempotency)
	}
}

// Committer returns the index of the service that executes writes' side
// effects, or -1 when the entry names no service. This is the one rule of
// the simulator and serve alike: the service marked commits: true, else the
// service reached from the entry by following, from each service, its first
// call (the first member of a parallel group) until a service that calls
// nothing. For gw -> [a, b] that is a: the first path is the one a request
// always takes. Load marks the service it finds, so a loaded scenario always
// answers with the marked one.
func (sc *Scenario) Committer() int {
	for i := range sc.Services {
		if sc.Services[i].Commits {
			return i
		}
	}
	idx := func(name string) int {
		for i := range sc.Services {
			if sc.Services[i].Name == name {
				return i
			}
		}
		return -1
	}
	cur := idx(sc.Workload.Entry)
	seen := map[int]bool{}
	for cur >= 0 && !seen[cur] && len(sc.Services[cur].Calls) > 0 {
		seen[cur] = true
		c := sc.Services[cur].Calls[0]
		for c.To == "" && len(c.Parallel) > 0 {
			c = c.Parallel[0]
		}
		next := idx(c.To)
		if next < 0 || next == cur {
			break
		}
		cur = next
	}
	return cur
}

// Envoy's outlier detection defaults, and the bounds on replicas and
// client instances (each costs the simulator a record of its own).
const (
	DefaultConsecutiveFailures = 5
	DefaultOutlierInterval     = 10 * time.Second
	DefaultBaseEjectionTime    = 30 * time.Second
	DefaultMaxEjectionTime     = 300 * time.Second
	DefaultMaxEjectionPercent  = 10
	MaxReplicas                = 10_000
	MaxInstances               = 100_000
)

// outlierDefaults fills the keys of od the file did not give.
func outlierDefaults(od *OutlierDetection, given func(string) bool) {
	if od.ConsecutiveFailures == 0 && !given("consecutive_failures") {
		od.ConsecutiveFailures = DefaultConsecutiveFailures
	}
	if od.Interval == 0 && !given("interval") {
		od.Interval = DefaultOutlierInterval
	}
	if od.BaseEjectionTime == 0 && !given("base_ejection_time") {
		od.BaseEjectionTime = DefaultBaseEjectionTime
	}
	if od.MaxEjectionTime == 0 && !given("max_ejection_time") {
		od.MaxEjectionTime = max(DefaultMaxEjectionTime, od.BaseEjectionTime)
	}
	if od.MaxEjectionPercent == 0 && !given("max_ejection_percent") {
		od.MaxEjectionPercent = DefaultMaxEjectionPercent
	}
}
