package paste

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/stormsim/stormsim/policies"
)

// Policies is what a pasted config sets on one call edge. Nil pointers and
// zero values are what the config does not set.
type Policies struct {
	// Retry is set when Retried.
	Retry   policies.RetryConfig
	Retried bool
	Hedge   *policies.HedgeConfig
	Budget  *policies.BudgetConfig
	// Timeout bounds each attempt (Envoy's per_try_timeout).
	Timeout time.Duration
	// HonorPushback and MaxPushback: the caller obeys the callee's
	// Retry-After (Envoy's rate_limited_retry_back_off).
	HonorPushback bool
	MaxPushback   time.Duration
	// Balance is an Envoy cluster's lb_policy as a stormsim balancer
	// (round_robin, random, p2c), "" when the cluster gives none.
	Balance string
	// Outlier is an Envoy cluster's outlier_detection, nil when it has
	// none; zero fields take stormsim's (Envoy's) defaults. From nginx:
	// max_fails and fail_timeout.
	Outlier *Outlier

	// The reverse proxies' configs (nginx_conf, haproxy_cfg) also set:

	// ConnectTimeout bounds an attempt's connect (proxy_connect_timeout,
	// timeout connect), 0 when the file leaves it unbounded or unset.
	ConnectTimeout time.Duration
	// MaxConn, when > 0, is each server's maxconn (HAProxy): the edge's
	// pool.size per replica, with QueueTimeout the wait for a slot before
	// the proxy answers 503 (queue_timeout; 0: unbounded).
	MaxConn      int
	QueueTimeout time.Duration
	// HoldMethods, when not nil, are the write methods not retried once
	// sent: Retry.HoldWrites is on for a workload whose write_method is
	// one of them (the loader decides, knowing the method).
	HoldMethods []string
	// Servers is the number of upstream servers the config lists (0: not
	// known); the callee must have as many replicas.
	Servers int
	// Note says which directives set the edge and which were ignored, by
	// name.
	Note string
}

// Outlier is the consecutive-failure part of Envoy's outlier_detection.
type Outlier struct {
	ConsecutiveFailures int
	Interval            time.Duration
	BaseEjectionTime    time.Duration
	MaxEjectionTime     time.Duration
	MaxEjectionPercent  float64
}

// Problem is one field of a pasted file that cannot be used.
type Problem struct {
	File  string
	Line  int
	Field string // dotted path inside the file, e.g. methodConfig[0].timeout
	Msg   string
}

func (p Problem) Error() string {
	loc := p.File
	if p.Line > 0 {
		loc += ":" + strconv.Itoa(p.Line)
	}
	if p.Field != "" {
		return fmt.Sprintf("%s: %s: %s", loc, p.Field, p.Msg)
	}
	return fmt.Sprintf("%s: %s", loc, p.Msg)
}

// Problems are all the problems of one file, in line order.
type Problems []Problem

func (ps Problems) Error() string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.Error()
	}
	return strings.Join(s, "\n")
}

// reader walks a parsed file and collects problems.
type reader struct {
	file  string
	probs Problems
}

func (r *reader) add(n *yaml.Node, field, format string, args ...any) {
	line := 0
	if n != nil {
		line = n.Line
	}
	r.probs = append(r.probs, Problem{File: r.file, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)})
}

func (r *reader) err() error { return r.probs.inLineOrder() }

// inLineOrder returns the problems sorted by line as an error, nil when
// there are none.
func (ps Problems) inLineOrder() error {
	if len(ps) == 0 {
		return nil
	}
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].Line < ps[j].Line })
	return ps
}

// parse reads YAML or JSON (JSON is YAML) into its top-level node.
func (r *reader) parse(data []byte) *yaml.Node {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		r.add(nil, "", "not YAML or JSON: %v", err)
		return nil
	}
	if len(doc.Content) == 0 {
		r.add(nil, "", "empty file")
		return nil
	}
	n := doc.Content[0]
	if n.Kind != yaml.MappingNode {
		r.add(n, "", "want an object at the top")
		return nil
	}
	return n
}

