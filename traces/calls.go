package traces

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// call is one logical call: its attempts in the order they were sent.
type call struct {
	to       string
	attempts []*Span
}

func (c *call) end() time.Time {
	e := c.attempts[0].End
	for _, a := range c.attempts[1:] {
		if a.End.After(e) {
			e = a.End
		}
	}
	return e
}

// splitCalls groups one owner's client spans into logical calls, per
// callee, by http.request.resend_count where present; otherwise a span is
// a retry of a call whose last attempt failed before it started, a hedge
// of a call in flight, or a new call (fan-out when it starts with others).
func splitCalls(spans []*Span) []*call {
	byTo := map[string][]*Span{}
	for _, s := range spans {
		byTo[s.callee] = append(byTo[s.callee], s)
	}
	var out []*call
	for _, to := range sortedKeys(byTo) {
		group := byTo[to]
		sortSpans(group)
		var calls []*call
		for _, s := range group {
			var into *call
			switch {
			case s.Resend == 0:
			case s.Resend > 0:
				into = continued(calls, s, s.Resend)
			default:
				into = continued(calls, s, 0)
			}
			if into == nil {
				into = &call{to: to}
				calls = append(calls, into)
			}
			into.attempts = append(into.attempts, s)
		}
		out = append(out, calls...)
	}
	slices.SortStableFunc(out, func(a, b *call) int { return a.attempts[0].Start.Compare(b.attempts[0].Start) })
	return out
}

// continued finds the call a client span continues: the most recently
// failed one (a retry), else one still in flight that began clearly
// earlier (a hedge); nil for a new call. With n > 0 (the span's resend
// count) only calls that have sent exactly n attempts qualify, and the
// hedge test drops its "clearly earlier" part.
func continued(calls []*call, s *Span, n int) *call {
	var retry, hedge *call
	for _, c := range calls {
		if n > 0 && len(c.attempts) != n {
			continue
		}
		last := c.attempts[len(c.attempts)-1]
		switch {
		case !last.End.After(s.Start) && last.Failed:
			if retry == nil || last.End.After(retry.attempts[len(retry.attempts)-1].End) {
				retry = c
			}
		case last.End.After(s.Start) && (n > 0 || s.Start.Sub(c.attempts[0].Start) > simultaneous):
			if hedge == nil {
				hedge = c
			}
		}
	}
	if retry != nil {
		return retry
	}
	if hedge == nil && n > 0 {
		// The resend count says this continues a call, though its last
		// attempt had just succeeded: a hedge sent as the answer came.
		for _, c := range calls {
			if len(c.attempts) == n && (hedge == nil || c.attempts[0].Start.After(hedge.attempts[0].Start)) {
				hedge = c
			}
		}
	}
	return hedge
}

func (e *Edge) add(c *call) {
	e.Calls++
	e.Attempts += len(c.attempts)
	e.MaxAttempts = max(e.MaxAttempts, len(c.attempts))
	e.PerCall[len(c.attempts)]++
	hedged := false
	retries := 0
	for i, a := range c.attempts {
		if a.Failed && a.Class != Cancelled {
			e.Failed[a.Class]++
		}
		if a.GaveUp {
			e.GaveUp = append(e.GaveUp, a.Duration())
		}
		if i == 0 {
			continue
		}
		prev := c.attempts[i-1]
		// An attempt after one that did not fail is a hedge too: sent as
		// the answer arrived, or after an abandoned attempt.
		if a.Start.Before(prev.End) || !prev.Failed || prev.Class == Cancelled {
			hedged = true
			e.HedgeDelays = append(e.HedgeDelays, a.Start.Sub(prev.Start))
			continue
		}
		retries++
		e.Retried[prev.Class]++
		gap := a.Start.Sub(prev.End)
		switch retries {
		case 1:
			e.Gaps1 = append(e.Gaps1, gap)
		case 2:
			e.Gaps2 = append(e.Gaps2, gap)
		}
	}
	if hedged {
		e.Hedged++
		e.HedgeMax = max(e.HedgeMax, len(c.attempts))
	}
	last := c.attempts[len(c.attempts)-1]
	if last.Failed && last.Class != Cancelled {
		e.Final[last.Class]++
	}
}

// stepsOf orders calls into steps: calls that overlap in time are one
// parallel step.
func stepsOf(calls []*call) [][]Member {
	var steps [][]Member
	var stepEnd time.Time
	for i, c := range calls {
		if i == 0 || !c.attempts[0].Start.Before(stepEnd) {
			steps = append(steps, nil)
			stepEnd = c.end()
		} else if e := c.end(); e.After(stepEnd) {
			stepEnd = e
		}
		st := steps[len(steps)-1]
		found := false
		for j := range st {
			if st[j].To == c.to {
				st[j].Fanout++
				found = true
			}
		}
		if !found {
			st = append(st, Member{To: c.to, Fanout: 1})
		}
		steps[len(steps)-1] = st
	}
	for _, st := range steps {
		slices.SortFunc(st, func(a, b Member) int { return cmp.Compare(a.To, b.To) })
	}
	return steps
}

func signature(steps [][]Member) string {
	var b strings.Builder
	for i, st := range steps {
		if i > 0 {
			b.WriteString("; ")
		}
		for j, mb := range st {
			if j > 0 {
				b.WriteString(" + ")
			}
			b.WriteString(mb.To)
			if mb.Fanout > 1 {
				fmt.Fprintf(&b, " ×%d", mb.Fanout)
			}
		}
	}
	return b.String()
}

func describe(sig string) string {
	if sig == "" {
		return "no calls"
	}
	return "calls " + sig
}
