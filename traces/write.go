package traces

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// WriteOptions configure Model.Scenario.
type WriteOptions struct {
	// Name is the scenario's name (default "imported").
	Name string
	// Sources name the files read, for the header comment.
	Sources []string
	// SamplesPrefix, when set, lets a service's own time be empirical: its
	// samples go to the file SamplesPrefix + "." + service + ".ms" (the
	// scenario refers to it by its base name, so keep it beside the
	// scenario). Empty: a lognormal fit is used even when it fits badly,
	// with a note.
	SamplesPrefix string
}

// Output is an imported scenario: its YAML, the sample files it refers to
// and a summary for people of what was inferred and what was not.
type Output struct {
	YAML []byte
	// Samples maps each sample file's path (SamplesPrefix-based) to its
	// contents: one sample per line in milliseconds.
	Samples map[string][]byte
	Summary string
}

// maxSamples caps an empirical file; above it the sorted samples are
// thinned evenly, which keeps every quantile to within 1/maxSamples.
const maxSamples = 20000

// maxDuration caps the imported arrival window, and minRate floors the
// rate: traces spanning days (or with broken clocks) still make a
// scenario that runs.
const (
	maxDuration = 24 * time.Hour
	minRate     = 1.0 / 86400
)

// commentCol is where trailing comments start, so they line up.
const commentCol = 44

// Scenario writes the model as a commented scenario and a summary.
func (m *Model) Scenario(opt WriteOptions) *Output {
	if opt.Name == "" {
		opt.Name = "imported"
	}
	w := &writer{out: &Output{Samples: map[string][]byte{}}, sums: map[string][]string{}, names: map[string]string{}}
	used := map[string]bool{}
	for _, s := range m.Services {
		n := safeName(s.Name)
		for i := 2; used[n]; i++ {
			n = safeName(s.Name) + "-" + strconv.Itoa(i)
		}
		used[n] = true
		w.names[s.Name] = n
		if n != s.Name {
			w.summary("not inferred", fmt.Sprintf("service %q renamed %s: a scenario's names are ASCII letters, digits, '-', '_', '.' and '~'", s.Name, n))
		}
	}
	w.comment(0, fmt.Sprintf("Imported by `stormsim import traces` from %s: %d spans in %d traces.", strings.Join(opt.Sources, ", "), m.Spans, m.Traces))
	w.comment(0, "\"observed\" marks a value read from the traces, \"assumed\" one they cannot show.")
	w.comment(0, "Replicas (service.instance.id) are not modelled: each service is one pool.")
	w.line(0, "name: "+yamlString(opt.Name), "")
	w.line(0, "seed: 1", "")
	dur := min(max(time.Second, m.Window.Round(time.Second)), maxDuration)
	if m.Window > maxDuration {
		w.summary("not inferred", fmt.Sprintf("the requests span %v: duration capped at %v", m.Window, maxDuration))
	}
	w.line(0, "duration: "+dur.String(), fmt.Sprintf("observed: the window of the %d requests", m.Requests))
	w.line(0, "workload:", "")
	w.line(1, "entry: "+yamlString(w.name(m.Entry)), "observed: where the root spans enter")
	if m.Arrival != "" {
		w.line(1, "arrival: "+m.Arrival, fmt.Sprintf("observed: inter-arrival CV %.2f (Poisson 1, constant 0)", m.ArrivalCV))
		rate := round3(m.Rate)
		if rate < minRate {
			rate = minRate
			w.summary("not inferred", fmt.Sprintf("an arrival rate of %.3g/s is below what a scenario runs: raised to %g/s", m.Rate, minRate))
		}
		w.line(1, "rate: "+strconv.FormatFloat(rate, 'f', -1, 64), fmt.Sprintf("observed: %d requests over %v", m.Requests, m.Window.Round(time.Millisecond)))
	} else {
		w.line(1, "rate: 1", "assumed: no arrival rate visible")
	}
	if m.Writes > 0 && m.Requests > 0 {
		wf := round3(float64(m.Writes) / float64(m.Requests))
		w.line(1, "write_fraction: "+strconv.FormatFloat(wf, 'f', -1, 64), fmt.Sprintf("observed: %d of %d requests were POSTs", m.Writes, m.Requests))
		w.summary("inferred", fmt.Sprintf("write fraction %.3g: POST requests taken as non-idempotent writes", wf))
		w.summary("not inferred", "idempotency keys and the committing service: not visible in traces (topology's default committer)")
	}
	deadline := time.Hour
	if m.Longest < time.Hour/10 {
		deadline = max(time.Second, roundUp(10*m.Longest, time.Second))
	}
	w.line(1, "deadline: "+deadline.String(), fmt.Sprintf("assumed: not visible; 10x the longest request (%v), 1s to 1h", roundDur(m.Longest)))
	w.summary("inferred", fmt.Sprintf("entry %s, %s arrivals at %.3g/s from %d root spans", m.Entry, cmpOr(m.Arrival, "no"), m.Rate, m.Requests))
	w.summary("not inferred", fmt.Sprintf("workload.deadline: not visible in traces; set to %v", deadline))
	if e := m.ClientEdge; e != nil {
		if len(e.GaveUp) > 0 || len(e.Gaps1) > 0 || e.Hedged > 0 {
			w.line(1, "client:", fmt.Sprintf("observed: %s's calls to %s", m.Client, m.Entry))
			w.edgePolicy(2, e)
		} else {
			w.comment(1, fmt.Sprintf("client: no timeout, retry or hedge seen in %s's %d calls to %s", m.Client, e.Calls, m.Entry))
			w.edgePolicy(-1, e) // the summary's lines only
		}
	}
	w.line(0, "services:", "")
	for _, s := range m.Services {
		w.service(s, opt)
	}
	for _, n := range m.Notes {
		w.summary("not inferred", n)
	}
	w.summary("not inferred", "replicas: service.instance.id is counted, not modelled; each service is one pool of workers")
	w.out.YAML = []byte(w.b.String())
	w.out.Summary = w.summaryText()
	return w.out
}

