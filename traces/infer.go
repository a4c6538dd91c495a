package traces

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// simultaneous is how close two client spans to one callee must start to
// be told apart as fan-out members rather than a hedge, when the spans do
// not carry http.request.resend_count.
const simultaneous = time.Millisecond

// skewTolerance is how far a server span may start before the client span
// that called it before that is reported as clock skew: clocks of one
// host read a few microseconds apart; skew between hosts is milliseconds.
const skewTolerance = time.Millisecond

// Model is what Infer rebuilt from a set of spans.
type Model struct {
	// Entry is the service the requests entered at; Client the external
	// client's name when the root spans were its own ("" when the roots
	// were the entry's server spans, and the client's policy is unseen).
	Entry  string
	Client string
	// ClientEdge is the client's observed call to Entry (nil when unseen).
	ClientEdge *Edge
	// Requests counts root spans (logical requests); Window is the time
	// from the first to the last one's start, on the root service's clock.
	Requests int
	Window   time.Duration
	// Rate is (Requests − 1) / Window; Arrival is poisson or constant,
	// chosen by the coefficient of variation of the gaps (ArrivalCV: 1
	// for Poisson arrivals, 0 for constant ones; the cut is 0.5).
	Rate      float64
	Arrival   string
	ArrivalCV float64
	// Longest is the longest request (root span), for the deadline.
	Longest time.Duration
	// Writes counts requests whose first call to the entry was a POST:
	// non-idempotent writes.
	Writes int
	// Services in call order from the entry (entry first), then any
	// others by name.
	Services []*Service
	// Spans and Traces count what was read and used.
	Spans, Traces int
	// Notes list what could not be inferred, or only with a caveat.
	Notes []string
}

// Service is one service as its spans show it.
type Service struct {
	Name string
	// Attempts counts its server spans; OK those that succeeded.
	Attempts, OK int
	// Peak is the most server spans open at once (queued ones included).
	Peak int
	// Own holds the own time of each successful attempt.
	Own []time.Duration
	// OwnErrors counts failed attempts that made no downstream call;
	// Classes counts them by class, Class is the commonest.
	OwnErrors int
	Classes   map[Class]int
	Class     Class
	// Steps is the commonest call structure of its successful attempts:
	// steps in order, each a set of calls made at once. Share is the
	// fraction of successful attempts that showed exactly it.
	Steps [][]Member
	Share float64
	// Edges by callee.
	Edges map[string]*Edge
}

// Member is one call of a step: Fanout identical calls to To.
type Member struct {
	To     string
	Fanout int
}

// Edge is what the logical calls from one service to another showed.
type Edge struct {
	From, To string
	// Calls, Attempts: logical calls and their attempts; MaxAttempts the
	// most attempts one call made; PerCall counts calls by their attempts.
	Calls, Attempts, MaxAttempts int
	PerCall                      map[int]int
	// Retried counts failed attempts that were followed by a retry, by
	// class; Final counts calls whose last attempt failed, by class.
	Retried, Final map[Class]int
	// Gaps1 and Gaps2 are the waits before first and second retries.
	Gaps1, Gaps2 []time.Duration
	// Hedged counts calls with an attempt sent while another was in
	// flight; HedgeDelays the delays of those attempts after the
	// previous one; HedgeMax the most attempts of a hedged call.
	Hedged      int
	HedgeDelays []time.Duration
	HedgeMax    int
	// GaveUp holds the durations of attempts that ended on the caller's
	// own deadline (the timeout).
	GaveUp []time.Duration
	// Failed counts failed attempts by class.
	Failed map[Class]int
}

type spanKey struct{ trace, span string }

type index struct {
	spans    []*Span
	byID     map[spanKey]*Span
	children map[spanKey][]*Span
}

