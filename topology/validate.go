package topology

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/stormsim/stormsim/policies"
)

// Defaults applied after decoding; docs/scenario.md lists each one.
const (
	DefaultSeed           = 1
	DefaultInterval       = time.Second
	DefaultArrival        = "poisson"
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

// The names each enumerated key accepts.
var (
	arrivals    = []string{"poisson", "constant", "closed"}
	distKinds   = []string{"constant", "exponential", "uniform", "normal", "lognormal", "mixture", "empirical"}
	errorKinds  = []string{"error", "unavailable"}
	downstreams = []string{"propagate", "unavailable", "error", "timeout"}
	budgetKinds = []string{"ratio", "token_bucket", "aws_quota", "concurrency"}
	scopes      = []string{"edge", "service"}
	breakers    = []string{"consecutive", "rate"}
	windowTypes = []string{"count", "time"}
	disciplines = []string{"fifo", "lifo", "adaptive_lifo"}
	units       = map[string]time.Duration{"ns": time.Nanosecond, "us": time.Microsecond, "µs": time.Microsecond, "ms": time.Millisecond, "s": time.Second}
)

// validator applies defaults to a decoded scenario and collects every
// problem with it. Paths that already failed to decode are not judged again.
type validator struct {
	d      *decoder
	sc     *Scenario
	broken map[string]bool
	probs  Problems
}

func (v *validator) add(path, format string, args ...any) {
	for q := path; ; q = q[:strings.LastIndexAny(q, ".[")] {
		if v.broken[q] {
			return // already reported as undecodable
		}
		if !strings.ContainsAny(q, ".[") {
			break
		}
	}
	p := v.d.lookup(path)
	v.probs = append(v.probs, Problem{File: p.file, Line: p.line, Path: path, Msg: fmt.Sprintf(format, args...)})
}

// given reports whether path was written in the file or by an override.
func (v *validator) given(path string) bool {
	return v.d.given[path]
}

func (v *validator) oneOf(path, what, got string, allowed []string) bool {
	if slices.Contains(allowed, got) {
		return true
	}
	msg := fmt.Sprintf("unknown %s %q (want %s)", what, got, orList(allowed))
	if s := suggest(got, allowed); s != "" {
		msg = fmt.Sprintf("unknown %s %q (did you mean %s?)", what, got, s)
	}
	v.add(path, "%s", msg)
	return false
}

func orList(xs []string) string {
	if len(xs) == 1 {
		return xs[0]
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " or " + xs[len(xs)-1]
}

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
		}
	}
	if sc.Limits.MaxInflight == 0 {
		sc.Limits.MaxInflight = DefaultMaxInflight
	}
	if sc.Limits.MaxEventRate == 0 {
		sc.Limits.MaxEventRate = DefaultMaxEventRate
	}
	if sc.Limits.MaxEvents == 0 {
		sc.Limits.MaxEvents = DefaultMaxEvents
	}
}

