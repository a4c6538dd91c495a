package topology

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/stormsim/stormsim/policies"
)

// units are the time units an empirical sample file may be written in.
var units = map[TimeUnit]time.Duration{"ns": time.Nanosecond, "us": time.Microsecond, "µs": time.Microsecond, "ms": time.Millisecond, "s": time.Second}

// validator applies defaults to a decoded scenario and collects every
// problem with it. Paths that already failed to decode are not judged again.
type validator struct {
	d      *decoder
	sc     *Scenario
	broken map[string]bool
	probs  Problems
	more   int // problems past maxProblems, counted only
	// overridden: the scenario was parsed with --set overrides (a
	// variant's, or the user's)
	overridden bool
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
	if len(v.probs) >= maxProblems {
		v.more++
		return
	}
	p := v.d.lookup(path)
	v.probs = append(v.probs, Problem{File: p.file, Line: p.line, Path: path, Msg: fmt.Sprintf(format, args...)})
}

// given reports whether path was written in the file or by an override.
func (v *validator) given(path string) bool {
	return v.d.given[path]
}

// brokenUnder reports whether a path at or below prefix failed to decode:
// a policy block with such a field is not judged as a whole.
func (v *validator) brokenUnder(prefix string) bool {
	for p := range v.broken {
		if p == prefix || strings.HasPrefix(p, prefix+".") || strings.HasPrefix(p, prefix+"[") {
			return true
		}
	}
	return false
}

func (v *validator) validate() {
	sc := v.sc
	if v.given("name") && strings.TrimSpace(sc.Name) == "" {
		// A name given empty (--set name=) left every result unnamed.
		v.add("name", "must not be empty: it names the run in every result")
	}
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
	v.converge()
	v.limits()
	v.ranges()
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
	closed := w.Arrival == ArrivalClosed
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
	if !slices.Contains(writeMethods, w.WriteMethod) {
		v.add(p+".write_method", "must be one of %s, got %q", strings.Join(writeMethods, ", "), w.WriteMethod)
	}
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
	if w.Instances < 0 || (w.Instances == 0 && v.given(p+".instances")) {
		v.add(p+".instances", "must be ≥ 1, got %d", w.Instances)
	} else if w.Instances > MaxInstances {
		v.add(p+".instances", "must be ≤ %d, got %d", MaxInstances, w.Instances)
	}
	v.zones(w.Zones, p+".zones")
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
		if s.Replicas < 0 || (s.Replicas == 0 && v.given(p+".replicas")) {
			v.add(p+".replicas", "must be ≥ 1, got %d", s.Replicas)
		} else if s.Replicas > MaxReplicas {
			v.add(p+".replicas", "must be ≤ %d, got %d", MaxReplicas, s.Replicas)
		}
		v.zones(s.Zones, p+".zones")
		if s.Queue != nil && *s.Queue < 0 {
			v.add(p+".queue", "must be ≥ 0 (omit it for an unbounded queue), got %d", *s.Queue)
		}
		v.dist(&s.ServiceTime, p+".service_time")
		v.nonNegative(p+".slowdown_per_inflight", s.SlowdownPerInflight)
		v.probability(p+".error_rate", s.ErrorRate)
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
		v.overload(&s.Overload, p)
		for j := range s.Calls {
			v.call(&s.Calls[j], fmt.Sprintf("%s.calls[%d]", p, j))
		}
		if s.Consumes != nil {
			v.consume(s.Consumes, p)
		}
		v.serviceEffects(s, p)
	}
	v.topics()
	v.scenarioEffects()
}

// overload validates the overload protection of the service at sp.
func (v *validator) overload(o *policies.OverloadConfig, sp string) {
	p := sp + ".overload"
	ok := true
	if o.ConcurrencyLimit < 0 {
		v.add(p+".concurrency_limit", "must be ≥ 0, got %d", o.ConcurrencyLimit)
		ok = false
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
		v.policyValidate(sp, "overload", o)
	}
}

