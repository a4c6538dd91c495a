package topology

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

var (
	serviceType = reflect.TypeFor[Service]()
	callType    = reflect.TypeFor[Call]()
)

// applySet applies one "path=value" override to the mapping root, guided by
// the Go type the path leads through (Scenario at the root), so an unknown
// key is caught here, with a suggestion, rather than as a puzzling decode
// error. Missing mappings on the way are created. Every node written is
// recorded in origin so later problems with it are reported against the
// override rather than a line of the file. A node shared through a YAML
// alias, or merged in with <<, is copied before it is changed, so the
// override changes exactly the node it names.
func applySet(root *yaml.Node, set string, origin map[*yaml.Node]string) error {
	return applySetJournaled(root, set, origin, nil)
}

// applySetJournaled is applySet recording every node it changes in j (when
// not nil), so that j.undo restores the tree.
func applySetJournaled(root *yaml.Node, set string, origin map[*yaml.Node]string, j *journal) error {
	path, value, ok := strings.Cut(set, "=")
	if !ok || path == "" {
		return fmt.Errorf("want PATH=VALUE")
	}
	segs := strings.Split(path, ".")
	cur, typ := root, reflect.TypeFor[Scenario]()
	for i, seg := range segs {
		for typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		at := strings.Join(segs[:i], ".")
		if seg == "" {
			return fmt.Errorf("empty path element after %q", at)
		}
		var next *yaml.Node
		switch {
		case typ.Kind() == reflect.Struct:
			fields := structFields(typ)
			idx, ok := fields[seg]
			if !ok {
				msg := fmt.Sprintf("unknown key %q", seg)
				if at != "" {
					msg += " in " + at
				}
				if s := suggest(seg, slices.Sorted(maps.Keys(fields))); s != "" {
					msg += fmt.Sprintf(" (did you mean %s?)", s)
				}
				return fmt.Errorf("%s", msg)
			}
			if cur.Kind != yaml.MappingNode && !isNull(cur) && cur.Kind != 0 {
				return fmt.Errorf("%s is %s, not a mapping", at, kindName(cur))
			}
			if cur.Kind != yaml.MappingNode {
				j.touch(cur)
			}
			asMapping(cur, set, origin)
			typ = typ.FieldByIndex(idx).Type
			next = mappingValue(cur, seg)
			if next == nil {
				k := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: seg}
				origin[k] = set
				if m := mergedValue(cur, seg, 0); m != nil {
					// The key comes from a << merge: the mapping gets its
					// own copy, which overrides the merged one.
					next = cloneNode(resolve(m))
					next.Anchor = ""
				} else {
					next = &yaml.Node{}
					origin[next] = set
				}
				j.touch(cur)
				cur.Content = append(cur.Content, k, next)
			}
		case typ.Kind() == reflect.Slice:
			if cur.Kind != yaml.SequenceNode {
				if !isNull(cur) && cur.Kind != 0 {
					return fmt.Errorf("%s is %s, not a list", at, kindName(cur))
				}
				j.touch(cur)
				*cur = yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
				origin[cur] = set
			}
			typ = typ.Elem()
			var err error
			if next, err = listElement(cur, seg, typ, at); err != nil {
				return err
			}
			if next == nil { // one past the end: append an element
				next = &yaml.Node{}
				origin[next] = set
				j.touch(cur)
				cur.Content = append(cur.Content, next)
			}
		default:
			return fmt.Errorf("%s is a single value; it has no %q", at, seg)
		}
		next = privatize(cur, next, j)
		if i < len(segs)-1 {
			next = resolve(next)
		}
		cur = next
	}
	optional := typ.Kind() == reflect.Pointer
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	// A block can be removed as a whole: a list (faults=null, faults=[])
	// emptied, an optional block (a call's budget=null) dropped.
	blank := value == "null" || value == "~" || (typ.Kind() == reflect.Slice && strings.TrimSpace(value) == "[]")
	switch {
	case !isScalarKind(typ) && blank && (typ.Kind() == reflect.Slice || optional):
		*cur = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
		origin[cur] = set
	case typ.Kind() == reflect.Slice && isScalarKind(typ.Elem()):
		j.touch(cur)
		*cur = yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Style: yaml.FlowStyle}
		origin[cur] = set
		for _, item := range splitList(value) {
			n := &yaml.Node{Kind: yaml.ScalarNode, Value: item}
			origin[n] = set
			cur.Content = append(cur.Content, n)
		}
	case isScalarKind(typ):
		j.touch(cur)
		*cur = yaml.Node{Kind: yaml.ScalarNode, Value: value}
		if value == "" {
			cur.Style = yaml.DoubleQuotedStyle // empty means empty, not null
		}
		origin[cur] = set
	default:
		if typ.Kind() == reflect.Slice || optional {
			return fmt.Errorf("%s is a block, not a single value; set its keys one by one, or remove it with %s=null", path, path)
		}
		return fmt.Errorf("%s is a block, not a single value; set its keys one by one", path)
	}
	return nil
}