// Infer rebuilds a scenario's model from spans. It never fails: what the
// spans do not support is left out and said in Notes.
func Infer(spans []Span) *Model {
	m := &Model{}
	ix := buildIndex(slices.Clone(spans), m)
	m.Spans = len(ix.spans)
	traces := map[string]bool{}
	for _, s := range ix.spans {
		traces[s.TraceID] = true
	}
	m.Traces = len(traces)
	if len(ix.spans) == 0 {
		m.Notes = append(m.Notes, "no usable spans: nothing inferred")
		return m
	}
	svcs := map[string]*Service{}
	service := func(name string) *Service {
		s := svcs[name]
		if s == nil {
			s = &Service{Name: name, Classes: map[Class]int{}, Edges: map[string]*Edge{}}
			svcs[name] = s
		}
		return s
	}
	hasServer := map[string]bool{}
	for _, s := range ix.spans {
		if s.Kind == Server {
			hasServer[s.Service] = true
		}
	}
	// Owners: each server span, and each root span of a service that
	// serves nothing (an external client).
	owned := map[*Span][]*Span{}
	// blind marks owners with a client span whose callee is unknown: their
	// call structure is incomplete, so it does not vote.
	blind := map[*Span]bool{}
	unknownCallee := map[string]int{}
	orphans := map[string]int{}
	messaging := 0
	for _, s := range ix.spans {
		if s.ParentID != "" && ix.byID[spanKey{s.TraceID, s.ParentID}] == nil {
			orphans[s.Service]++
		}
		if s.Kind == Producer || s.Kind == Consumer {
			messaging++
		}
		if s.Kind != Client {
			continue
		}
		o := ix.owner(s)
		if s.callee = callee(ix, s); s.callee == "" && wraps(ix, s) {
			continue // a client span around the one that reached the callee
		} else if s.callee == "" {
			unknownCallee[s.Service]++
			if o != nil {
				blind[o] = true
			}
			continue
		}
		if o != nil {
			owned[o] = append(owned[o], s)
		}
	}
	if messaging > 0 {
		m.Notes = append(m.Notes, fmt.Sprintf("%d producer/consumer span(s): messaging is not modelled, so no edge is drawn through a queue", messaging))
	}
	for _, name := range sortedKeys(orphans) {
		m.Notes = append(m.Notes, fmt.Sprintf("%d span(s) of %s have a parent that is not in the traces (orphans): they count as attempts of %s but not as requests, and no edge is drawn from their unknown caller", orphans[name], name, name))
	}
	for _, name := range sortedKeys(unknownCallee) {
		m.Notes = append(m.Notes, fmt.Sprintf("%d client span(s) of %s have no server span below them and no peer.service: their callee is unknown, so they make no edge", unknownCallee[name], name))
	}
	m.inferRoots(ix, hasServer, owned, blind)
	skew := map[[2]string]time.Duration{}
	skewN := map[[2]string]int{}
	for _, s := range ix.spans {
		if s.Kind == Server {
			svc := service(s.Service)
			svc.Attempts++
			mine := owned[s]
			if !s.Failed {
				svc.OK++
				svc.Own = append(svc.Own, ownTime(s, mine))
			} else if s.Class != Cancelled && len(mine) == 0 && !blind[s] {
				svc.OwnErrors++
				svc.Classes[s.Class]++
			}
			if p := ix.byID[spanKey{s.TraceID, s.ParentID}]; p != nil && p.Kind == Client && p.Service != s.Service {
				k := [2]string{p.Service, s.Service}
				// A server span may end a little after its client got the
				// answer (the handler returns after the reply is sent), so
				// only a start before the call's start is skew.
				if off := p.Start.Sub(s.Start); off > skewTolerance {
					skewN[k]++
					skew[k] = max(skew[k], off)
				}
			}
		}
	}
	for _, k := range sortedPairs(skewN) {
		m.Notes = append(m.Notes, fmt.Sprintf("clock skew between %s and %s: %d server span(s) start before the client span that called them (by up to %v); only durations measured on one service's clock are used, so the graph and the times are unaffected", k[0], k[1], skewN[k], skew[k]))
	}
	// Logical calls and steps of every owner.
	sigs := map[string]map[string]int{}
	sigSteps := map[string][][]Member{}
	// Callees named only by peer.service have no server spans: they are
	// modelled as leaves whose own time is what their callers saw.
	peerOnly := map[string][]*Span{}
	owners := make([]*Span, 0, len(owned))
	for o := range owned {
		owners = append(owners, o)
	}
	sortSpans(owners)
	for _, o := range owners {
		calls := splitCalls(owned[o])
		from := o.Service
		for _, c := range calls {
			e := service(from).edge(from, c.to)
			e.add(c)
			if !hasServer[c.to] {
				peerOnly[c.to] = append(peerOnly[c.to], c.attempts...)
			}
		}
		if o.Kind == Server && !o.Failed && !blind[o] {
			steps := stepsOf(calls)
			sig := signature(steps)
			if sigs[from] == nil {
				sigs[from] = map[string]int{}
			}
			sigs[from][sig]++
			sigSteps[from+"\x00"+sig] = steps
		}
	}
	for _, name := range sortedKeys(peerOnly) {
		svc := service(name)
		for _, a := range peerOnly[name] {
			svc.Attempts++
			switch {
			case !a.Failed:
				svc.OK++
				svc.Own = append(svc.Own, a.Duration())
			case a.Class != Cancelled:
				svc.OwnErrors++
				svc.Classes[a.Class]++
			}
		}
		svc.Peak = peakOf(peerOnly[name])
		hasServer[name] = true
		m.Notes = append(m.Notes, fmt.Sprintf("%s has no server spans (uninstrumented, named by peer.service): modelled as a leaf whose own time is the %d attempts its callers timed", name, len(peerOnly[name])))
	}
	for _, name := range sortedKeys(svcs) {
		svc := svcs[name]
		if _, ok := peerOnly[name]; ok {
			continue
		}
		if name == m.Client && !hasServer[name] {
			continue
		}
		// OK attempts that made no call are counted as the empty structure.
		counted := 0
		for _, n := range sigs[name] {
			counted += n
		}
		for o := range blind {
			if o.Service == name && o.Kind == Server && !o.Failed {
				counted++ // blind: its structure is unknown, not "no calls"
			}
		}
		if none := svc.OK - counted; none > 0 {
			if sigs[name] == nil {
				sigs[name] = map[string]int{}
			}
			sigs[name][""] += none
		}
		best, bestN := "", -1
		for _, sig := range sortedKeys(sigs[name]) {
			if n := sigs[name][sig]; n > bestN {
				best, bestN = sig, n
			}
		}
		if bestN > 0 {
			svc.Steps = sigSteps[name+"\x00"+best]
			svc.Share = float64(bestN) / float64(svc.OK)
			if svc.Share < 0.95 && len(sigs[name]) > 1 {
				m.Notes = append(m.Notes, fmt.Sprintf("%s: its successful attempts made different calls; the commonest structure (%s) is %.0f %% of them", name, describe(best), 100*svc.Share))
			}
		}
		for _, c := range sortedKeys(svc.Classes) {
			if svc.Classes[c] > svc.Classes[svc.Class] || svc.Class == OK {
				svc.Class = c
			}
		}
		if len(svc.Classes) > 1 {
			m.Notes = append(m.Notes, fmt.Sprintf("%s: own errors of several classes (%s); the scenario takes the commonest, %s", name, classCounts(svc.Classes), svc.Class))
		}
		svc.Peak = peak(ix.spans, name)
	}
	if m.Client != "" {
		if cs := svcs[m.Client]; cs != nil {
			m.ClientEdge = cs.Edges[m.Entry]
		}
	}
	m.breakCycles(svcs)
	m.order(svcs, hasServer)
	return m
}

