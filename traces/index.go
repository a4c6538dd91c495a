package traces

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// index places every usable span: its parent and children by position
// in spans, each a slice of int32 rather than a map keyed by ids, so that
// an import of a million spans holds about 20 bytes a span for its index
// instead of a few hundred (the maps' keys were two strings each).
type index struct {
	spans []*Span // by start, then trace and span id; Span.pos is the position
	// parent is each span's parent's position, or noSpan when it has none
	// in the traces.
	parent []int32
	// kids holds the children's positions grouped by parent, each group
	// in spans' order; those of span i are kids[first[i]:first[i+1]].
	kids, first []int32
	// owners is each span's owner's position once found (noSpan: none,
	// in a parent cycle), ownerUnknown before, onWalk while on the
	// current walk.
	owners []int32
	path   []int32 // owner's current walk, in order
	walked int     // owner's steps, for tests of the work done
	traces int     // distinct trace ids
}

// Marks in index.parent and index.owners.
const (
	noSpan       = -1
	ownerUnknown = -2
	onWalk       = -3
)

// buildIndex drops spans that cannot be placed (no ids, no service, an end
// before the start, a duplicate id) with a note, and indexes the rest.
func buildIndex(in []Span, m *Model) *index {
	ix := &index{}
	var noID, noService, backwards, dup int
	var usable []*Span
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
		usable = append(usable, s)
	}
	// By trace and span id, the first read first among equal ids: the
	// order parents are found in, and duplicates dropped by.
	slices.SortStableFunc(usable, compareIDs)
	byID := usable[:0]
	for _, s := range usable {
		if n := len(byID); n > 0 && compareIDs(byID[n-1], s) == 0 {
			dup++
			continue
		} else if n == 0 || byID[n-1].TraceID != s.TraceID {
			ix.traces++
		}
		byID = append(byID, s)
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
	ix.spans = slices.Clone(byID)
	sortSpans(ix.spans)
	for i, s := range ix.spans {
		s.pos = int32(i)
	}
	n := len(ix.spans)
	ix.parent = make([]int32, n)
	ix.first = make([]int32, n+1)
	for i, s := range ix.spans {
		ix.parent[i] = noSpan
		if s.ParentID == "" {
			continue
		}
		j, found := slices.BinarySearchFunc(byID, s, func(c, s *Span) int {
			if x := cmp.Compare(c.TraceID, s.TraceID); x != 0 {
				return x
			}
			return cmp.Compare(c.SpanID, s.ParentID)
		})
		if found {
			p := byID[j].pos
			ix.parent[i] = p
			ix.first[p+1]++
		}
	}
	byID, usable = nil, nil // the spans are ix.spans' now
	for i := range n {
		ix.first[i+1] += ix.first[i]
	}
	ix.kids = make([]int32, ix.first[n])
	next := slices.Clone(ix.first[:n])
	for i, p := range ix.parent {
		if p != noSpan {
			ix.kids[next[p]] = int32(i)
			next[p]++
		}
	}
	ix.owners = make([]int32, n)
	for i := range ix.owners {
		ix.owners[i] = ownerUnknown
	}
	// Spans without a kind get one from the service boundary they sit on.
	guessed := 0
	for _, s := range ix.spans {
		if s.Kind != Unspecified {
			continue
		}
		guessed++
		s.Kind = Internal
		if p := ix.parentOf(s); p != nil && p.Service != s.Service {
			s.Kind = Server
			continue
		}
		for _, c := range ix.children(s) {
			if ix.spans[c].Service != s.Service {
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

// compareIDs orders spans by trace and span id.
func compareIDs(a, b *Span) int {
	if c := cmp.Compare(a.TraceID, b.TraceID); c != 0 {
		return c
	}
	return cmp.Compare(a.SpanID, b.SpanID)
}

// parentOf is s's parent, nil when it is not in the traces.
func (ix *index) parentOf(s *Span) *Span {
	if p := ix.parent[s.pos]; p != noSpan {
		return ix.spans[p]
	}
	return nil
}

// children are the positions of s's children, in spans' order.
func (ix *index) children(s *Span) []int32 {
	return ix.kids[ix.first[s.pos]:ix.first[s.pos+1]]
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
	for _, i := range ix.children(s) {
		if c := ix.spans[i]; c.Kind == Server && c.Service != s.Service {
			return c.Service
		}
	}
	return s.Peer
}

// wraps reports whether a client span has a client child in its own
// service: layered instrumentation (a library's span around the HTTP
// client's), where the inner span is the attempt.
func wraps(ix *index, s *Span) bool {
	for _, i := range ix.children(s) {
		if c := ix.spans[i]; c.Kind == Client && c.Service == s.Service {
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
	// Walk up until a span whose owner is known, a boundary, or a span
	// already on this walk (a cycle).
	path := ix.path[:0]
	o := int32(noSpan)
	for cur := s.pos; ; {
		ix.walked++
		if known := ix.owners[cur]; known >= noSpan {
			o = known
			break
		} else if known == onWalk {
			o = noSpan // a parent cycle
			break
		}
		path = append(path, cur)
		ix.owners[cur] = onWalk
		c := ix.spans[cur]
		p := ix.parent[cur]
		if p == noSpan || ix.spans[p].Service != c.Service {
			o = cur
			break
		}
		if ix.spans[p].Kind == Server {
			o = p
			break
		}
		cur = p
	}
	// Every span on the path has the same owner: they are in one service,
	// each the parent of the one before, below the same boundary.
	for _, p := range path {
		ix.owners[p] = o
	}
	ix.path = path[:0]
	if o == noSpan {
		return nil
	}
	return ix.spans[o]
}
