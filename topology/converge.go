package topology

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/stormsim/stormsim/policies"
)

// This file holds the keys of convergence after UNKNOWN: the client's
// status queries by key (workload.query), the committing service's
// recovery of stuck PROCESSING records and its reconciliation job, the
// query endpoint's service time (services[].query_time), the owner crash
// fault and alert_after; their defaults and their validation.

// Query is the client's status queries after a write's outcome is
// unknown: it asks the committing service's query endpoint by the write's
// key on a schedule — the first query FirstDelay after the write's call
// ended unknown, then every Interval·Multiplier^(n−1), jittered, capped at
// MaxInterval — until an answer is terminal (SUCCEEDED or FAILED) or
// Deadline after the write's first attempt, or MaxQueries were sent. A
// NOT_FOUND past the committing service's lease means the write never
// happened: with Resubmit the client sends the write again with the same
// key, without it the write failed.
type Query struct {
	// FirstDelay is the wait before the first query (default: Interval).
	FirstDelay time.Duration `yaml:"first_delay,omitempty"`
	// Interval is the wait between queries before backoff (required).
	Interval time.Duration `yaml:"interval"`
	// Multiplier grows the wait after each query (default 1: fixed).
	Multiplier float64 `yaml:"multiplier,omitempty"`
	// Jitter randomizes each wait: none (default), full, equal,
	// decorrelated or proportional (policies.Backoff); Spread is
	// proportional jitter's half-width.
	Jitter policies.JitterName `yaml:"jitter,omitempty"`
	Spread float64             `yaml:"spread,omitempty"`
	// MaxInterval caps a wait (0: no cap).
	MaxInterval time.Duration `yaml:"max_interval,omitempty"`
	// Deadline ends the queries this long after the write's first
	// attempt (default 60s): the intent stays unknown.
	Deadline time.Duration `yaml:"deadline,omitempty"`
	// MaxQueries bounds the queries of one intent (0: none but Deadline);
	// past it the intent stays unknown, as past Deadline.
	MaxQueries int `yaml:"max_queries,omitempty"`
	// Resubmit sends the write again, with the same key, after a query
	// answered NOT_FOUND past the lease; without it that answer is final
	// and the write failed.
	Resubmit bool `yaml:"resubmit,omitempty"`
	// RandomPhase adds U(0, Interval) to the first wait: each client
	// starts polling at a random phase (as pages polling from their load
	// time do), so even an unjittered schedule is not in lockstep.
	RandomPhase bool `yaml:"random_phase,omitempty"`
	// Call is each query's call policy (timeout, retry, budget, breaker,
	// network): a query is an attempt like any other. Its to is the
	// committing service, the default.
	Call Call `yaml:"call,omitempty"`
}

// Recovery is what the committing service does when the lease of a
// PROCESSING record ends without a commit (its owner died: crash_owner):
// a recovery task asks FactQuery.To, the downstream whose records are the
// facts, by the key, and marks the record SUCCEEDED (found), FAILED_FINAL
// or resumes the work (absent, per OnAbsent), or hands it to
// reconciliation as UNKNOWN (the facts cannot tell). It never lets a
// second owner execute: with recovery an expired lease is no takeover.
type Recovery struct {
	// FactQuery is the fact check, a call with its own policy (required to).
	FactQuery Call `yaml:"fact_query"`
	// OnAbsent is what the facts' "absent" decides: fail (FAILED_FINAL,
	// the default) or resume (the task does the work, once).
	OnAbsent string `yaml:"on_absent,omitempty"`
}

// Reconciliation is the committing service's periodic job: every
// Interval it takes up to Batch records in PROCESSING past their lease or
// UNKNOWN, begun more than OlderThan ago, and resolves each, CostPerItem
// apart, by a fact query to FactQuery.To. A record its fact query cannot
// settle MaxTries times goes to the manual queue.
type Reconciliation struct {
	// Interval is the period of the scans (required).
	Interval time.Duration `yaml:"interval"`
	// Batch is the most records one scan takes (default 100).
	Batch int `yaml:"batch,omitempty"`
	// CostPerItem is the job's own time per record, between fact queries.
	CostPerItem time.Duration `yaml:"cost_per_item,omitempty"`
	// OlderThan is the age a record must have to be scanned (default:
	// Interval).
	OlderThan time.Duration `yaml:"older_than,omitempty"`
	// MaxTries is how many scans may fail to settle a record before it
	// goes to the manual queue (default 3).
	MaxTries int `yaml:"max_tries,omitempty"`
	// FactQuery is the fact check, a call with its own policy (required to).
	FactQuery Call `yaml:"fact_query"`
}

