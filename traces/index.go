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
	owners   map[*Span]*Span // owner's answers
	onPath   map[*Span]bool  // owner's current walk
	path     []*Span         // owner's current walk, in order
	walked   int             // owner's steps, for tests of the work done
}

// buildIndex drops spans that cannot be placed (no ids, no service, an end
// before the start, a duplicate id) with a note, and indexes the rest.
func buildIndex(in []Span, m *Model) *index {
	ix := &index{byID: map[spanKey]*Span{}, children: map[spanKey][]*Span{}, owners: map[*Span]*Span{}, onPath: map[*Span]bool{}}
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
// on the way up (a root of an external client, or an orphan); nil in a
// parent cycle. Each span's owner is found once and kept, so a chain of
// n spans costs n steps, not n²/2.
func (ix *index) owner(s *Span) *Span {
	if o, ok := ix.owners[s]; ok {
		return o
	}
	// Walk up until a span whose owner is known, a boundary, or a span
	// already on this walk (a cycle).
	path := ix.path[:0]
	onPath := ix.onPath
	var o *Span
	for cur := s; ; {
		ix.walked++
		if known, ok := ix.owners[cur]; ok {
			o = known
			break
		}
		if onPath[cur] {
			o = nil // a parent cycle
			break
		}
		path = append(path, cur)
		onPath[cur] = true
		p := ix.byID[spanKey{cur.TraceID, cur.ParentID}]
		if p == nil || p.Service != cur.Service {
			o = cur
			break
		}
		if p.Kind == Server {
			o = p
			break
		}
		cur = p
	}
	// Every span on the path has the same owner: they are in one service,
	// each the parent of the one before, below the same boundary.
	for _, p := range path {
		ix.owners[p] = o
		delete(onPath, p)
	}
	ix.path = path[:0]
	return o
}
