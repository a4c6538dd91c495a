package topology

import (
	"bytes"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/stormsim/stormsim/inputfile"
)

// Load reads, overrides, decodes, defaults and validates a scenario file.
// sets are --set overrides ("services.db.workers=4"), applied in order.
// Problems with the file or the overrides come back together as Problems.
func Load(path string, sets []string) (*Scenario, error) {
	data, err := inputfile.Read(path, MaxFileSize)
	if err != nil {
		return nil, fmt.Errorf("topology: %w", err)
	}
	return Parse(path, data, sets)
}

// MaxFileSize bounds a scenario or policy file: far above any scenario a
// person writes (thousands of services or variants fit in a few MiB), far
// below what would exhaust memory while decoding.
const MaxFileSize = 16 << 20

// Parse does what Load does for in-memory YAML; name is used in error
// positions and its directory anchors relative empirical sample files.
func Parse(name string, data []byte, sets []string) (*Scenario, error) {
	file := name
	if file == "" {
		file = "scenario" // problems always name a source
	}
	root, probs := parseYAML(file, data)
	if root == nil {
		return nil, probs
	}
	origin := make(map[*yaml.Node]string)
	for _, s := range sets {
		if err := applySet(root, s, origin); err != nil {
			probs = append(probs, Problem{File: "--set " + s, Msg: err.Error()})
		}
	}
	sc := &Scenario{File: name}
	d := newDecoder(file, origin)
	d.decode(root, reflect.ValueOf(sc).Elem(), "", 0)
	probs = append(probs, d.probs...)
	if d.stopped {
		// The scenario was decoded only in part: judging it would report
		// what was never read (10,000 "name: required" of services past
		// the limit), so the limit is the one problem told.
		return nil, capProblems(file, sortProblems(file, sets, probs), d.more)
	}

	v := &validator{d: d, sc: sc, broken: make(map[string]bool), overridden: len(sets) > 0}
	for _, p := range d.probs {
		v.broken[p.Path] = true
	}
	v.applyDefaults()
	v.validate()
	v.checkVariants(root)
	probs = append(probs, v.probs...)
	if len(probs) > 0 {
		return nil, capProblems(file, sortProblems(file, sets, probs), d.more+v.more)
	}
	v.defaultCommits()
	sc.src = data
	sc.sets = append([]string(nil), sets...)
	return sc, nil
}

// ParseCall reads a client call policy on its own — the keys of a
// scenario's workload.client (timeout, retry, budget, breaker, hedge,
// throttle, honor_pushback, propagate_deadline, …) — decoded strictly,
// presets expanded, defaults applied and validated exactly as in a
// scenario; problems name name, the line and the key. It is how
// `stormsim load --policy FILE` shares the scenario's vocabulary.
func ParseCall(name string, data []byte) (Call, error) {
	file := name
	if file == "" {
		file = "policy"
	}
	var c Call
	root, probs := parseYAML(file, data)
	if root == nil {
		return c, probs
	}
	d := newDecoder(file, nil)
	// Paths read "client.retry.max_attempts": the policy is the client's.
	d.decode(root, reflect.ValueOf(&c).Elem(), "client", 0)
	probs = append(probs, d.probs...)
	v := &validator{d: d, sc: &Scenario{File: name}, broken: make(map[string]bool)}
	for _, p := range d.probs {
		v.broken[p.Path] = true
	}
	if c.To != "" || len(c.Parallel) > 0 || c.Fanout > 1 || c.WaitFor != 0 {
		v.add("client.to", "a client policy calls its one target: to, parallel, fanout and wait_for do not apply")
	}
	v.clientNotIrrevocable(&c, "client")
	v.realClient(&c, "client")
	v.callDefaults(&c, "client")
	v.callPolicies(&c, "client", 1)
	probs = append(probs, v.probs...)
	if len(probs) > 0 {
		return Call{}, capProblems(file, sortProblems(file, nil, probs), d.more+v.more)
	}
	return c, nil
}

// realClient refuses the keys of a client policy that a client sending
// real requests to one target does not apply (a --policy file, an audit's
// client): the simulator's modelled delays and zones, a call's own status
// queries, publishing. Accepting them would be a silent default, the run
// going on as if they were not there.
func (v *validator) realClient(c *Call, p string) {
	if c.Query != nil {
		v.add(p+".query", "a call's own status queries are the simulator's only: a real client does not send them")
	}
	if c.Network != nil {
		v.add(p+".network", "the simulator's modelled one-way delay: a real client's network is the real one")
	}
	if c.CrossZoneNetwork != nil || c.ZoneAware {
		k := p + ".zone_aware"
		if c.CrossZoneNetwork != nil {
			k = p + ".cross_zone_network"
		}
		v.add(k, "zones are the simulator's replicas': a real client's target has none")
	}
	if c.Publish != nil {
		v.add(p+".publish", "publishing is a service's call to a topic, not a client's")
	}
}