// fields returns a mapping's values by key. Keys outside known are reported
// as unsupported with why (the message for keys missing from why is the
// generic one). Duplicate keys are reported.
func (r *reader) fields(n *yaml.Node, path string, known []string, why map[string]string) map[string]*yaml.Node {
	out := map[string]*yaml.Node{}
	if n.Kind != yaml.MappingNode {
		r.add(n, path, "want an object")
		return out
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		f := join(path, fieldName(k.Value))
		switch {
		case out[k.Value] != nil:
			r.add(k, f, "given twice")
		case contains(known, k.Value):
			out[k.Value] = v
		case why[k.Value] != "":
			r.add(k, f, "not supported: %s", why[k.Value])
		default:
			r.add(k, f, "not supported: stormsim does not model it (supported here: %s)", strings.Join(known, ", "))
		}
	}
	return out
}

// A pasted file may be anything (a credentials file pasted by mistake):
// what it holds is quoted in a problem only when it reads as a config's
// word, a field name or a short value. The rest is described, not shown.
const maxShown = 64

// plain reports whether s is at most maxShown bytes of letters, digits
// and _ . + - (and, with colons, ':'), as config keys and values are.
func plain(s string, colons bool) bool {
	if s == "" || len(s) > maxShown {
		return false
	}
	for _, c := range []byte(s) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '_' || c == '.' || c == '+' || c == '-':
		case c == ':' && colons:
		default:
			return false
		}
	}
	return true
}

// shown is a value of the file as a problem quotes it: quoted when plain,
// else only its size.
func shown(s string) string {
	if plain(s, true) {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("a value of %d bytes (not shown: it is no config value)", len(s))
}

// fieldName is a key of the file as a problem's path names it: itself when
// it reads as a field name, else a placeholder.
func fieldName(k string) string {
	if plain(k, false) {
		return k
	}
	return fmt.Sprintf("<a key of %d bytes, not shown>", len(k))
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func (r *reader) str(n *yaml.Node, path string) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		r.add(n, path, "want a string")
		return "", false
	}
	return n.Value, true
}

func (r *reader) number(n *yaml.Node, path string) (float64, bool) {
	if n.Kind == yaml.ScalarNode && (n.Tag == "!!int" || n.Tag == "!!float" || n.Tag == "!!str") {
		// Protobuf JSON allows numbers as strings.
		if x, err := strconv.ParseFloat(n.Value, 64); err == nil && !math.IsNaN(x) && !math.IsInf(x, 0) {
			return x, true
		}
	}
	r.add(n, path, "want a number, got %s", shown(n.Value))
	return 0, false
}

func (r *reader) integer(n *yaml.Node, path string, lo, hi int) (int, bool) {
	x, ok := r.number(n, path)
	if !ok {
		return 0, false
	}
	if x != math.Trunc(x) || x < float64(lo) || x > float64(hi) {
		r.add(n, path, "want a whole number in [%d, %d], got %s", lo, hi, shown(n.Value))
		return 0, false
	}
	return int(x), true
}

// maxDurationS is the longest pasted duration, in seconds: topology's
// MaxDuration, 10000h (paste is below topology, which checks it again).
const maxDurationS = 10000 * 3600

// protoDuration reads a protobuf JSON Duration: decimal seconds with an
// "s" suffix ("0.1s", "1.5s"), as gRPC service configs and Envoy's JSON
// write them. Envoy YAML writes the same form.
func (r *reader) protoDuration(n *yaml.Node, path string) (time.Duration, bool) {
	s, ok := r.str(n, path)
	if !ok {
		return 0, false
	}
	num, found := strings.CutSuffix(s, "s")
	x, err := strconv.ParseFloat(num, 64)
	if !found || err != nil || math.IsNaN(x) || x < 0 {
		r.add(n, path, "want a duration in seconds like \"0.25s\", got %s", shown(s))
		return 0, false
	}
	// Protobuf allows 10,000 years; a Duration holds 292, and stormsim's
	// scenarios at most 10000h (topology.MaxDuration, checked later).
	if x > maxDurationS {
		r.add(n, path, "want at most %gs (10000h), got %s", float64(maxDurationS), shown(s))
		return 0, false
	}
	return time.Duration(math.Round(x * 1e9)), true
}

func (r *reader) list(n *yaml.Node, path string) []*yaml.Node {
	if n.Kind != yaml.SequenceNode {
		r.add(n, path, "want a list")
		return nil
	}
	return n.Content
}

// classes turns the outcome classes a list of codes maps to into the sorted
// names a RetryConfig.On holds.
func classes(set map[policies.Outcome]bool) []policies.RetryClass {
	var out []policies.RetryClass
	for o := policies.Outcome(0); o < 16; o++ {
		if set[o] {
			out = append(out, policies.RetryClass(o.String()))
		}
	}
	return out
}