// Convergence defaults; docs/scenario.md lists each one.
const (
	DefaultQueryMultiplier = 1
	DefaultQueryDeadline   = time.Minute
	DefaultReconcileBatch  = 100
	DefaultReconcileTries  = 3
	DefaultOnAbsent        = "fail"
)

// OnAbsent values.
var onAbsent = []string{"fail", "resume"}

// Converges reports whether the scenario configures convergence after
// UNKNOWN (status queries, recovery, reconciliation or alert_after): only
// then does a run report certainty.
func (sc *Scenario) Converges() bool {
	if sc.Workload.Query != nil || sc.Workload.AlertAfter > 0 {
		return true
	}
	for i := range sc.Services {
		if sc.Services[i].Recovery != nil || sc.Services[i].Reconciliation != nil {
			return true
		}
	}
	return sc.hasEdgeQuery()
}

// convergeDefaults fills the convergence keys' defaults; called by
// applyDefaults.
func (v *validator) convergeDefaults() {
	if q := v.sc.Workload.Query; q != nil {
		p := "workload.query"
		v.queryDefaults(q, p)
		v.callDefaults(&q.Call, p+".call")
	}
	for _, eq := range v.sc.edgeQueries() {
		v.queryDefaults(eq.call.Query, eq.path+".query")
	}
	for i := range v.sc.Services {
		s, p := &v.sc.Services[i], fmt.Sprintf("services[%d]", i)
		if r := s.Recovery; r != nil {
			if r.OnAbsent == "" {
				r.OnAbsent = DefaultOnAbsent
			}
			v.callDefaults(&r.FactQuery, p+".recovery.fact_query")
		}
		if r := s.Reconciliation; r != nil {
			rp := p + ".reconciliation"
			if r.Batch == 0 && !v.given(rp+".batch") {
				r.Batch = DefaultReconcileBatch
			}
			if r.OlderThan == 0 && !v.given(rp+".older_than") {
				r.OlderThan = r.Interval
			}
			if r.MaxTries == 0 && !v.given(rp+".max_tries") {
				r.MaxTries = DefaultReconcileTries
			}
			v.callDefaults(&r.FactQuery, rp+".fact_query")
		}
	}
}

// converge validates the convergence keys; called by validate.
func (v *validator) converge() {
	sc := v.sc
	w := &sc.Workload
	v.nonNegative("workload.alert_after", w.AlertAfter)
	committer := sc.Committer()
	commitName := ""
	if committer >= 0 {
		commitName = sc.Services[committer].Name
	}
	if q := w.Query; q != nil {
		p := "workload.query"
		v.needKeys(p)
		v.querySchedule(q, p)
		c := &q.Call
		switch {
		case c.To != "" && c.To != commitName:
			v.add(p+".call.to", "a status query goes to the committing service (%q); remove to", commitName)
		case len(c.Parallel) > 0 || c.Fanout > 1 || c.Publish != nil || c.WaitFor != 0:
			v.add(p+".call", "a status query is one call: parallel, fanout, publish and wait_for do not apply")
		}
		v.callPolicies(c, p+".call", 1)
		if committer >= 0 && sc.Services[committer].QueryTime == nil {
			v.add(p, "the committing service %q has no query endpoint: give it query_time", commitName)
		}
	}
	for i := range sc.Services {
		s, p := &sc.Services[i], fmt.Sprintf("services[%d]", i)
		if s.QueryTime != nil {
			v.dist(s.QueryTime, p+".query_time")
		}
		if r := s.Recovery; r != nil {
			rp := p + ".recovery"
			v.jobAt(i, committer, rp)
			v.factQuery(&r.FactQuery, rp+".fact_query", s.Name)
			if !slices.Contains(onAbsent, r.OnAbsent) {
				v.add(rp+".on_absent", "must be fail or resume, got %q", r.OnAbsent)
			}
		}
		if r := s.Reconciliation; r != nil {
			rp := p + ".reconciliation"
			v.jobAt(i, committer, rp)
			v.positive(rp+".interval", r.Interval)
			if r.Batch < 1 {
				v.add(rp+".batch", "must be ≥ 1, got %d", r.Batch)
			}
			v.nonNegative(rp+".cost_per_item", r.CostPerItem)
			v.nonNegative(rp+".older_than", r.OlderThan)
			if r.MaxTries < 1 {
				v.add(rp+".max_tries", "must be ≥ 1, got %d", r.MaxTries)
			}
			v.factQuery(&r.FactQuery, rp+".fact_query", s.Name)
		}
	}
	v.edgeQueries(commitName)
	for i := range sc.Faults {
		f, p := &sc.Faults[i], fmt.Sprintf("faults[%d].crash_owner", i)
		if f.CrashOwner == 0 {
			continue
		}
		if v.probability(p, f.CrashOwner) && f.Service != commitName && sc.Service(f.Service) != nil {
			v.add(p, "hits the owners of writes at the committing service (%q), not %q", commitName, f.Service)
		}
	}
}

