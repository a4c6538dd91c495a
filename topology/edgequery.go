package topology

import "fmt"

// This file holds a call's own status queries (calls[].query): after the
// call's outcome is unknown, the calling service asks the call's target
// by the write's key, on workload.query's schedule, over the call's own
// edge and under its policy (the simulator's edgequery.go).

// edgeQuery is one call that has a query, at path ("services[i].calls[j]",
// with ".parallel[k]" inside a group).
type edgeQuery struct {
	path     string
	svc      int
	call     *Call
	parallel bool
}

// edgeQueries lists the service calls that have a query, in file order.
func (sc *Scenario) edgeQueries() []edgeQuery {
	if !sc.hasEdgeQuery() {
		return nil // the common case, without formatting a path
	}
	var out []edgeQuery
	var walk func(i int, calls []Call, path string, parallel bool)
	walk = func(i int, calls []Call, path string, parallel bool) {
		for j := range calls {
			c, p := &calls[j], fmt.Sprintf("%s[%d]", path, j)
			if c.Query != nil {
				out = append(out, edgeQuery{path: p, svc: i, call: c, parallel: parallel})
			}
			walk(i, c.Parallel, p+".parallel", true)
		}
	}
	for i := range sc.Services {
		walk(i, sc.Services[i].Calls, fmt.Sprintf("services[%d].calls", i), false)
	}
	return out
}

// hasEdgeQuery reports whether a service call has a query.
func (sc *Scenario) hasEdgeQuery() bool {
	var any func(calls []Call) bool
	any = func(calls []Call) bool {
		for i := range calls {
			if calls[i].Query != nil || any(calls[i].Parallel) {
				return true
			}
		}
		return false
	}
	for i := range sc.Services {
		if any(sc.Services[i].Calls) {
			return true
		}
	}
	return false
}

// edgeQueries validates every calls[].query, and refuses query on the
// calls that are not a service's step (the client's, a status or fact
// query's own call); commitName is the committing service's name.
func (v *validator) edgeQueries(commitName string) {
	sc := v.sc
	for _, eq := range sc.edgeQueries() {
		c, p := eq.call, eq.path+".query"
		v.needKeys(p)
		v.querySchedule(c.Query, p)
		switch {
		case eq.parallel:
			v.add(p, "a status query follows a step of one call, not a member of a parallel group: make the call its own step")
		case c.Fanout > 1 || c.WaitFor != 0:
			v.add(p, "a status query follows a step of one call: fanout and wait_for do not apply")
		case c.Publish != nil:
			v.add(p, "a publish step has no outcome to query")
		case c.Pool != nil:
			v.add(p, "a status query over an edge with a connection pool is not modelled: remove pool or query")
		case c.To != commitName:
			v.add(p, "the query asks the call's target by the write's key, and only the committing service (%q) keeps records; %q keeps none", commitName, c.To)
		case sc.Service(c.To) != nil && sc.Service(c.To).QueryTime == nil:
			v.add(p, "the target %q has no query endpoint: give it query_time", c.To)
		}
		if v.givenUnder(p + ".call") {
			v.add(p+".call", "a call's status queries travel the call's own edge under its policy (timeout, retry, budget, breaker): remove call")
		}
		if c.Query.Call.Query != nil {
			v.add(p+".call.query", "a status query is not itself queried")
		}
	}
	w := &sc.Workload
	refuse := func(c *Call, p string) {
		if c.Query != nil {
			v.add(p+".query", "only a service's calls (services[].calls[].query) and the client (workload.query) query by key; remove query")
		}
	}
	refuse(&w.Client, "workload.client")
	if w.Query != nil {
		refuse(&w.Query.Call, "workload.query.call")
	}
	for i := range sc.Services {
		s, p := &sc.Services[i], fmt.Sprintf("services[%d]", i)
		if s.Recovery != nil {
			refuse(&s.Recovery.FactQuery, p+".recovery.fact_query")
		}
		if s.Reconciliation != nil {
			refuse(&s.Reconciliation.FactQuery, p+".reconciliation.fact_query")
		}
	}
}

// Queries reports whether sc sends status queries by key: the client's
// (workload.query) or a call's (calls[].query). Their load is attempts
// like retries', so reports name both.
func (sc *Scenario) Queries() bool {
	return sc.Workload.Query != nil || sc.hasEdgeQuery()
}
