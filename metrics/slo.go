package metrics

import (
	"fmt"
	"strings"
)

// SLOReport is a service-level objective (--slo) judged against a run:
// the expression, whether every term holds, and each term's value and
// verdict, so scripts and CI can read what breached and by how much.
type SLOReport struct {
	Expr  string    `json:"expr"`
	Met   bool      `json:"met"`
	Terms []SLOTerm `json:"terms"`
}

// SLOTerm is one condition of an SLO with the value the run gave it.
type SLOTerm struct {
	// Term is the condition in canonical form ("p99<300ms").
	Term string `json:"term"`
	// Value is the run's value in the metric's unit (ms, a fraction, req/s),
	// null when the run has none (the latency of a run in which nothing
	// succeeded, which meets no latency objective).
	Value *float64 `json:"value"`
	// ValueText is Value written as the term writes its threshold ("812ms",
	// "99.2%"), or "no data".
	ValueText string `json:"value_text"`
	Met       bool   `json:"met"`
	// Population says which requests a run-wide latency term is over:
	// "succeeded requests" (p99, p99(ok)) or "all requests" (p99(all));
	// empty for other terms.
	Population string `json:"population,omitempty"`
}

// Label names the term's metric with its population, for a report line:
// "p99 of succeeded requests", "p99 of all requests" (for p99(all)),
// "success".
func (t SLOTerm) Label() string {
	name, _, _ := strings.Cut(t.Term, "<")
	name, _, _ = strings.Cut(name, ">")
	if t.Population != "" {
		name, _, _ = strings.Cut(name, "(")
		name += " of " + t.Population
	}
	return name
}

// Breached returns the terms that do not hold.
func (r *SLOReport) Breached() []SLOTerm {
	var out []SLOTerm
	for _, t := range r.Terms {
		if !t.Met {
			out = append(out, t)
		}
	}
	return out
}

// Line returns the report in one line: "met: p99 = 45ms (p99<300ms), …"
// or "BREACHED: p99 = 812ms (want p99<300ms); met: …", breached terms first.
func (r *SLOReport) Line() string {
	var bad, good []string
	for _, t := range r.Terms {
		name := t.Label()
		if t.Met {
			good = append(good, fmt.Sprintf("%s = %s (%s)", name, t.ValueText, t.Term))
		} else {
			bad = append(bad, fmt.Sprintf("%s = %s (want %s)", name, t.ValueText, t.Term))
		}
	}
	switch {
	case len(bad) == 0:
		return "met: " + strings.Join(good, ", ")
	case len(good) == 0:
		return "BREACHED: " + strings.Join(bad, ", ")
	}
	return "BREACHED: " + strings.Join(bad, ", ") + "; met: " + strings.Join(good, ", ")
}
