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
	// Instances counts the distinct service.instance.id values seen:
	// replicas, which the scenario does not model (yet).
	Instances int
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

// inference is the state shared by the stages of Infer.
type inference struct {
	m         *Model
	ix        *index
	svcs      map[string]*Service
	hasServer map[string]bool
	// owned holds the client spans each owner (a server span, or a root
	// of an external client) sent, with a known callee.
	owned map[*Span][]*Span
	// blind marks owners with a client span whose callee is unknown: their
	// call structure is incomplete, so it does not vote.
	blind map[*Span]bool
	// peerOnly holds the attempts to callees named only by peer.service.
	peerOnly map[string][]*Span
	// sigs counts each service's call structures by signature; steps
	// holds the structure of each signature.
	sigs  map[string]map[string]int
	steps map[string][][]Member
}

// Infer rebuilds a scenario's model from spans. It never fails: what the
// spans do not support is left out and said in Notes.
func Infer(spans []Span) *Model { return infer(slices.Clone(spans)) }

// infer is Infer on spans it may change (it gives kinds and callees).
func infer(spans []Span) *Model {
	m := &Model{}
	ix := buildIndex(spans, m)
	m.Spans = len(ix.spans)
	m.Traces = ix.traces
	if len(ix.spans) == 0 {
		m.Notes = append(m.Notes, "no usable spans: nothing inferred")
		return m
	}
	in := &inference{m: m, ix: ix, svcs: map[string]*Service{}, hasServer: map[string]bool{},
		owned: map[*Span][]*Span{}, blind: map[*Span]bool{}, peerOnly: map[string][]*Span{},
		sigs: map[string]map[string]int{}, steps: map[string][][]Member{}}
	for _, s := range ix.spans {
		if s.Kind == Server {
			in.hasServer[s.Service] = true
		}
	}
	in.link()
	m.inferRoots(ix, in.hasServer, in.owned, in.blind)
	in.attempts()
	in.calls()
	in.leaves()
	in.structures()
	if m.Client != "" {
		if cs := in.svcs[m.Client]; cs != nil {
			m.ClientEdge = cs.Edges[m.Entry]
		}
	}
	m.breakCycles(in.svcs)
	m.order(in.svcs, in.hasServer)
	return m
}

func (in *inference) service(name string) *Service {
	s := in.svcs[name]
	if s == nil {
		s = &Service{Name: name, Classes: map[Class]int{}, Edges: map[string]*Edge{}}
		in.svcs[name] = s
	}
	return s
}

// link gives each client span its callee and owner, and notes orphans,
// unknown callees and messaging spans.
func (in *inference) link() {
	ix, m := in.ix, in.m
	unknownCallee := map[string]int{}
	orphans := map[string]int{}
	messaging := 0
	for _, s := range ix.spans {
		if s.ParentID != "" && ix.parentOf(s) == nil {
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
				in.blind[o] = true
			}
			continue
		}
		if o != nil {
			in.owned[o] = append(in.owned[o], s)
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
}

// attempts counts each service's server spans, their own times and own
// errors, and notes clock skew between caller and callee.
func (in *inference) attempts() {
	skew := map[[2]string]time.Duration{}
	skewN := map[[2]string]int{}
	instances := map[string]map[string]bool{}
	for _, s := range in.ix.spans {
		if s.Kind != Server {
			continue
		}
		svc := in.service(s.Service)
		svc.Attempts++
		if s.Instance != "" {
			if instances[s.Service] == nil {
				instances[s.Service] = map[string]bool{}
			}
			if !instances[s.Service][s.Instance] {
				instances[s.Service][s.Instance] = true
				svc.Instances++
			}
		}
		mine := in.owned[s]
		if !s.Failed {
			svc.OK++
			svc.Own = append(svc.Own, ownTime(s, mine))
		} else if s.Class != Cancelled && len(mine) == 0 && !in.blind[s] {
			svc.OwnErrors++
			svc.Classes[s.Class]++
		}
		if p := in.ix.parentOf(s); p != nil && p.Kind == Client && p.Service != s.Service {
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
	for _, name := range sortedKeys(instances) {
		if n := len(instances[name]); n > 1 {
			in.m.Notes = append(in.m.Notes, fmt.Sprintf("%s: %d instances (service.instance.id) served it; replicas are not inferred, so they are one pool of workers", name, n))
		}
	}
	for _, k := range sortedPairs(skewN) {
		in.m.Notes = append(in.m.Notes, fmt.Sprintf("clock skew between %s and %s: %d server span(s) start before the client span that called them (by up to %v); only durations measured on one service's clock are used, so the graph and the times are unaffected", k[0], k[1], skewN[k], skew[k]))
	}
}

// calls splits every owner's client spans into logical calls, adds them
// to the edges, and counts the call structure of successful attempts.
func (in *inference) calls() {
	owners := make([]*Span, 0, len(in.owned))
	for o := range in.owned {
		owners = append(owners, o)
	}
	sortSpans(owners)
	for _, o := range owners {
		calls := splitCalls(in.owned[o])
		from := o.Service
		for _, c := range calls {
			in.service(from).edge(from, c.to).add(c)
			if !in.hasServer[c.to] {
				in.peerOnly[c.to] = append(in.peerOnly[c.to], c.attempts...)
			}
		}
		if o.Kind == Server && !o.Failed && !in.blind[o] {
			steps := stepsOf(calls)
			sig := signature(steps)
			if in.sigs[from] == nil {
				in.sigs[from] = map[string]int{}
			}
			in.sigs[from][sig]++
			in.steps[from+"\x00"+sig] = steps
		}
	}
}

// leaves models callees named only by peer.service (no server spans) as
// leaves whose own time is what their callers saw.
func (in *inference) leaves() {
	for _, name := range sortedKeys(in.peerOnly) {
		svc := in.service(name)
		for _, a := range in.peerOnly[name] {
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
		svc.Peak = peakOf(in.peerOnly[name])
		in.hasServer[name] = true
		in.m.Notes = append(in.m.Notes, fmt.Sprintf("%s has no server spans (uninstrumented, named by peer.service): modelled as a leaf whose own time is the %d attempts its callers timed", name, len(in.peerOnly[name])))
	}
}

// structures picks each service's commonest call structure, its error
// class and its peak concurrency.
func (in *inference) structures() {
	m := in.m
	for _, name := range sortedKeys(in.svcs) {
		svc := in.svcs[name]
		if _, ok := in.peerOnly[name]; ok {
			continue
		}
		if name == m.Client && !in.hasServer[name] {
			continue
		}
		sigs := in.sigs[name]
		if sigs == nil {
			sigs = map[string]int{}
		}
		// OK attempts that made no call are counted as the empty
		// structure; blind ones are unknown, not "no calls".
		counted := 0
		for _, n := range sigs {
			counted += n
		}
		for o := range in.blind {
			if o.Service == name && o.Kind == Server && !o.Failed {
				counted++
			}
		}
		if none := svc.OK - counted; none > 0 {
			sigs[""] += none
		}
		best, bestN := "", -1
		for _, sig := range sortedKeys(sigs) {
			if n := sigs[sig]; n > bestN {
				best, bestN = sig, n
			}
		}
		if bestN > 0 {
			svc.Steps = in.steps[name+"\x00"+best]
			svc.Share = float64(bestN) / float64(svc.OK)
			if svc.Share < 0.95 && len(sigs) > 1 {
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
		svc.Peak = peak(in.ix.spans, name)
	}
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
