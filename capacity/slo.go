package capacity

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/topology"
)

// Op is the comparison of an SLO term: the metric must be Op the threshold.
type Op int

// The comparisons an SLO term can make.
const (
	Less Op = iota
	LessEqual
	Greater
	GreaterEqual
)

// String returns the operator as an SLO expression spells it.
func (o Op) String() string {
	switch o {
	case Less:
		return "<"
	case LessEqual:
		return "<="
	case Greater:
		return ">"
	case GreaterEqual:
		return ">="
	}
	return fmt.Sprintf("Op(%d)", int(o))
}

// upper reports whether the threshold is an upper limit (the metric must
// stay below it).
func (o Op) upper() bool { return o == Less || o == LessEqual }

// satisfied reports whether v Op threshold.
func (o Op) satisfied(v, threshold float64) bool {
	switch o {
	case Less:
		return v < threshold
	case LessEqual:
		return v <= threshold
	case Greater:
		return v > threshold
	case GreaterEqual:
		return v >= threshold
	}
	return false
}

// unit is how a metric's values are read, written and compared.
type unit int

const (
	unitMs       unit = iota // latency in milliseconds; thresholds are durations or ms
	unitFraction             // a share in [0, 1]; thresholds are percentages or fractions
	unitRate                 // per second
	unitRatio                // a plain number (amplification, queue length)
)

// metricDef describes one metric an SLO can name.
type metricDef struct {
	unit unit
	// service marks metrics that need a service name (db.utilization).
	service bool
	doc     string
}

// metricDefs are the metrics an SLO term can name; service metrics are
// written SERVICE.metric.
var metricDefs = map[string]metricDef{
	"p50":           {unit: unitMs, doc: "median end-to-end latency of succeeded requests"},
	"p90":           {unit: unitMs, doc: "90th percentile end-to-end latency"},
	"p99":           {unit: unitMs, doc: "99th percentile end-to-end latency"},
	"p999":          {unit: unitMs, doc: "99.9th percentile end-to-end latency"},
	"mean":          {unit: unitMs, doc: "mean end-to-end latency"},
	"max":           {unit: unitMs, doc: "largest end-to-end latency"},
	"success":       {unit: unitFraction, doc: "share of offered requests that succeeded"},
	"failed":        {unit: unitFraction, doc: "share of offered requests that failed"},
	"unknown":       {unit: unitFraction, doc: "share of offered requests whose outcome was unknown"},
	"goodput":       {unit: unitRate, doc: "succeeded requests per second"},
	"amplification": {unit: unitRatio, doc: "largest attempts per offered request at any service"},

	"utilization":   {unit: unitFraction, service: true, doc: "busy share of the service's workers"},
	"queue":         {unit: unitRatio, service: true, doc: "mean queue length"},
	"queue_max":     {unit: unitRatio, service: true, doc: "largest queue length"},
	"attempts":      {unit: unitRatio, service: true, doc: "the service's amplification: attempts per offered request"},
	"service_p50":   {unit: unitMs, service: true, doc: "median attempt latency at the service"},
	"service_p99":   {unit: unitMs, service: true, doc: "99th percentile attempt latency at the service"},
	"rejected_rate": {unit: unitFraction, service: true, doc: "share of the service's attempts rejected"},
}

// serviceAliases are other spellings of service metrics.
var serviceAliases = map[string]string{
	"amplification": "attempts",
	"p50":           "service_p50",
	"p99":           "service_p99",
	"queue_mean":    "queue",
	"rejected":      "rejected_rate",
}

// Population is which logical requests a run-wide latency term is over.
type Population int

// The populations a latency term can name: p99 or p99(ok) is over the
// succeeded requests (what latency_ms holds); p99(all) over every offered
// request, a failed or unknown one at its time to failure (latency_all_ms).
const (
	Succeeded Population = iota
	AllRequests
)

// String is the population as a report labels it.
func (p Population) String() string {
	if p == AllRequests {
		return "all requests"
	}
	return "succeeded requests"
}

// Term is one condition of an SLO, such as p99<300ms or db.utilization<0.8.
type Term struct {
	// Service is set for per-service metrics (db in db.utilization).
	Service string
	// Metric names the metric (p99, success, utilization, …).
	Metric string
	// Population is which requests a run-wide latency is over: Succeeded
	// (the default, also written p99(ok)) or AllRequests (p99(all)).
	Population Population
	Op         Op
	// Threshold is in the metric's unit: milliseconds for latencies, a
	// fraction in [0, 1] for shares, requests per second for goodput.
	Threshold float64
	// Text is the term as written.
	Text string
}

