package topology

import "fmt"

// Defaults and bounds of a service's effects (issue 34, items 4 and 5).
const (
	// DefaultVersionedAttempts bounds the read-modify-writes of one attempt
	// under versioned_write.retry: operation.
	DefaultVersionedAttempts = 3
	// MaxVersionedAttempts bounds versioned_write.attempts.
	MaxVersionedAttempts = 1000
	// MaxExternalEffects bounds the services with an external_effect: a
	// logical request keeps one bit per such service.
	MaxExternalEffects = 64
	// MaxEntities bounds versioned_write.entities (one version each).
	MaxEntities = 10_000_000
)

// The values of ExternalEffect.Dedupe.
const (
	DedupeNone = "none"
	DedupeKey  = "key"
)

// The values of VersionedWrite.Retry.
const (
	RetryOperation = "operation"
	RetryStep      = "step"
)

// ExternalEffect makes a service's work an effect outside the system — an
// e-mail sent, a payment handed to its channel — which, once executed,
// cannot be taken back. Each execution of an attempt's work (the work done
// without an injected error) executes the effect once; what the channel
// does with a second execution for the same logical request decides
// whether a retry harms.
type ExternalEffect struct {
	// Dedupe is what the channel does with a repeat of an intent's effect:
	// none (default: every execution is delivered, a second e-mail) or key
	// (the channel deduplicates by the intent's business key: a repeat is
	// absorbed and nothing more happens).
	Dedupe string `yaml:"dedupe,omitempty"`
}

// DedupesByKey reports whether the channel absorbs repeats.
func (e *ExternalEffect) DedupesByKey() bool { return e.Dedupe == DedupeKey }

// VersionedWrite makes every attempt at a service a read-modify-write of
// one entity under optimistic concurrency: the attempt reads the entity's
// version when its work starts and writes at the end of its service time
// only if the version is unchanged. Another write to the same entity in
// between is a conflict. Each logical request writes one entity, the same
// for all its attempts, chosen uniformly among Entities; with Poisson
// writers at rate λ and a constant service time w, a write conflicts with
// probability 1 − exp(−λw/Entities).
type VersionedWrite struct {
	// Entities is how many entities the writes spread over (required, ≥ 1).
	Entities int `yaml:"entities"`
	// Retry is what the service does after a conflict: operation (default:
	// redo the whole read-modify-write — read again, compute again, write
	// again — the rule for the layer that read) or step (retry only the
	// write with the value computed from the stale read: it succeeds and
	// overwrites the other writer's update, a lost update).
	Retry string `yaml:"retry,omitempty"`
	// Attempts bounds the read-modify-writes of one attempt under retry:
	// operation (default 3); when the last one conflicts too the attempt
	// answers conflict. Not used by retry: step.
	Attempts int `yaml:"attempts,omitempty"`
}

// RedoesOperation reports whether a conflict redoes the whole read-modify-write.
func (w *VersionedWrite) RedoesOperation() bool { return w.Retry != RetryStep }

// HasEffects reports whether any service has an external effect, a
// versioned write or an irrevocable step: only then do summaries carry
// their accounting.
func (sc *Scenario) HasEffects() bool {
	for i := range sc.Services {
		s := &sc.Services[i]
		if s.ExternalEffect != nil || s.VersionedWrite != nil {
			return true
		}
		for j := range s.Calls {
			if s.Calls[j].Irrevocable {
				return true
			}
		}
	}
	return false
}