func isScalarKind(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Slice, reflect.Map, reflect.Array:
		return false
	}
	return true
}

// splitList reads "a,b" or "[a,b]" as a list; "" and "[]" are empty.
func splitList(s string) []string {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		s = s[1 : len(s)-1]
	}
	if strings.TrimSpace(s) == "" {
		return nil
	}
	parts := strings.Split(s, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// asMapping turns a null or empty node into an empty mapping in place.
func asMapping(n *yaml.Node, set string, origin map[*yaml.Node]string) {
	if n.Kind == yaml.MappingNode {
		return
	}
	*n = yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	origin[n] = set
}

// mappingValue returns the value node of key in mapping m, or nil.
func mappingValue(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if resolve(m.Content[i]).Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// listElement picks the element seg addresses in list seq: services by
// name, calls by their "to" or by index, anything else by index. An index
// one past the end returns nil (the caller appends).
func listElement(seq *yaml.Node, seg string, elem reflect.Type, at string) (*yaml.Node, error) {
	for elem.Kind() == reflect.Pointer {
		elem = elem.Elem()
	}
	byKey := ""
	switch elem {
	case serviceType:
		byKey = "name"
	case callType:
		byKey = "to"
	}
	if byKey != "" {
		for _, c := range seq.Content {
			if rc := resolve(c); rc.Kind == yaml.MappingNode {
				if v := mappingValue(rc, byKey); v != nil && resolve(v).Value == seg {
					return c, nil
				}
			}
		}
	}
	i, err := strconv.Atoi(seg)
	if err != nil || i < 0 || i > len(seq.Content) {
		if elem == serviceType {
			var names []string
			for _, c := range seq.Content {
				if v := mappingValue(resolve(c), "name"); v != nil && resolve(c).Kind == yaml.MappingNode {
					names = append(names, resolve(v).Value)
				}
			}
			msg := fmt.Sprintf("no service named %q", seg)
			if s := suggest(seg, names); s != "" {
				msg += fmt.Sprintf(" (did you mean %s?)", s)
			}
			return nil, fmt.Errorf("%s", msg)
		}
		how := "an index"
		if byKey != "" {
			how = "a callee name or an index"
		}
		return nil, fmt.Errorf("%s has %d element(s); %q is not %s in it", at, len(seq.Content), seg, how)
	}
	if i == len(seq.Content) {
		return nil, nil
	}
	return seq.Content[i], nil
}

// cloneNode deep-copies a node tree, keeping aliases pointing into the copy.
func cloneNode(n *yaml.Node) *yaml.Node {
	seen := make(map[*yaml.Node]*yaml.Node)
	var clone func(n *yaml.Node) *yaml.Node
	clone = func(n *yaml.Node) *yaml.Node {
		if n == nil {
			return nil
		}
		if c, ok := seen[n]; ok {
			return c
		}
		c := new(yaml.Node)
		seen[n] = c
		*c = *n
		c.Alias = clone(n.Alias)
		c.Content = make([]*yaml.Node, len(n.Content))
		for i, k := range n.Content {
			c.Content[i] = clone(k)
		}
		return c
	}
	return clone(n)
}