// String returns the term in canonical form, e.g. "p99<300ms".
func (t Term) String() string {
	return t.Name() + t.Op.String() + formatValue(t.unit(), t.Threshold)
}

// Name returns the metric's name as the term writes it (db.utilization,
// p99(all)).
func (t Term) Name() string {
	if t.Service != "" {
		return t.Service + "." + t.Metric
	}
	if t.Population == AllRequests {
		return t.Metric + "(all)"
	}
	return t.Metric
}

// IsLatency reports whether the term is a run-wide latency, whose
// population (Population) a report must say.
func (t Term) IsLatency() bool { return t.Service == "" && t.unit() == unitMs }

func (t Term) unit() unit { return metricDefs[t.Metric].unit }

// Format writes a value of the term's metric in its natural unit.
func (t Term) Format(v float64) string { return formatValue(t.unit(), v) }

// Upper reports whether the threshold is an upper limit (<, <=).
func (t Term) Upper() bool { return t.Op.upper() }

// Satisfied reports whether the value v meets the term.
func (t Term) Satisfied(v float64) bool { return t.Op.satisfied(v, t.Threshold) }

// Value reads the term's metric from a run summary. A latency of a run in
// which nothing succeeded is +Inf, not the summary's 0, so that a collapsed
// system never meets a latency objective. It fails when the term names a
// service the summary does not have.
func (t Term) Value(s *metrics.Summary) (float64, error) {
	offered := float64(s.Requests.Offered)
	share := func(n int64) float64 {
		if offered == 0 {
			return 0
		}
		return float64(n) / offered
	}
	lat := func(v float64) float64 {
		if s.Requests.Succeeded == 0 {
			return math.Inf(1)
		}
		return v
	}
	latency := &s.LatencyMs
	if t.Service == "" && t.Population == AllRequests {
		if latency = s.LatencyAllMs; latency == nil {
			if s.Requests.Offered == 0 {
				return math.Inf(1), nil
			}
			return 0, fmt.Errorf("slo: term %q: the result has no latency over all requests (latency_all_ms: the simulator records it; load mode does not yet): use %s over the succeeded ones", t.Text, t.Metric)
		}
		lat = func(v float64) float64 {
			if latency.Count == 0 {
				return math.Inf(1)
			}
			return v
		}
	}
	if t.Service == "" {
		switch t.Metric {
		case "p50":
			return lat(latency.P50), nil
		case "p90":
			return lat(latency.P90), nil
		case "p99":
			return lat(latency.P99), nil
		case "p999":
			return lat(latency.P999), nil
		case "mean":
			return lat(latency.Mean), nil
		case "max":
			return lat(latency.Max), nil
		case "success":
			return share(s.Requests.Succeeded), nil
		case "failed":
			return share(s.Requests.Failed), nil
		case "unknown":
			return share(s.Requests.Unknown), nil
		case "goodput":
			return s.GoodputRPS, nil
		case "amplification":
			return s.Amplification, nil
		}
		return 0, fmt.Errorf("slo: term %q: unknown metric %q", t.Text, t.Metric)
	}
	for i := range s.Services {
		svc := &s.Services[i]
		if svc.Name != t.Service {
			continue
		}
		svcLat := func(v float64) float64 {
			if svc.Succeeded == 0 {
				return math.Inf(1)
			}
			return v
		}
		switch t.Metric {
		case "utilization":
			return svc.Utilization, nil
		case "queue":
			return svc.QueueMean, nil
		case "queue_max":
			return float64(svc.QueueMax), nil
		case "attempts":
			return svc.Amplification, nil
		case "service_p50":
			return svcLat(svc.LatencyMs.P50), nil
		case "service_p99":
			return svcLat(svc.LatencyMs.P99), nil
		case "rejected_rate":
			if svc.Attempts == 0 {
				return 0, nil
			}
			return float64(svc.Rejected) / float64(svc.Attempts), nil
		}
		return 0, fmt.Errorf("slo: term %q: unknown service metric %q", t.Text, t.Metric)
	}
	return 0, fmt.Errorf("slo: term %q: the run has no service %q", t.Text, t.Service)
}

// SLO is a conjunction of terms: it holds when every term holds.
type SLO []Term

// String returns the SLO in canonical form, terms joined by commas.
func (s SLO) String() string {
	parts := make([]string, len(s))
	for i, t := range s {
		parts[i] = t.String()
	}
	return strings.Join(parts, ",")
}

// Holds reports whether every term holds for the summary, and the terms
// that do not.
func (s SLO) Holds(sum *metrics.Summary) (bool, []Term, error) {
	var broken []Term
	for _, t := range s {
		v, err := t.Value(sum)
		if err != nil {
			return false, nil, err
		}
		if !t.Satisfied(v) {
			broken = append(broken, t)
		}
	}
	return len(broken) == 0, broken, nil
}