// call validates a downstream call or a parallel group.
func (v *validator) call(c *Call, p string) {
	if c.Publish != nil {
		v.publish(c, p)
		return
	}
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
	v.pool(c, p)
	if c.Network != nil {
		v.dist(c.Network, p+".network")
	}
	v.policyValidate(p, "retry", c.Retry)
	v.outlier(c.OutlierDetection, p+".outlier_detection")
	if c.CrossZoneNetwork != nil {
		v.dist(c.CrossZoneNetwork, p+".cross_zone_network")
	}
	if c.SendRate != nil {
		v.policyValidate(p, "send_rate", sendRateBlock{c.SendRate})
	}
	if b := c.Budget; b != nil {
		v.policyValidate(p, "budget", b)
	}
	if b := c.Breaker; b != nil {
		v.policyValidate(p, "breaker", b)
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
			v.policyValidate(p, "hedge", h)
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
			v.policyValidate(p, "throttle", t)
		}
	}
}

// policyValidate reports the error of the Validate method of the policy
// config held at holder under key block, unless a field of the block
// failed to decode (it was reported then).
func (v *validator) policyValidate(holder, block string, cfg interface{ Validate() error }) {
	if v.brokenUnder(holder + "." + block) {
		return
	}
	if err := cfg.Validate(); err != nil {
		v.policyProblem(holder, err)
	}
}

// policyProblem reports a policy error at the field it names: a
// *policies.FieldError's field is relative to holder; an enumerated name
// gets a suggestion when one is close.
func (v *validator) policyProblem(holder string, err error) {
	path := holder
	if fe, ok := errors.AsType[*policies.FieldError](err); ok {
		path, err = holder+"."+fe.Field, fe.Err
	}
	v.add(path, "%s", explain(err))
}

// explain is the message of a problem: an unknown enumerated name gets the
// closest allowed name as a suggestion, or the list of them.
func explain(err error) string {
	if e, ok := errors.AsType[*policies.EnumError](err); ok {
		if s := suggest(e.Got, e.Allowed); s != "" {
			return fmt.Sprintf("unknown %s %q (did you mean %s?)", e.What, e.Got, s)
		}
	}
	return err.Error()
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
		v.crashFaults(f, p)
		v.faultReplicas(f, p)
	}
}

// faultReplicas checks that a fault names at most one way of choosing
// replicas and only replicas the service has.
func (v *validator) faultReplicas(f *Fault, p string) {
	ways := 0
	for _, set := range []bool{f.Replica != nil, len(f.Replicas) > 0, f.ReplicaFraction != nil, f.Zone != ""} {
		if set {
			ways++
		}
	}
	if ways > 1 {
		v.add(p+".replica", "give one of replica, replicas, replica_fraction and zone")
		return
	}
	n := 1
	if s := v.sc.Service(f.Service); s != nil {
		n = s.ReplicaCount()
		if f.Zone != "" && !slices.Contains(s.Zones, f.Zone) {
			v.add(p+".zone", "%q is not a zone of %q (zones: %s)", f.Zone, f.Service, strings.Join(s.Zones, ", "))
		}
	}
	inRange := func(path string, r int) {
		if r < 0 || r >= n {
			v.add(path, "must be a replica of %q, 0 to %d, got %d", f.Service, n-1, r)
		}
	}
	if f.Replica != nil {
		inRange(p+".replica", *f.Replica)
	}
	for i, r := range f.Replicas {
		inRange(fmt.Sprintf("%s.replicas[%d]", p, i), r)
	}
	if x := f.ReplicaFraction; x != nil && (*x <= 0 || *x > 1) {
		v.add(p+".replica_fraction", "must be in (0, 1], got %v", *x)
	}
}

// zones checks a list of zone names: non-empty, each once.
func (v *validator) zones(zones []string, p string) {
	seen := map[string]bool{}
	for i, z := range zones {
		switch {
		case z == "":
			v.add(fmt.Sprintf("%s[%d]", p, i), "a zone needs a name")
		case seen[z]:
			v.add(fmt.Sprintf("%s[%d]", p, i), "zone %q listed twice", z)
		}
		seen[z] = true
	}
}