// queryDefaults fills the defaults of a query schedule at p.
func (v *validator) queryDefaults(q *Query, p string) {
	if q.FirstDelay == 0 && !v.given(p+".first_delay") {
		q.FirstDelay = q.Interval
	}
	if q.Multiplier == 0 && !v.given(p+".multiplier") {
		q.Multiplier = DefaultQueryMultiplier
	}
	if q.Deadline == 0 && !v.given(p+".deadline") {
		q.Deadline = DefaultQueryDeadline
	}
}

// querySchedule validates the schedule keys of a query at p, the ones
// workload.query and calls[].query share.
func (v *validator) querySchedule(q *Query, p string) {
	v.positive(p+".interval", q.Interval)
	v.nonNegative(p+".first_delay", q.FirstDelay)
	v.positive(p+".deadline", q.Deadline)
	v.nonNegative(p+".max_interval", q.MaxInterval)
	if q.MaxQueries < 0 {
		v.add(p+".max_queries", "must be ≥ 0 (0: bounded by deadline only), got %d", q.MaxQueries)
	}
	if _, err := policies.ParseJitter(q.Jitter); err != nil {
		v.add(p+".jitter", "%s", explain(err))
	}
	if q.Multiplier < 1 || math.IsNaN(q.Multiplier) || math.IsInf(q.Multiplier, 0) {
		v.add(p+".multiplier", "must be ≥ 1, got %v", q.Multiplier)
	}
	if q.Spread < 0 || q.Spread > 1 {
		v.add(p+".spread", "must be in [0, 1], got %v", q.Spread)
	}
	if q.MaxInterval > 0 && q.MaxInterval < q.Interval {
		v.add(p+".max_interval", "must be ≥ interval (%v) or 0 for no cap, got %v", q.Interval, q.MaxInterval)
	}
}

// needKeys reports a convergence key at p that needs writes with keys.
func (v *validator) needKeys(p string) {
	w := &v.sc.Workload
	if !w.IdempotencyKeys {
		v.add(p, "status queries and recovery work by the write's key: set workload.idempotency_keys")
	} else if w.WriteFraction == 0 {
		v.add(p, "there are no writes to converge: set workload.write_fraction")
	}
}

// jobAt checks that a recovery or reconciliation block at p belongs to
// the committing service, the one that holds the records.
func (v *validator) jobAt(i, committer int, p string) {
	if i != committer {
		name := "none"
		if committer >= 0 {
			name = fmt.Sprintf("%q", v.sc.Services[committer].Name)
		}
		v.add(p, "only the committing service (%s) holds records to recover", name)
		return
	}
	v.needKeys(p)
}

// factQuery validates a fact query's call from service self.
func (v *validator) factQuery(c *Call, p, self string) {
	switch {
	case c.To == "":
		v.add(p+".to", "required (the downstream whose records are the facts)")
	case c.To == self:
		v.add(p+".to", "the facts are a downstream's records, not %q's own", self)
	case v.sc.Service(c.To) == nil:
		v.unknownService(p+".to", c.To)
	}
	if len(c.Parallel) > 0 || c.Fanout > 1 || c.Publish != nil || c.WaitFor != 0 {
		v.add(p, "a fact query is one call: parallel, fanout, publish and wait_for do not apply")
	}
	v.callPolicies(c, p, 1)
}

// Backoff is the query schedule's waits as a policies backoff: Interval
// grown by Multiplier, capped at MaxInterval, jittered.
func (q *Query) Backoff() policies.BackoffConfig {
	return policies.BackoffConfig{Initial: q.Interval, Multiplier: q.Multiplier, Max: q.MaxInterval,
		Jitter: q.Jitter, Spread: q.Spread}
}

// SimulatorOnly reports every key of sc that serve does not run, each as
// a problem at its file and line, so that serve (and k8s render --mode
// load) refuses the scenario by name instead of ignoring the key; nil
// when there are none. serve runs every effect key and every convergence
// key but one: a call's own status queries (calls[].query) are the
// simulator's only, for now.
func (sc *Scenario) SimulatorOnly() Problems {
	var out Problems
	for _, eq := range sc.edgeQueries() {
		out = append(out, sc.ProblemAt(eq.path+".query", "a call's status queries by key: simulator-only for now, serve does not run it (run the scenario with stormsim run)"))
	}
	return out
}