// Check reports a term naming a service the scenario does not have.
func (s SLO) Check(sc *topology.Scenario) error {
	for i, t := range s {
		if t.Service == "" || sc.Service(t.Service) != nil {
			continue
		}
		names := make([]string, len(sc.Services))
		for j, svc := range sc.Services {
			names[j] = svc.Name
		}
		return fmt.Errorf("slo: term %d %q: scenario %s has no service %q (services: %s)", i+1, t.Text, sc.Name, t.Service, strings.Join(names, ", "))
	}
	return nil
}

// ParseSLO parses an SLO expression: terms separated by commas, each
// METRIC OP THRESHOLD with OP one of <, <=, >, >= (also ≤ and ≥). Metrics
// are p50, p90, p99, p999, mean, max (thresholds as durations, 300ms, or
// bare milliseconds; over the succeeded requests, or, written p99(all),
// over every request with failed ones at their time to failure), success, failed, unknown (percentages, 99.9%, or
// fractions), goodput (requests per second, optionally with /s) and
// amplification; per-service metrics are written SERVICE.METRIC with
// METRIC one of utilization, queue, queue_max, attempts (alias
// amplification), p50, p99 and rejected. An error names the bad term.
func ParseSLO(expr string) (SLO, error) {
	if strings.TrimSpace(expr) == "" {
		return nil, errors.New("slo: empty expression (want e.g. p99<300ms,success>=99.9%)")
	}
	var out SLO
	for i, raw := range strings.Split(expr, ",") {
		t, err := parseTerm(strings.TrimSpace(raw))
		if err != nil {
			return nil, fmt.Errorf("slo %q: term %d %q: %w", expr, i+1, strings.TrimSpace(raw), err)
		}
		out = append(out, t)
	}
	return out, nil
}

// ops in match order: two-character operators first.
var ops = []struct {
	text string
	op   Op
}{{"<=", LessEqual}, {">=", GreaterEqual}, {"≤", LessEqual}, {"≥", GreaterEqual}, {"<", Less}, {">", Greater}}

func parseTerm(s string) (Term, error) {
	if s == "" {
		return Term{}, errors.New("empty term")
	}
	at, opLen := -1, 0
	var op Op
	for _, o := range ops {
		if i := strings.Index(s, o.text); i >= 0 && (at < 0 || i < at) {
			at, opLen, op = i, len(o.text), o.op
		}
	}
	if at < 0 {
		if strings.Contains(s, "=") {
			return Term{}, errors.New("no comparison: use <, <=, > or >= (= alone is not allowed)")
		}
		return Term{}, errors.New("no comparison: want METRIC<VALUE, e.g. p99<300ms")
	}
	name := strings.TrimSpace(s[:at])
	val := strings.TrimSpace(s[at+opLen:])
	t := Term{Op: op, Text: s}
	if name == "" {
		return Term{}, errors.New("missing metric before the comparison")
	}
	if strings.ContainsAny(val, "<>≤≥=") {
		return Term{}, errors.New("more than one comparison in the term")
	}
	if svc, m, ok := strings.Cut(name, "."); ok {
		if svc == "" || m == "" || strings.Contains(m, ".") {
			return Term{}, fmt.Errorf("metric %q: want SERVICE.METRIC, e.g. db.utilization", name)
		}
		if a, ok := serviceAliases[m]; ok {
			m = a
		}
		def, ok := metricDefs[m]
		if !ok || !def.service {
			return Term{}, fmt.Errorf("unknown service metric %q%s (want %s)", m, didYouMean(m, true), metricNames(true))
		}
		t.Service, t.Metric = svc, m
	} else {
		base, pop, err := cutPopulation(name)
		if err != nil {
			return Term{}, err
		}
		def, ok := metricDefs[base]
		if !ok || def.service {
			return Term{}, fmt.Errorf("unknown metric %q%s (want %s, or SERVICE.METRIC)", base, didYouMean(base, false), metricNames(false))
		}
		if pop != "" && def.unit != unitMs {
			return Term{}, fmt.Errorf("%s(%s): only the latencies (p50, p90, p99, p999, mean, max) are over a population of requests", base, pop)
		}
		t.Metric = base
		if pop == "all" {
			t.Population = AllRequests
		}
	}
	v, err := parseThreshold(t.unit(), val)
	if err != nil {
		return Term{}, fmt.Errorf("%s threshold %q: %w", t.Name(), val, err)
	}
	t.Threshold = v
	return t, nil
}