// outlier validates an edge's outlier detection (after its defaults).
func (v *validator) outlier(od *OutlierDetection, p string) {
	if od == nil {
		return
	}
	if od.ConsecutiveFailures < 1 {
		v.add(p+".consecutive_failures", "must be ≥ 1, got %d", od.ConsecutiveFailures)
	}
	v.positive(p+".interval", od.Interval)
	v.positive(p+".base_ejection_time", od.BaseEjectionTime)
	v.positive(p+".max_ejection_time", od.MaxEjectionTime)
	if od.MaxEjectionPercent < 0 || od.MaxEjectionPercent > 100 {
		v.add(p+".max_ejection_percent", "must be in [0, 100], got %v", od.MaxEjectionPercent)
	}
}

func (v *validator) limits() {
	if v.sc.Limits.MaxInflight <= 0 {
		v.add("limits.max_inflight", "must be > 0, got %d", v.sc.Limits.MaxInflight)
	}
	if !(v.sc.Limits.MaxEventRate > 0) {
		v.add("limits.max_event_rate", "must be > 0, got %v", v.sc.Limits.MaxEventRate)
	}
	if v.sc.Limits.MaxDrain <= 0 {
		v.add("limits.max_drain", "must be > 0, got %v", v.sc.Limits.MaxDrain)
	}
	if v.sc.Limits.MaxEvents <= 0 {
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
// the scenario. Each variant is applied to the tree and then undone (a
// journal of the nodes it changed): copying the whole tree per variant made
// validation quadratic in the number of variants.
func (v *validator) checkVariants(root *yaml.Node) {
	names := make(map[string]bool)
	var j journal
	// A variant's values are judged on the scenario as written (with
	// overrides, the tree may be another variant already), and only when
	// it is valid: its own problems would be reported again per variant.
	judge := !v.overridden && len(v.probs) == 0 && len(v.d.probs) == 0
	for i, vr := range v.sc.Variants {
		p := fmt.Sprintf("variants[%d]", i)
		if vr.Name == "" {
			v.add(p+".name", "required")
		} else if names[vr.Name] {
			v.add(p+".name", "duplicate variant name %q", vr.Name)
		}
		names[vr.Name] = true
		origin := make(map[*yaml.Node]string)
		applied := true
		for k, s := range vr.Set {
			if err := applySetJournaled(root, s, origin, &j); err != nil {
				v.add(fmt.Sprintf("%s.set[%d]", p, k), "--set %s: %v", s, err)
				applied = false
			}
		}
		if judge && applied && len(vr.Set) > 0 {
			// The values must be valid too, or validate says ok and
			// compare fails on the variant.
			for _, q := range v.judgeVariant(root, origin) {
				v.add(p+".set", "variant %s: %s", vr.Name, q.String())
			}
		}
		j.undo()
	}
}

// judgeVariant decodes and validates the tree as a variant's overrides
// left it, without its variants list (each variant is judged once, so
// the work stays linear in their number), and returns its problems.
func (v *validator) judgeVariant(root *yaml.Node, origin map[*yaml.Node]string) Problems {
	if root.Kind != yaml.MappingNode {
		return nil
	}
	content := root.Content
	kept := make([]*yaml.Node, 0, len(content))
	for i := 0; i+1 < len(content); i += 2 {
		if content[i].Value != "variants" {
			kept = append(kept, content[i], content[i+1])
		}
	}
	root.Content = kept
	defer func() { root.Content = content }()
	sc := &Scenario{File: v.sc.File}
	d := newDecoder(v.d.file, origin)
	d.decode(root, reflect.ValueOf(sc).Elem(), "", 0)
	vv := &validator{d: d, sc: sc, broken: make(map[string]bool)}
	for _, p := range d.probs {
		vv.broken[p.Path] = true
	}
	vv.applyDefaults()
	vv.validate()
	return append(d.probs, vv.probs...)
}