// serviceEffects defaults and validates the effect keys of service s at p: its
// external effect, its versioned write, and its irrevocable steps.
func (v *validator) serviceEffects(s *Service, p string) {
	if e := s.ExternalEffect; e != nil {
		if e.Dedupe == "" && !v.given(p+".external_effect.dedupe") {
			e.Dedupe = DedupeNone
		}
		if e.Dedupe != DedupeNone && e.Dedupe != DedupeKey {
			v.add(p+".external_effect.dedupe", "must be none or key, got %q", e.Dedupe)
		}
	}
	if w := s.VersionedWrite; w != nil {
		wp := p + ".versioned_write"
		if w.Retry == "" && !v.given(wp+".retry") {
			w.Retry = RetryOperation
		}
		if w.Attempts == 0 && !v.given(wp+".attempts") && w.Retry == RetryOperation {
			w.Attempts = DefaultVersionedAttempts
		}
		switch {
		case w.Entities < 1:
			v.add(wp+".entities", "must be ≥ 1 (the entities the writes spread over), got %d", w.Entities)
		case w.Entities > MaxEntities:
			v.add(wp+".entities", "must be ≤ %d, got %d", MaxEntities, w.Entities)
		}
		switch w.Retry {
		case RetryOperation:
			if w.Attempts < 1 || w.Attempts > MaxVersionedAttempts {
				v.add(wp+".attempts", "must be in 1…%d, got %d", MaxVersionedAttempts, w.Attempts)
			}
		case RetryStep:
			if w.Attempts != 0 {
				v.add(wp+".attempts", "applies only to retry: operation (a step retry always writes)")
			}
		default:
			v.add(wp+".retry", "must be operation or step, got %q", w.Retry)
		}
	}
	irrevocable := -1
	for j := range s.Calls {
		c, cp := &s.Calls[j], fmt.Sprintf("%s.calls[%d]", p, j)
		for k := range c.Parallel {
			if c.Parallel[k].Irrevocable {
				v.add(fmt.Sprintf("%s.parallel[%d].irrevocable", cp, k), "marks a whole step: set it on the parallel group, not on one member")
			}
		}
		if c.Irrevocable {
			if c.Publish != nil {
				v.add(cp+".irrevocable", "applies to a call, not to a publish step")
			}
			if irrevocable < 0 {
				irrevocable = j
			}
		}
		// Past an irrevocable step the attempt runs without its deadline:
		// only a timeout bounds each call from there on.
		if irrevocable >= 0 && c.Publish == nil {
			at := "this irrevocable step"
			if j != irrevocable {
				at = fmt.Sprintf("the irrevocable step calls[%d]", irrevocable)
			}
			v.boundedPastIrrevocable(c, cp, at)
		}
	}
}

// boundedPastIrrevocable reports the calls of step c at cp, at or after a
// service's first irrevocable step (named by at), that have no timeout.
func (v *validator) boundedPastIrrevocable(c *Call, cp, at string) {
	if len(c.Parallel) > 0 {
		for k := range c.Parallel {
			v.boundedPastIrrevocable(&c.Parallel[k], fmt.Sprintf("%s.parallel[%d]", cp, k), at)
		}
		return
	}
	if c.Timeout <= 0 && !v.brokenUnder(cp+".timeout") {
		v.add(cp+".timeout", "required (> 0): past %s no deadline bounds the call", at)
	}
}

// scenarioEffects checks the effect keys that span the scenario: the
// client's call is no step, and the external effects fit a request's bits.
func (v *validator) scenarioEffects() {
	v.clientNotIrrevocable(&v.sc.Workload.Client, "workload.client")
	n := 0
	for i := range v.sc.Services {
		if v.sc.Services[i].ExternalEffect == nil {
			continue
		}
		if n++; n > MaxExternalEffects {
			v.add(fmt.Sprintf("services[%d].external_effect", i), "at most %d services may have an external effect", MaxExternalEffects)
			return
		}
	}
}

// clientNotIrrevocable refuses irrevocable on a client's call policy at
// path (the scenario's workload.client, or a client policy file of its
// own): it marks a step of a service's calls, and a client's call is
// none, so accepting it would mean nothing.
func (v *validator) clientNotIrrevocable(c *Call, path string) {
	if c.Irrevocable {
		v.add(path+".irrevocable", "marks a step of a service's calls, not the client's call")
	}
}
