package traces

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

type spanKey struct{ trace, span string }

type index struct {
	spans    []*Span
	byID     map[spanKey]*Span
	children map[spanKey][]*Span
}

// buildIndex drops spans that cannot be placed (no ids, no service, an end
// before the start, a duplicate id) with a note, and indexes the rest.
func buildIndex(in []Span, m *Model) *index {
	ix := &index{byID: map[spanKey]*Span{}, children: map[spanKey][]*Span{}}
	var noID, noService, backwards, dup int
	for i := range in {
		s := &in[i]
		switch {
		case s.TraceID == "" || s.SpanID == "":
			noID++
			continue
		case s.Service == "" || strings.HasPrefix(s.Service, "unknown_service"):
			noService++
			continue
		case s.End.Before(s.Start):
			backwards++
			continue
		}
		k := spanKey{s.TraceID, s.SpanID}
		if ix.byID[k] != nil {
			dup++
			continue
		}
		ix.byID[k] = s
		ix.spans = append(ix.spans, s)
	}
	for what, n := range map[string]int{
		"have no trace or span id":                                      noID,
		"have no service.name: left out, so their children are orphans": noService,
		"end before they start":                                         backwards,
		"repeat a span id already read (kept the first)":                dup,
	} {
		if n > 0 {
			m.Notes = append(m.Notes, fmt.Sprintf("%d span(s) %s", n, what))
		}
	}
	slices.Sort(m.Notes)
	sortSpans(ix.spans)
	for _, s := range ix.spans {
		if s.ParentID != "" {
			k := spanKey{s.TraceID, s.ParentID}
			ix.children[k] = append(ix.children[k], s)
		}
	}
	// Spans without a kind get one from the service boundary they sit on.
	guessed := 0
	for _, s := range ix.spans {
		if s.Kind != Unspecified {
			continue
		}
		guessed++
		s.Kind = Internal
		if p := ix.byID[spanKey{s.TraceID, s.ParentID}]; p != nil && p.Service != s.Service {
			s.Kind = Server
			continue
		}
		for _, c := range ix.children[spanKey{s.TraceID, s.SpanID}] {
			if c.Service != s.Service {
				s.Kind = Client
				break
			}
		}
	}
	if guessed > 0 {
		m.Notes = append(m.Notes, fmt.Sprintf("%d span(s) have no span kind: taken as server when their parent is in another service, client when a child is, internal otherwise", guessed))
	}
	return ix
}

// sortSpans orders spans by start, then trace and span id, so that every
// result is a function of the set of spans, not of the files' order.
func sortSpans(s []*Span) {
	slices.SortFunc(s, func(a, b *Span) int {
		if c := a.Start.Compare(b.Start); c != 0 {
			return c
		}
		if c := cmp.Compare(a.TraceID, b.TraceID); c != 0 {
			return c
		}
		return cmp.Compare(a.SpanID, b.SpanID)
	})
}

// callee is the service a client span called: its server child's, else
// its peer.service, else "".
func callee(ix *index, s *Span) string {
	for _, c := range ix.children[spanKey{s.TraceID, s.SpanID}] {
		if c.Kind == Server && c.Service != s.Service {
			return c.Service
		}
	}
	return s.Peer
}

// wraps reports whether a client span has a client child in its own
// service: layered instrumentation (a library's span around the HTTP
// client's), where the inner span is the attempt.
func wraps(ix *index, s *Span) bool {
	for _, c := range ix.children[spanKey{s.TraceID, s.SpanID}] {
		if c.Kind == Client && c.Service == s.Service {
			return true
		}
	}
	return false
}

// owner is the attempt a client span was made from: the nearest server
// span above it in its own service, else the topmost span of its service
// on the way up (a root of an external client, or an orphan).
func (ix *index) owner(s *Span) *Span {
	cur := s
	for range len(ix.spans) {
		p := ix.byID[spanKey{cur.TraceID, cur.ParentID}]
		if p == nil || p.Service != s.Service {
			return cur
		}
		if p.Kind == Server {
			return p
		}
		cur = p
	}
	return nil // a parent cycle
}