type writer struct {
	b     strings.Builder
	out   *Output
	sums  map[string][]string
	names map[string]string // service names as the scenario spells them
}

func (w *writer) name(s string) string {
	if n, ok := w.names[s]; ok {
		return n
	}
	return safeName(s)
}

// safeName maps a service name onto the characters a scenario allows
// (topology's rule: ASCII letters, digits, '-', '_', '.', '~', starting
// with a letter or digit, at most 128 bytes); others become '-'.
func safeName(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case i > 0 && (c == '-' || c == '_' || c == '.' || c == '~'):
		default:
			b[i] = '-'
		}
	}
	if len(b) > 100 {
		b = b[:100]
	}
	if len(b) == 0 || b[0] == '-' {
		b = append([]byte("s"), b...)
	}
	return string(b)
}

// line writes one line of YAML with its trailing comment; both pass
// through printable, so that nothing read from a trace (a service name, a
// file name, a span's name in a note) can end the line and write YAML of
// its own.
func (w *writer) line(indent int, text, comment string) {
	if indent < 0 {
		return // summary only
	}
	s := strings.Repeat("  ", indent) + printable(text)
	if comment != "" {
		s += strings.Repeat(" ", max(1, commentCol-len([]rune(s)))) + "# " + printable(comment)
	}
	w.b.WriteString(s + "\n")
}

func (w *writer) comment(indent int, text string) {
	w.b.WriteString(strings.Repeat("  ", indent) + "# " + printable(text) + "\n")
}

// summary adds a line to the summary shown on the terminal, printable:
// no control sequence of a trace's reaches it.
func (w *writer) summary(head, text string) {
	w.sums[head] = append(w.sums[head], printable(text))
}