func (v *validator) callDefaults(c *Call, path string) {
	if c.Retry.MaxAttempts == 0 && !v.given(path+".retry.max_attempts") {
		c.Retry.MaxAttempts = 1
	}
	if c.Fanout == 0 && !v.given(path+".fanout") && len(c.Parallel) == 0 {
		c.Fanout = 1
	}
	if c.MaxPushback == 0 {
		c.MaxPushback = DefaultMaxPushback
	}
	for i := range c.Parallel {
		v.callDefaults(&c.Parallel[i], fmt.Sprintf("%s.parallel[%d]", path, i))
	}
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

// defaultCommits marks the committing service when none says commits: true:
// the service reached from the entry by following, from each service, its
// first call (the first member of a parallel group) until a service that
// calls nothing. It runs only on a valid, acyclic scenario. The committing
// service gets an idempotency store with default settings if it has none.
func (v *validator) defaultCommits() {
	sc := v.sc
	for i := range sc.Services {
		if sc.Services[i].Commits {
			if sc.Services[i].Idempotency == nil {
				sc.Services[i].Idempotency = &Idempotency{}
				idempotencyDefaults(sc.Services[i].Idempotency)
			}
			return
		}
	}
	s := sc.Service(sc.Workload.Entry)
	for s != nil && len(s.Calls) > 0 {
		next := sc.Service(firstCallee(s.Calls[0]))
		if next == nil || next == s {
			break
		}
		s = next
	}
	if s != nil {
		s.Commits = true
		if s.Idempotency == nil {
			s.Idempotency = &Idempotency{}
			idempotencyDefaults(s.Idempotency)
		}
	}
}

func firstCallee(c Call) string {
	for c.To == "" && len(c.Parallel) > 0 {
		c = c.Parallel[0]
	}
	return c.To
}

func (v *validator) validate() {
	sc := v.sc
	if sc.Duration <= 0 {
		if v.given("duration") {
			v.add("duration", "must be > 0, got %v", sc.Duration)
		} else {
			v.add("duration", "required (the arrival window, e.g. 60s)")
		}
	}
	if sc.Warmup < 0 {
		v.add("warmup", "must be ≥ 0, got %v", sc.Warmup)
	} else if sc.Duration > 0 && sc.Warmup >= sc.Duration {
		v.add("warmup", "must be shorter than duration (%v), got %v", sc.Duration, sc.Warmup)
	}
	if sc.Interval <= 0 {
		v.add("interval", "must be > 0, got %v", sc.Interval)
	}
	v.services()
	v.workload()
	v.faults()
	v.limits()
	v.cycles()
}

func (v *validator) workload() {
	w, p := &v.sc.Workload, "workload"
	switch {
	case w.Entry == "":
		v.add(p+".entry", "required (the service the external client calls)")
	case v.sc.Service(w.Entry) == nil:
		v.unknownService(p+".entry", w.Entry)
	}
	closed := w.Arrival == "closed"
	v.oneOf(p+".arrival", "arrival", w.Arrival, arrivals)
	switch {
	case w.Rate < 0:
		v.add(p+".rate", "must be > 0, got %v", w.Rate)
	case closed && w.Clients <= 0:
		v.add(p+".clients", "must be > 0 for closed arrival, got %d", w.Clients)
	case !closed && w.Rate == 0 && len(w.Schedule) == 0:
		v.add(p+".rate", "must be > 0 (or give a schedule, or arrival: closed with clients), got %v", w.Rate)
	}
	if !closed && w.Clients != 0 {
		v.add(p+".clients", "only applies to arrival: closed")
	}
	v.nonNegative(p+".think_time", w.ThinkTime)
	v.nonNegative(p+".deadline", w.Deadline)
	v.probability(p+".write_fraction", w.WriteFraction)
	for i, st := range w.Schedule {
		sp := fmt.Sprintf("%s.schedule[%d]", p, i)
		if st.At < 0 {
			v.add(sp+".at", "must be ≥ 0, got %v", st.At)
		}
		if i > 0 && st.At <= w.Schedule[i-1].At {
			v.add(sp+".at", "steps must be in increasing time: %v is not after %v", st.At, w.Schedule[i-1].At)
		}
		if st.Rate < 0 {
			v.add(sp+".rate", "must be ≥ 0, got %v", st.Rate)
		}
	}
	if w.Client.To != "" && w.Client.To != w.Entry {
		v.add(p+".client.to", "the client always calls workload.entry (%q); remove to", w.Entry)
	}
	if len(w.Client.Parallel) > 0 {
		v.add(p+".client.parallel", "the client makes a single call to the entry")
	}
	v.callPolicies(&w.Client, p+".client", 1)
}

func (v *validator) unknownService(path, name string) {
	names := make([]string, len(v.sc.Services))
	for i, s := range v.sc.Services {
		names[i] = s.Name
	}
	if s := suggest(name, names); s != "" {
		v.add(path, "unknown service %q (did you mean %s?)", name, s)
		return
	}
	v.add(path, "unknown service %q", name)
}

func (v *validator) services() {
	if len(v.sc.Services) == 0 {
		v.add("services", "required: at least one service")
	}
	first := make(map[string]int)
	for i := range v.sc.Services {
		s := &v.sc.Services[i]
		p := fmt.Sprintf("services[%d]", i)
		if s.Name == "" {
			v.add(p+".name", "required")
		} else if j, dup := first[s.Name]; dup {
			v.add(p+".name", "duplicate service name %q (also services[%d])", s.Name, j)
		} else {
			first[s.Name] = i
		}
		if s.Workers <= 0 {
			v.add(p+".workers", "must be > 0, got %d", s.Workers)
		}
		if s.Queue != nil && *s.Queue < 0 {
			v.add(p+".queue", "must be ≥ 0 (omit it for an unbounded queue), got %d", *s.Queue)
		}
		v.dist(&s.ServiceTime, p+".service_time")
		v.nonNegative(p+".slowdown_per_inflight", s.SlowdownPerInflight)
		v.probability(p+".error_rate", s.ErrorRate)
		v.oneOf(p+".error_class", "error class", s.ErrorClass, errorKinds)
		v.oneOf(p+".downstream_failure", "downstream failure", s.DownstreamFailure, downstreams)
		if id := s.Idempotency; id != nil {
			v.positive(p+".idempotency.retention", id.Retention)
			v.positive(p+".idempotency.lease", id.Lease)
			v.positive(p+".idempotency.in_progress_retry_after", id.InProgressRetryAfter)
			// A lease outliving the record would let a stale owner commit
			// after its key was forgotten.
			if id.Lease > 0 && id.Retention > 0 && id.Lease > id.Retention {
				v.add(p+".idempotency.lease", "must be ≤ retention (%v), got %v", id.Retention, id.Lease)
			}
		}
		v.overload(&s.Overload, p+".overload")
		for j := range s.Calls {
			v.call(&s.Calls[j], fmt.Sprintf("%s.calls[%d]", p, j))
		}
	}
}

func (v *validator) overload(o *policies.OverloadConfig, p string) {
	ok := true
	if o.ConcurrencyLimit < 0 {
		v.add(p+".concurrency_limit", "must be ≥ 0, got %d", o.ConcurrencyLimit)
		ok = false
	}
	if o.Discipline != "" {
		ok = v.oneOf(p+".discipline", "queue discipline", o.Discipline, disciplines) && ok
	}
	ok = v.nonNegative(p+".max_queue_time", o.MaxQueueTime) && ok
	if c := o.CoDel; c != nil {
		ok = v.nonNegative(p+".codel.target", c.Target) && ok
		ok = v.nonNegative(p+".codel.interval", c.Interval) && ok
	}
	if pb := o.Pushback; pb != nil {
		ok = v.nonNegative(p+".pushback.retry_after", pb.RetryAfter) && ok
		ok = v.nonNegative(p+".pushback.per_queued", pb.PerQueued) && ok
		ok = v.nonNegative(p+".pushback.max", pb.Max) && ok
	}
	if ok {
		v.policyValidate(p, o)
	}
}

// call validates a downstream call or a parallel group.
func (v *validator) call(c *Call, p string) {
	members := c.Fanout
	if len(c.Parallel) > 0 {
		if c.To != "" {
			v.add(p+".to", "a call has either to or parallel, not both")
		}
		if c.Fanout != 0 && c.Fanout != 1 {
			v.add(p+".fanout", "does not apply to a parallel group (repeat its members instead)")
		}
		members = len(c.Parallel)
		for i := range c.Parallel {
			v.call(&c.Parallel[i], fmt.Sprintf("%s.parallel[%d]", p, i))
		}
	} else {
		switch {
		case c.To == "":
			v.add(p+".to", "required (the callee's name, or a parallel group)")
		case v.sc.Service(c.To) == nil:
			v.unknownService(p+".to", c.To)
		}
		if c.Fanout < 1 {
			v.add(p+".fanout", "must be ≥ 1, got %d", c.Fanout)
		}
	}
	if c.WaitFor < 0 {
		v.add(p+".wait_for", "must be ≥ 0, got %d", c.WaitFor)
	} else if c.WaitFor > members && members >= 1 {
		v.add(p+".wait_for", "must be ≤ the %d calls of the group, got %d", members, c.WaitFor)
	}
	v.callPolicies(c, p, members)
}

// callPolicies validates the policies of one call edge.
func (v *validator) callPolicies(c *Call, p string, members int) {
	v.nonNegative(p+".timeout", c.Timeout)
	v.nonNegative(p+".max_pushback", c.MaxPushback)
	if c.Network != nil {
		v.dist(c.Network, p+".network")
	}
	v.retry(&c.Retry, p+".retry")
	if b := c.Budget; b != nil {
		bp := p + ".budget"
		ok := true
		if b.Kind != "" {
			ok = v.oneOf(bp+".kind", "budget kind", b.Kind, budgetKinds)
		}
		if b.Scope != "" {
			ok = v.oneOf(bp+".scope", "budget scope", b.Scope, scopes) && ok
		}
		if ok {
			v.policyValidate(bp, b)
		}
	}
	if b := c.Breaker; b != nil {
		bp := p + ".breaker"
		ok := true
		if b.Kind != "" {
			ok = v.oneOf(bp+".kind", "breaker kind", b.Kind, breakers)
		}
		if b.WindowType != "" {
			ok = v.oneOf(bp+".window_type", "window type", b.WindowType, windowTypes) && ok
		}
		if ok {
			v.policyValidate(bp, b)
		}
	}
	if h := c.Hedge; h != nil {
		hp := p + ".hedge"
		ok := v.probability(hp+".percentile", h.Percentile)
		ok = v.nonNegative(hp+".delay", h.Delay) && ok
		if h.MaxAttempts < 0 {
			v.add(hp+".max_attempts", "must be ≥ 2 to hedge, got %d", h.MaxAttempts)
			ok = false
		}
		if ok {
			v.policyValidate(hp, h)
		}
	}
	if t := c.Throttle; t != nil {
		tp := p + ".throttle"
		ok := v.nonNegative(tp+".window", t.Window)
		if t.K < 0 {
			v.add(tp+".k", "must be ≥ 0, got %v", t.K)
			ok = false
		}
		if ok {
			v.policyValidate(tp, t)
		}
	}
}

func (v *validator) retry(r *policies.RetryConfig, p string) {
	ok := true
	if r.MaxAttempts < 1 {
		v.add(p+".max_attempts", "must be ≥ 1 (1 means no retry), got %d", r.MaxAttempts)
		ok = false
	}
	for i, o := range r.On {
		if out, err := policies.ParseOutcome(o); err != nil || out == policies.OK {
			classes := []string{"unavailable", "timeout", "error", "in_progress"}
			if s := suggest(o, classes); s != "" {
				v.add(fmt.Sprintf("%s.on[%d]", p, i), "unknown outcome class %q (did you mean %s?)", o, s)
			} else {
				v.add(fmt.Sprintf("%s.on[%d]", p, i), "unknown outcome class %q (want %s)", o, orList(classes))
			}
			ok = false
		}
	}
	if _, err := policies.ParseJitter(r.Backoff.Jitter); err != nil {
		v.add(p+".backoff.jitter", "%v", err)
		ok = false
	}
	if ok {
		v.policyValidate(p, r)
	}
}

// policyValidate reports the error of a policy config's own Validate
// method, where the config has one.
func (v *validator) policyValidate(p string, cfg any) {
	if val, ok := cfg.(interface{ Validate() error }); ok {
		if err := val.Validate(); err != nil {
			path, msg := fieldError(p, err)
			v.add(path, "%s", msg)
		}
	}
}

// fieldError turns a policy error such as "retry.backoff.max: must be ≥ 0"
// reported for the block at path "services[0].calls[1].retry" into the
// field's own path and the bare message, so the position is the field's line.
func fieldError(path string, err error) (string, string) {
	msg := err.Error()
	block := path[strings.LastIndexAny(path, ".]")+1:]
	rest, ok := strings.CutPrefix(msg, block+".")
	if !ok || block == "" {
		return path, msg
	}
	field, m, ok := strings.Cut(rest, ": ")
	if !ok || strings.ContainsAny(field, " \t") {
		return path, msg
	}
	return path + "." + field, m
}

func (v *validator) faults() {
	for i := range v.sc.Faults {
		f := &v.sc.Faults[i]
		p := fmt.Sprintf("faults[%d]", i)
		switch {
		case f.Service == "":
			v.add(p+".service", "required")
		case v.sc.Service(f.Service) == nil:
			v.unknownService(p+".service", f.Service)
		}
		v.nonNegative(p+".at", f.At)
		v.positive(p+".for", f.For)
		if f.Capacity != nil && *f.Capacity < 0 {
			v.add(p+".capacity", "must be ≥ 0 (a multiple of the workers), got %v", *f.Capacity)
		}
		v.nonNegative(p+".latency_add", f.LatencyAdd)
		if f.ErrorRate != nil {
			v.probability(p+".error_rate", *f.ErrorRate)
		}
		v.probability(p+".drop_response", f.DropResponse)
	}
}

func (v *validator) limits() {
	if v.sc.Limits.MaxInflight < 0 {
		v.add("limits.max_inflight", "must be > 0, got %d", v.sc.Limits.MaxInflight)
	}
	if !(v.sc.Limits.MaxEventRate >= 0) {
		v.add("limits.max_event_rate", "must be > 0, got %v", v.sc.Limits.MaxEventRate)
	}
	if v.sc.Limits.MaxEvents < 0 {
		v.add("limits.max_events", "must be > 0, got %d", v.sc.Limits.MaxEvents)
	}
}

// cycles reports each call cycle once, naming its services in call order.
func (v *validator) cycles() {
	sc := v.sc
	const (
		white = iota
		grey
		black
	)
	color := make(map[string]int)
	var stack []string
	var visit func(name string)
	visit = func(name string) {
		color[name] = grey
		stack = append(stack, name)
		si := slices.IndexFunc(sc.Services, func(s Service) bool { return s.Name == name })
		forEachCallee(sc.Services[si].Calls, fmt.Sprintf("services[%d].calls", si), func(to, path string) {
			if sc.Service(to) == nil {
				return
			}
			switch color[to] {
			case grey:
				start := slices.Index(stack, to)
				cycle := append(append([]string(nil), stack[start:]...), to)
				v.add(path, "call cycle: %s", strings.Join(cycle, " -> "))
			case white:
				visit(to)
			}
		})
		stack = stack[:len(stack)-1]
		color[name] = black
	}
	for _, s := range sc.Services {
		if s.Name != "" && color[s.Name] == white {
			visit(s.Name)
		}
	}
}

// forEachCallee calls fn with each callee named in calls (parallel groups
// included) and the path of its "to" key.
func forEachCallee(calls []Call, path string, fn func(to, path string)) {
	for i, c := range calls {
		p := fmt.Sprintf("%s[%d]", path, i)
		if c.To != "" {
			fn(c.To, p+".to")
		}
		forEachCallee(c.Parallel, p+".parallel", fn)
	}
}

func (v *validator) nonNegative(path string, d time.Duration) bool {
	if d < 0 {
		v.add(path, "must be ≥ 0, got %v", d)
		return false
	}
	return true
}

func (v *validator) positive(path string, d time.Duration) bool {
	if d <= 0 {
		v.add(path, "must be > 0, got %v", d)
		return false
	}
	return true
}

func (v *validator) probability(path string, x float64) bool {
	if x < 0 || x > 1 {
		v.add(path, "must be in [0, 1], got %v", x)
		return false
	}
	return true
}

// checkVariants checks that every variant's overrides parse and apply to
// the scenario; each variant is tried on its own copy of the tree.
func (v *validator) checkVariants(root *yaml.Node) {
	names := make(map[string]bool)
	for i, vr := range v.sc.Variants {
		p := fmt.Sprintf("variants[%d]", i)
		if vr.Name == "" {
			v.add(p+".name", "required")
		} else if names[vr.Name] {
			v.add(p+".name", "duplicate variant name %q", vr.Name)
		}
		names[vr.Name] = true
		tree := cloneNode(root)
		origin := make(map[*yaml.Node]string)
		for j, s := range vr.Set {
			if err := applySet(tree, s, origin); err != nil {
				v.add(fmt.Sprintf("%s.set[%d]", p, j), "--set %s: %v", s, err)
			}
		}
	}
}