// cutPopulation splits "p99(all)" into "p99" and "all"; a name without
// parentheses has no population. The populations are all and ok.
func cutPopulation(name string) (base, pop string, err error) {
	base, rest, ok := strings.Cut(name, "(")
	if !ok {
		if strings.Contains(name, ")") {
			return "", "", fmt.Errorf("metric %q: want METRIC or METRIC(all), e.g. p99(all)", name)
		}
		return name, "", nil
	}
	pop, ok = strings.CutSuffix(strings.TrimSpace(rest), ")")
	base, pop = strings.TrimSpace(base), strings.TrimSpace(pop)
	if !ok || strings.ContainsAny(pop, "()") {
		return "", "", fmt.Errorf("metric %q: want METRIC or METRIC(all), e.g. p99(all)", name)
	}
	if pop != "all" && pop != "ok" {
		return "", "", fmt.Errorf("metric %q: population %q: want all (every request, failed ones at their time to failure) or ok (succeeded ones, the default)", name, pop)
	}
	return base, pop, nil
}

// didYouMean suggests the metric a mistyped one was meant to be.
func didYouMean(name string, service bool) string {
	if s := topology.Suggest(name, strings.Split(metricNames(service), ", ")); s != "" {
		return fmt.Sprintf(" (did you mean %s?)", s)
	}
	return ""
}

func metricNames(service bool) string {
	var names []string
	for _, n := range []string{"p50", "p90", "p99", "p999", "mean", "max", "success", "failed", "unknown", "goodput", "amplification"} {
		if !service {
			names = append(names, n)
		}
	}
	if service {
		names = []string{"utilization", "queue", "queue_max", "attempts", "p50", "p99", "rejected"}
	}
	return strings.Join(names, ", ")
}

func parseThreshold(u unit, s string) (float64, error) {
	if s == "" {
		return 0, errors.New("missing value")
	}
	num := func(s string) (float64, error) {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, fmt.Errorf("not a number")
		}
		return v, nil
	}
	switch u {
	case unitMs:
		if v, err := num(strings.TrimSuffix(s, "ms")); err == nil {
			if v < 0 {
				return 0, errors.New("must be ≥ 0")
			}
			return v, nil
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, errors.New("want a duration such as 300ms or 1.5s, or milliseconds")
		}
		if d < 0 {
			return 0, errors.New("must be ≥ 0")
		}
		return float64(d) / float64(time.Millisecond), nil
	case unitFraction:
		if p, ok := strings.CutSuffix(s, "%"); ok {
			v, err := num(strings.TrimSpace(p))
			if err != nil || v < 0 || v > 100 {
				return 0, errors.New("want a percentage from 0% to 100%")
			}
			return v / 100, nil
		}
		v, err := num(s)
		if err != nil || v < 0 || v > 1 {
			return 0, errors.New("want a percentage (99.9%) or a fraction from 0 to 1")
		}
		return v, nil
	case unitRate:
		v, err := num(strings.TrimSpace(strings.TrimSuffix(s, "/s")))
		if err != nil || v < 0 {
			return 0, errors.New("want requests per second ≥ 0, e.g. 500 or 500/s")
		}
		return v, nil
	default:
		v, err := num(strings.TrimSpace(strings.TrimSuffix(s, "x")))
		if err != nil || v < 0 {
			return 0, errors.New("want a number ≥ 0")
		}
		return v, nil
	}
}

// formatValue writes v in the unit's natural form, round-tripping through
// parseThreshold.
func formatValue(u unit, v float64) string {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return fmt.Sprint(v)
	}
	g := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
	switch u {
	case unitMs:
		return g(v) + "ms"
	case unitFraction:
		return g(roundSig(v*100, 12)) + "%"
	case unitRate:
		return g(v) + "/s"
	}
	return g(v)
}

// roundSig rounds x to sig significant digits, so 0.999·100 prints as 99.9.
func roundSig(x float64, sig int) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', sig, 64), 64)
	return v
}

// Report judges the SLO against a run's summary, term by term, for the
// summary's slo block (--slo on run, load and compare).
func (s SLO) Report(sum *metrics.Summary) (*metrics.SLOReport, error) {
	r := &metrics.SLOReport{Expr: s.String(), Met: true}
	for _, t := range s {
		v, err := t.Value(sum)
		if err != nil {
			return nil, err
		}
		rt := metrics.SLOTerm{Term: t.String(), Met: t.Satisfied(v), ValueText: "no data"}
		if t.IsLatency() {
			rt.Population = t.Population.String()
		}
		if !math.IsInf(v, 0) && !math.IsNaN(v) {
			rt.Value, rt.ValueText = &v, t.Format(roundSig(v, 4))
		}
		r.Met = r.Met && rt.Met
		r.Terms = append(r.Terms, rt)
	}
	return r, nil
}