// printable escapes what could end a line or drive a terminal in text
// taken from input: control characters (C0, DEL, C1), Unicode's line and
// paragraph separators and invalid UTF-8, each as \xNN or \uNNNN; the
// rest is kept.
func printable(text string) string {
	clean := true
	for _, r := range text {
		if unprintable(r) {
			clean = false
			break
		}
	}
	if clean {
		return text
	}
	var b strings.Builder
	for i, r := range text {
		switch {
		case r == utf8.RuneError && invalidAt(text, i):
			fmt.Fprintf(&b, "\\x%02x", text[i])
		case unprintable(r):
			if r < 0x100 {
				fmt.Fprintf(&b, "\\x%02x", r)
			} else {
				fmt.Fprintf(&b, "\\u%04x", r)
			}
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// unprintable reports whether r must not be written as it is.
func unprintable(r rune) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == 0x2028 || r == 0x2029 || r == utf8.RuneError
}

// invalidAt reports whether text holds an invalid UTF-8 byte at i.
func invalidAt(text string, i int) bool {
	r, n := utf8.DecodeRuneInString(text[i:])
	return r == utf8.RuneError && n == 1
}

// summaryText lists what was inferred, then what was not.
func (w *writer) summaryText() string {
	var b strings.Builder
	for _, head := range []string{"inferred", "not inferred"} {
		if len(w.sums[head]) == 0 {
			continue
		}
		b.WriteString(head + ":\n")
		for _, t := range w.sums[head] {
			b.WriteString("  - " + t + "\n")
		}
	}
	return b.String()
}

func (w *writer) service(s *Service, opt WriteOptions) {
	w.line(1, "- name: "+yamlString(w.name(s.Name)), fmt.Sprintf("observed: %d attempts (server spans), %d succeeded", s.Attempts, s.OK))
	workers := max(4, 2*s.Peak)
	w.line(2, fmt.Sprintf("workers: %d", workers), fmt.Sprintf("assumed: 2x the %d attempts seen at once", s.Peak))
	w.summary("not inferred", fmt.Sprintf("%s: workers and queue are not visible (own time includes any queueing); workers set to %d, queue unbounded", s.Name, workers))
	w.ownTime(s, opt)
	if s.OwnErrors > 0 && s.Attempts > 0 {
		rate := round3(float64(s.OwnErrors) / float64(s.Attempts))
		w.line(2, "error_rate: "+strconv.FormatFloat(rate, 'f', -1, 64), fmt.Sprintf("observed: %d of %d attempts failed before any call", s.OwnErrors, s.Attempts))
		if s.Class != Error {
			w.line(2, "error_class: "+s.Class.String(), "observed: the commonest class of those failures")
		}
		w.summary("inferred", fmt.Sprintf("%s: error rate %.3g (%s), from failed attempts that made no downstream call (rejections look the same)", s.Name, rate, s.Class))
	}
	if len(s.Steps) == 0 {
		return
	}
	w.line(2, "calls:", fmt.Sprintf("observed: the structure of %.0f %% of successful attempts", 100*s.Share))
	for _, st := range s.Steps {
		if len(st) == 1 {
			w.member(3, "- ", st[0], s.Edges[st[0].To])
			continue
		}
		w.line(3, "- parallel:", "observed: these calls overlap in time")
		names := make([]string, len(st))
		for i, mb := range st {
			w.member(5, "- ", mb, s.Edges[mb.To])
			names[i] = mb.To
		}
		w.summary("inferred", fmt.Sprintf("%s: parallel group [%s]", s.Name, strings.Join(names, ", ")))
	}
}

func (w *writer) member(indent int, dash string, mb Member, e *Edge) {
	w.line(indent, dash+"to: "+yamlString(w.name(mb.To)), "")
	if mb.Fanout > 1 {
		w.line(indent+1, fmt.Sprintf("fanout: %d", mb.Fanout), "observed: identical calls at once")
	}
	if e != nil {
		w.edgePolicy(indent+1, e)
	}
}

// edgePolicy writes the timeout, retry and hedge seen on an edge.
func (w *writer) edgePolicy(indent int, e *Edge) {
	name := e.From + "→" + e.To
	if len(e.GaveUp) > 0 {
		t := roundDur(median(e.GaveUp))
		w.line(indent, "timeout: "+t.String(), fmt.Sprintf("observed: median of %d attempts that hit their deadline", len(e.GaveUp)))
		w.summary("inferred", fmt.Sprintf("%s: timeout %v from %d attempts ending in deadline exceeded", name, t, len(e.GaveUp)))
	} else {
		w.summary("not inferred", fmt.Sprintf("%s: no timeout visible (no attempt ended on its deadline)", name))
	}
	retries := 0
	for _, n := range e.Retried {
		retries += n
	}
	if retries == 0 {
		failed := 0
		for _, n := range e.Failed {
			failed += n
		}
		w.summary("not inferred", fmt.Sprintf("no retry policy visible on %s: retries 0 observed in %d calls (%d failed attempts)", name, e.Calls, failed))
	} else {
		maxAtt := e.MaxAttempts
		var on []string
		for _, c := range sortedKeys(e.Retried) {
			if c != OK && c != Cancelled {
				on = append(on, c.String())
			}
		}
		bo, boNote := backoff(e)
		w.line(indent, fmt.Sprintf("retry: {max_attempts: %d, on: [%s], backoff: %s}", maxAtt, strings.Join(on, ", "), bo),
			fmt.Sprintf("observed: %d retries in %d calls", retries, e.Calls))
		w.summary("inferred", fmt.Sprintf("%s: retry up to %d attempts (the most observed; calls by attempts: %s) on [%s]; %s", name, maxAtt, perCall(e.PerCall), strings.Join(on, ", "), boNote))
	}
	if e.Hedged > 0 {
		d := roundDur(median(e.HedgeDelays))
		w.line(indent, fmt.Sprintf("hedge: {delay: %v, max_attempts: %d}", d, e.HedgeMax), fmt.Sprintf("observed: %d calls sent an attempt while one was in flight", e.Hedged))
		w.summary("inferred", fmt.Sprintf("%s: hedge after %v (median), up to %d attempts", name, d, e.HedgeMax))
	}
}

// immediate is the median wait below which retries are taken as sent at
// once (backoff 0): the time a caller needs to send the next attempt.
const immediate = time.Millisecond

// backoff reads the retry waits: gaps that vary (CV > 0.35) are full
// jitter, whose mean is half the exponential value; steady ones are no
// jitter. The multiplier is the ratio of second to first waits when five
// or more second retries were seen, else the default 2.
func backoff(e *Edge) (yaml, note string) {
	g1 := seconds(e.Gaps1)
	mean1, sd1 := meanSD(g1)
	jitter, initial := "none", median(e.Gaps1)
	if len(g1) >= 2 && mean1 > 0 && sd1/mean1 > 0.35 {
		jitter, initial = "full", time.Duration(2*mean1*float64(time.Second))
	}
	initial = roundDur(initial)
	if median(e.Gaps1) < immediate {
		// Waits this short are the caller's own work between attempts.
		jitter, initial = "none", 0
	}
	mult := 2.0
	multNote := "multiplier 2 assumed (fewer than 5 second retries)"
	if mean2, _ := meanSD(seconds(e.Gaps2)); len(e.Gaps2) >= 5 && mean1 > 0 {
		mult = max(1, math.Round(10*mean2/mean1)/10)
		multNote = fmt.Sprintf("multiplier %.1f from %d second retries", mult, len(e.Gaps2))
	}
	yaml = fmt.Sprintf("{initial: %v, multiplier: %s, jitter: %s}", initial, strconv.FormatFloat(mult, 'f', -1, 64), jitter)
	cv := 0.0
	if mean1 > 0 {
		cv = sd1 / mean1
	}
	return yaml, fmt.Sprintf("backoff initial %v, jitter %s (first-retry waits: %d, CV %.2f), %s", initial, jitter, len(g1), cv, multNote)
}

// ownTime writes the service time: a lognormal fit when it passes, else
// the samples as an empirical distribution.
func (w *writer) ownTime(s *Service, opt WriteOptions) {
	if len(s.Own) == 0 {
		w.line(2, "service_time: {dist: constant, value: 1ms}", "assumed: no successful attempt to measure")
		w.summary("not inferred", s.Name+": own time (no successful attempt); 1ms assumed")
		return
	}
	f := FitLognormal(s.Own)
	fitNote := fmt.Sprintf("KS distance %.3f, accepted ≤ %.3f", f.KS, f.Critical)
	if f.N >= 1 && f.Sigma <= 1e-3 && f.Zero == 0 {
		v := roundDur(median(s.Own))
		w.line(2, "service_time: {dist: constant, value: "+v.String()+"}", fmt.Sprintf("observed: own time of %d attempts, all %v", f.N, v))
		w.summary("inferred", fmt.Sprintf("%s: own time constant %v", s.Name, v))
		return
	}
	if f.Good() || opt.SamplesPrefix == "" {
		p50, p99 := roundDur(f.Quantile(0.5)), roundDur(f.Quantile(0.99))
		if p99 <= p50 {
			p99 = p50 + time.Microsecond
		}
		w.line(2, fmt.Sprintf("service_time: {dist: lognormal, p50: %v, p99: %v}", p50, p99), fmt.Sprintf("observed: own time of %d attempts, lognormal fit", f.N))
		w.comment(2, "fit error: "+fitNote)
		how := "fitted lognormal"
		if !f.Good() {
			how = "lognormal that fits badly (no --out for an empirical file)"
		}
		w.summary("inferred", fmt.Sprintf("%s: own time %s p50 %v p99 %v (%s, %d samples)", s.Name, how, p50, p99, fitNote, f.N))
		return
	}
	path := opt.SamplesPrefix + "." + w.name(s.Name) + ".ms"
	base := path[strings.LastIndexAny(path, `/\`)+1:]
	samples := slices.Clone(s.Own)
	slices.Sort(samples)
	if len(samples) > maxSamples {
		thin := make([]time.Duration, maxSamples)
		for i := range thin {
			thin[i] = samples[i*len(samples)/maxSamples]
		}
		samples = thin
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# own time of %s in ms, one successful attempt a line (%d of %d kept)\n", printable(s.Name), len(samples), len(s.Own))
	for _, d := range samples {
		b.WriteString(strconv.FormatFloat(float64(d)/1e6, 'f', 3, 64) + "\n")
	}
	w.out.Samples[path] = []byte(b.String())
	w.line(2, "service_time: {dist: empirical, file: "+yamlString(base)+"}", fmt.Sprintf("observed: own time of %d attempts", f.N))
	why := "a lognormal does not fit: " + fitNote
	if f.N < 20 {
		why = fmt.Sprintf("too few samples to fit a lognormal (%d < 20)", f.N)
	}
	w.comment(2, why)
	w.summary("inferred", fmt.Sprintf("%s: own time empirical (%d samples in %s; %s)", s.Name, len(samples), base, why))
}

// perCall formats calls by attempts: "1×1290, 2×140, 3×8".
func perCall(n map[int]int) string {
	var parts []string
	for _, k := range sortedKeys(n) {
		parts = append(parts, fmt.Sprintf("%d×%d", k, n[k]))
	}
	return strings.Join(parts, ", ")
}

func seconds(d []time.Duration) []float64 {
	out := make([]float64, len(d))
	for i, v := range d {
		out[i] = v.Seconds()
	}
	return out
}

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// roundDur keeps three significant figures or so: µs below 10ms, 10µs
// below 100ms, 100µs below 1s, ms above.
func roundDur(d time.Duration) time.Duration {
	switch {
	case d < 10*time.Millisecond:
		return d.Round(time.Microsecond)
	case d < 100*time.Millisecond:
		return d.Round(10 * time.Microsecond)
	case d < time.Second:
		return d.Round(100 * time.Microsecond)
	}
	return d.Round(time.Millisecond)
}

func roundUp(d, unit time.Duration) time.Duration {
	return (d + unit - 1) / unit * unit
}

func round3(x float64) float64 {
	if x == 0 {
		return 0
	}
	p := math.Pow(10, 2-math.Floor(math.Log10(math.Abs(x))))
	return math.Round(x*p) / p
}

// yamlString quotes a name when YAML would read it as something else.
func yamlString(s string) string {
	if s == "" || strings.ContainsAny(s, ":#{}[],&*!|>'\"%@`\n\t\\") || strings.TrimSpace(s) != s ||
		slices.Contains([]string{"true", "false", "yes", "no", "null", "~", "on", "off"}, strings.ToLower(s)) {
		return strconv.Quote(s)
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return strconv.Quote(s)
	}
	return s
}