// WithSets returns the scenario re-loaded from the same source with more
// overrides applied after the ones it was loaded with: a variant of
// `stormsim compare` or a point of a sweep. The receiver is not changed.
func (s *Scenario) WithSets(sets ...string) (*Scenario, error) {
	if s.src == nil {
		return nil, fmt.Errorf("topology: scenario %q was not loaded from YAML", s.Name)
	}
	all := append(append([]string(nil), s.sets...), sets...)
	return Parse(s.File, s.src, all)
}

// Variant returns the scenario with the overrides of its variant name
// applied, validated like the original.
func (s *Scenario) Variant(name string) (*Scenario, error) {
	for _, v := range s.Variants {
		if v.Name == name {
			return s.WithSets(v.Set...)
		}
	}
	names := make([]string, len(s.Variants))
	for i, v := range s.Variants {
		names[i] = v.Name
	}
	return nil, fmt.Errorf("topology: %s: no variant %q (have %s)", s.File, name, strings.Join(names, ", "))
}

var (
	yamlLine   = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)
	yamlAnchor = regexp.MustCompile(`^yaml: unknown anchor '(.*)' referenced$`)
)

// parseYAML parses data into a node tree and returns its top-level mapping
// (an empty one for an empty document). A syntax error is returned as a
// Problem with the line the parser names, or the line of the first
// offending byte when it names none.
func parseYAML(name string, data []byte) (*yaml.Node, Problems) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		msg := err.Error()
		line := 0
		if m := yamlLine.FindStringSubmatch(msg); m != nil {
			line, _ = strconv.Atoi(m[1])
			msg = m[2]
			if strings.Contains(msg, "tab character") {
				line = tabLine(data, line)
			}
			if tabIndented(data, line) {
				// The parser's words ("found character that cannot
				// start any token") do not say what is wrong.
				msg = "a tab in the indentation: YAML indents with spaces only (" + trimYAMLPrefix(msg) + ")"
			}
		} else if m := yamlAnchor.FindStringSubmatch(msg); m != nil {
			line = lineOf(data, "*"+m[1])
		} else {
			line = badByteLine(data)
		}
		return nil, Problems{{File: name, Line: line, Msg: "invalid YAML: " + trimYAMLPrefix(msg)}}
	}
	if p := secondDocument(name, data); p != nil {
		return nil, p
	}
	root := &doc
	if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		root = doc.Content[0]
	}
	switch {
	case root.Kind == yaml.MappingNode:
		return root, nil
	case root.Kind == 0 || root.Kind == yaml.DocumentNode || isNull(root):
		return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: 1, Column: 1}, nil
	}
	return nil, Problems{{File: name, Line: max(root.Line, 1), Msg: "a scenario must be a mapping of keys, got " + kindName(root)}}
}

func trimYAMLPrefix(s string) string {
	if len(s) > 6 && s[:6] == "yaml: " {
		return s[6:]
	}
	return s
}

// tabLine returns the first line from line on that is indented with a tab:
// the parser reports the line of the enclosing construct instead.
func tabLine(data []byte, line int) int {
	for i, l := range strings.Split(string(data), "\n") {
		if i+1 >= line && strings.Contains(l[:len(l)-len(strings.TrimLeft(l, " \t"))], "\t") {
			return i + 1
		}
	}
	return line
}

// tabIndented reports whether line (1-based) of data has a tab in its
// leading whitespace.
func tabIndented(data []byte, line int) bool {
	lines := strings.Split(string(data), "\n")
	if line < 1 || line > len(lines) {
		return false
	}
	l := lines[line-1]
	return strings.Contains(l[:len(l)-len(strings.TrimLeft(l, " \t"))], "\t")
}

// lineOf returns the line of the first occurrence of s in data, or 1.
func lineOf(data []byte, s string) int {
	if i := bytes.Index(data, []byte(s)); i >= 0 {
		return bytes.Count(data[:i], []byte("\n")) + 1
	}
	return 1
}

// badByteLine returns the line of the first byte the YAML parser rejects
// without saying where (invalid UTF-8, control characters), or 1.
func badByteLine(data []byte) int {
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size <= 1 || r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0x7f {
			return bytes.Count(data[:i], []byte("\n")) + 1
		}
		i += size
	}
	return 1
}
