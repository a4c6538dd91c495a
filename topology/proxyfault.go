package topology

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/stormsim/stormsim/policies"
)

// ProxyFault is one per-request fault of the fault proxy (`stormsim proxy`,
// and the proxy `stormsim audit` puts in front of every instance), written
// in the scenario's fault vocabulary: a window [At, At+For) counted from
// the proxy's start (For 0: to the end), the requests it applies to
// (Method, and Path as a prefix; empty: all), and what happens to each.
//
// The probabilities are those of disjoint outcomes of one draw per
// request and fault, in this order: reset_before, blackhole, error_rate,
// reset_after, drop_response; they sum to at most 1. latency_add and
// latency_reply apply to every matching request in the window, as the
// scenario's latency_add applies to every service time.
type ProxyFault struct {
	At     time.Duration `yaml:"at"`
	For    time.Duration `yaml:"for"`
	Method string        `yaml:"method,omitempty"`
	Path   string        `yaml:"path,omitempty"`
	// LatencyAdd delays the request before it is forwarded; LatencyReply
	// delays the answer after the upstream gave it.
	LatencyAdd   time.Duration `yaml:"latency_add,omitempty"`
	LatencyReply time.Duration `yaml:"latency_reply,omitempty"`
	// DropResponse is the probability that a reply is lost after the work
	// is done: the request is forwarded, the upstream's whole answer read,
	// and then not delivered. Drop says how: close the connection (default)
	// or hold it, unanswered, until the client gives up.
	DropResponse float64  `yaml:"drop_response,omitempty"`
	Drop         DropMode `yaml:"drop,omitempty"`
	// ResetBefore resets the client's connection before forwarding (the
	// upstream never saw the request); ResetAfter after the upstream
	// answered (it did the work).
	ResetBefore float64 `yaml:"reset_before,omitempty"`
	ResetAfter  float64 `yaml:"reset_after,omitempty"`
	// ErrorRate answers 503 without forwarding, with Retry-After when
	// RetryAfter > 0 (whole seconds, rounded up).
	ErrorRate  float64       `yaml:"error_rate,omitempty"`
	RetryAfter time.Duration `yaml:"retry_after,omitempty"`
	// Blackhole neither forwards nor answers: the connection is held until
	// the client gives up.
	Blackhole float64 `yaml:"blackhole,omitempty"`
}

// DropMode is how a dropped reply is not delivered: close or hold.
type DropMode string

// The drop modes.
const (
	DropClose DropMode = "close"
	DropHold  DropMode = "hold"
)

// UnmarshalText accepts the drop modes.
func (m *DropMode) UnmarshalText(text []byte) error {
	return policies.ParseName("drop mode", []DropMode{DropClose, DropHold}, text, m)
}

// ProxyFaults is a fault proxy's fault file: the seed of its stream of
// per-request draws and its faults.
type ProxyFaults struct {
	Seed   uint64       `yaml:"seed"`
	Faults []ProxyFault `yaml:"faults"`
}

// ParseProxyFaults decodes a fault proxy's fault file strictly and
// validates it as a scenario's faults are: problems name name, the line
// and the field ("faults.yaml:3: faults[0].drop_response: must be in
// [0, 1], got 1.5"). An omitted seed is DefaultSeed; an omitted drop mode
// is close.
func ParseProxyFaults(name string, data []byte) (*ProxyFaults, error) {
	file := name
	if file == "" {
		file = "faults"
	}
	pf := &ProxyFaults{}
	v, probs := decodeDocument(file, data, pf)
	if v == nil {
		return nil, probs
	}
	if pf.Seed == 0 {
		pf.Seed = DefaultSeed
	}
	for i := range pf.Faults {
		v.proxyFault(&pf.Faults[i], fmt.Sprintf("faults[%d]", i))
	}
	if probs = append(probs, v.probs...); len(probs) > 0 {
		return nil, capProblems(file, sortProblems(file, nil, probs), v.d.more+v.more)
	}
	return pf, nil
}

// decodeDocument parses data and decodes it strictly into out (a pointer
// to a struct), returning a validator over what it decoded, whose problems
// name file, or nil and the problems when data is not YAML.
func decodeDocument(file string, data []byte, out any) (*validator, Problems) {
	root, probs := parseYAML(file, data)
	if root == nil {
		return nil, probs
	}
	d := newDecoder(file, nil)
	d.decode(root, reflect.ValueOf(out).Elem(), "", 0)
	v := &validator{d: d, sc: &Scenario{File: file}, broken: make(map[string]bool)}
	for _, p := range d.probs {
		v.broken[p.Path] = true
	}
	return v, d.probs
}

// proxyFault validates one proxy fault at path p and fills its default.
func (v *validator) proxyFault(f *ProxyFault, p string) {
	v.nonNegative(p+".at", f.At)
	v.nonNegative(p+".for", f.For)
	v.nonNegative(p+".latency_add", f.LatencyAdd)
	v.nonNegative(p+".latency_reply", f.LatencyReply)
	v.nonNegative(p+".retry_after", f.RetryAfter)
	if f.Drop == "" {
		f.Drop = DropClose
	}
	sum, ok := 0.0, true
	for _, q := range []struct {
		key string
		x   float64
	}{{"reset_before", f.ResetBefore}, {"blackhole", f.Blackhole}, {"error_rate", f.ErrorRate}, {"reset_after", f.ResetAfter}, {"drop_response", f.DropResponse}} {
		ok = v.probability(p+"."+q.key, q.x) && ok
		sum += q.x
	}
	if ok && sum > 1+1e-9 {
		v.add(p, "reset_before, blackhole, error_rate, reset_after and drop_response are outcomes of one draw: they sum to %v, more than 1", sum)
	}
	if f.Path != "" && !strings.HasPrefix(f.Path, "/") {
		v.add(p+".path", "a path prefix starts with /, got %q", Shorten(f.Path))
	}
	if f.Method != "" && strings.ToUpper(f.Method) != f.Method {
		v.add(p+".method", "methods are upper case, got %q", Shorten(f.Method))
	}
	if f.RetryAfter > 0 && f.ErrorRate == 0 {
		v.add(p+".retry_after", "applies to error_rate's 503s, and error_rate is 0")
	}
	if v.given(p+".drop") && f.DropResponse == 0 {
		v.add(p+".drop", "applies to drop_response, and drop_response is 0")
	}
}