// breakCycles drops calls that close a cycle (a service calling itself,
// directly or through others), which a scenario cannot hold, with a note.
func (m *Model) breakCycles(svcs map[string]*Service) {
	const (
		unseen = iota
		open
		done
	)
	state := map[string]int{}
	var visit func(name string)
	visit = func(name string) {
		s := svcs[name]
		state[name] = open
		if s == nil {
			state[name] = done
			return
		}
		for i := range s.Steps {
			kept := s.Steps[i][:0]
			for _, mb := range s.Steps[i] {
				switch state[mb.To] {
				case open:
					m.Notes = append(m.Notes, fmt.Sprintf("%s→%s closes a call cycle, which a scenario cannot hold: left out", name, mb.To))
					continue
				case unseen:
					visit(mb.To)
				}
				kept = append(kept, mb)
			}
			s.Steps[i] = kept
		}
		s.Steps = slices.DeleteFunc(s.Steps, func(st []Member) bool { return len(st) == 0 })
		state[name] = done
	}
	if m.Entry != "" {
		visit(m.Entry)
	}
	for _, name := range sortedKeys(svcs) {
		if state[name] == unseen {
			visit(name)
		}
	}
}

func (s *Service) edge(from, to string) *Edge {
	e := s.Edges[to]
	if e == nil {
		e = &Edge{From: from, To: to, PerCall: map[int]int{}, Retried: map[Class]int{}, Final: map[Class]int{}, Failed: map[Class]int{}}
		s.Edges[to] = e
	}
	return e
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

// inferRoots finds the entry, the client and the arrival process.
func (m *Model) inferRoots(ix *index, hasServer map[string]bool, owned map[*Span][]*Span, blind map[*Span]bool) {
	var starts []time.Time
	entries := map[string]int{}
	clients := map[string]int{}
	for _, s := range ix.spans {
		if s.ParentID != "" {
			continue
		}
		method := s.Method
		switch {
		case s.Kind == Server:
			entries[s.Service]++
		case !hasServer[s.Service]:
			to := map[string]int{}
			for _, c := range owned[s] {
				to[callee(ix, c)]++
			}
			if len(owned[s]) > 0 {
				method = owned[s][0].Method // the first attempt's
			}
			if len(to) == 0 && !blind[s] {
				continue
			}
			// A request whose calls lead nowhere known was still offered:
			// it counts toward the rate but names no entry.
			clients[s.Service]++
			if len(to) > 0 {
				entries[mostCommon(to)]++
			}
		default:
			continue
		}
		starts = append(starts, s.Start)
		m.Longest = max(m.Longest, s.Duration())
		if strings.EqualFold(method, "POST") {
			m.Writes++
		}
	}
	if len(entries) == 0 {
		m.Notes = append(m.Notes, "no root span reaches a service: no entry and no arrival rate")
		return
	}
	m.Entry = mostCommon(entries)
	if len(entries) > 1 {
		m.Notes = append(m.Notes, fmt.Sprintf("requests enter at several services (%s): the scenario has one entry, %s", counts(entries), m.Entry))
	}
	if len(clients) > 0 {
		m.Client = mostCommon(clients)
		if len(clients) > 1 {
			m.Notes = append(m.Notes, fmt.Sprintf("several external clients (%s): the client policy is %s's", counts(clients), m.Client))
		}
	} else {
		m.Notes = append(m.Notes, fmt.Sprintf("the root spans are %s's server spans: the external client's retries and timeout are not visible (workload.client left empty)", m.Entry))
	}
	m.Requests = len(starts)
	slices.SortFunc(starts, time.Time.Compare)
	if len(starts) < 2 {
		m.Notes = append(m.Notes, "a single request: no arrival rate (set workload.rate by hand)")
		return
	}
	m.Window = starts[len(starts)-1].Sub(starts[0])
	if m.Window <= 0 {
		m.Notes = append(m.Notes, "every request started at the same instant: no arrival rate")
		return
	}
	m.Rate = float64(len(starts)-1) / m.Window.Seconds()
	gaps := make([]float64, len(starts)-1)
	for i := range gaps {
		gaps[i] = starts[i+1].Sub(starts[i]).Seconds()
	}
	mean, sd := meanSD(gaps)
	m.ArrivalCV = sd / mean
	m.Arrival = "poisson"
	if m.ArrivalCV < 0.5 {
		m.Arrival = "constant"
	}
}

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

// ownTime is an attempt's duration minus the union of its client spans
// (clipped to it): the time it spent in its own work and queue.
func ownTime(s *Span, children []*Span) time.Duration {
	type iv struct{ a, b time.Time }
	var ivs []iv
	for _, c := range children {
		a, b := c.Start, c.End
		if a.Before(s.Start) {
			a = s.Start
		}
		if b.After(s.End) {
			b = s.End
		}
		if b.After(a) {
			ivs = append(ivs, iv{a, b})
		}
	}
	slices.SortFunc(ivs, func(x, y iv) int { return x.a.Compare(y.a) })
	waited := time.Duration(0)
	var curA, curB time.Time
	for i, v := range ivs {
		if i == 0 || v.a.After(curB) {
			waited += curB.Sub(curA)
			curA, curB = v.a, v.b
		} else if v.b.After(curB) {
			curB = v.b
		}
	}
	waited += curB.Sub(curA)
	return max(s.Duration()-waited, 0)
}

// peak is the most server spans of service open at once.
func peak(spans []*Span, service string) int {
	var mine []*Span
	for _, s := range spans {
		if s.Kind == Server && s.Service == service {
			mine = append(mine, s)
		}
	}
	return peakOf(mine)
}

// peakOf is the most of spans open at once.
func peakOf(spans []*Span) int {
	type ev struct {
		t time.Time
		d int
	}
	var evs []ev
	for _, s := range spans {
		evs = append(evs, ev{s.Start, 1}, ev{s.End, -1})
	}
	// Ends before starts at the same instant: back-to-back is not overlap.
	slices.SortFunc(evs, func(a, b ev) int {
		if c := a.t.Compare(b.t); c != 0 {
			return c
		}
		return cmp.Compare(a.d, b.d)
	})
	n, best := 0, 0
	for _, e := range evs {
		n += e.d
		best = max(best, n)
	}
	return best
}

// order puts the services in call order from the entry, then the rest.
func (m *Model) order(svcs map[string]*Service, hasServer map[string]bool) {
	seen := map[string]bool{}
	var visit func(name string)
	visit = func(name string) {
		s := svcs[name]
		if s == nil || seen[name] || !hasServer[name] {
			return
		}
		seen[name] = true
		m.Services = append(m.Services, s)
		for _, st := range s.Steps {
			for _, mb := range st {
				visit(mb.To)
			}
		}
	}
	visit(m.Entry)
	var rest []string
	for _, name := range sortedKeys(svcs) {
		if !seen[name] && hasServer[name] {
			visit(name)
			rest = append(rest, name)
		}
	}
	if len(rest) > 0 && m.Entry != "" {
		m.Notes = append(m.Notes, fmt.Sprintf("not reached from %s by the commonest call structures: %s (kept as services)", m.Entry, strings.Join(rest, ", ")))
	}
}

func mostCommon(n map[string]int) string {
	best, bestN := "", -1
	for _, k := range sortedKeys(n) {
		if n[k] > bestN {
			best, bestN = k, n[k]
		}
	}
	return best
}

func counts(n map[string]int) string {
	var parts []string
	for _, k := range sortedKeys(n) {
		parts = append(parts, fmt.Sprintf("%s %d", k, n[k]))
	}
	return strings.Join(parts, ", ")
}

func classCounts(n map[Class]int) string {
	var parts []string
	for _, k := range sortedKeys(n) {
		parts = append(parts, fmt.Sprintf("%s %d", k, n[k]))
	}
	return strings.Join(parts, ", ")
}

func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func sortedPairs(m map[[2]string]int) [][2]string {
	keys := make([][2]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i][0] != keys[j][0] {
			return keys[i][0] < keys[j][0]
		}
		return keys[i][1] < keys[j][1]
	})
	return keys
}

func meanSD(x []float64) (mean, sd float64) {
	if len(x) == 0 {
		return 0, 0
	}
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	if len(x) < 2 {
		return mean, 0
	}
	for _, v := range x {
		sd += (v - mean) * (v - mean)
	}
	return mean, math.Sqrt(sd / float64(len(x)-1))
}
