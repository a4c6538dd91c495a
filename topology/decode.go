package topology

import (
	"encoding"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"
)

// pos is where a value came from: a file and line, or an override.
type pos struct {
	file string
	line int
}

// Decoding limits: a YAML alias can make a small document expand to a huge
// tree, and nesting can be arbitrarily deep; both are refused, not followed.
const (
	maxDecodeDepth = 64
	maxDecodeNodes = 1 << 17
)

var durationType = reflect.TypeFor[time.Duration]()

// decoder decodes a yaml.Node tree into Go values strictly: unknown keys,
// duplicate keys, malformed scalars and wrong node kinds are all problems,
// reported with their position, and decoding goes on so that every problem
// in the file is found at once. It also records where each path's value came
// from, so validation can point at the right line.
type decoder struct {
	file    string
	origin  map[*yaml.Node]string // nodes written by a --set, by its text
	pos     map[string]pos        // field path -> where its value is
	given   map[string]bool       // field paths given a non-null value
	probs   Problems
	more    int // problems past maxProblems, counted only
	nodes   int
	stopped bool // tooFar has reported
}

func newDecoder(file string, origin map[*yaml.Node]string) *decoder {
	return &decoder{file: file, origin: origin, pos: make(map[string]pos), given: make(map[string]bool)}
}

// posOf returns where n came from.
func (d *decoder) posOf(n *yaml.Node) pos {
	if s, ok := d.origin[n]; ok {
		return pos{file: "--set " + s}
	}
	return pos{file: d.file, line: n.Line}
}

func (d *decoder) addAt(p pos, path, format string, args ...any) {
	if len(d.probs) >= maxProblems {
		d.more++
		return
	}
	d.probs = append(d.probs, Problem{File: p.file, Line: p.line, Path: path, Msg: fmt.Sprintf(format, args...)})
}

func (d *decoder) add(n *yaml.Node, path, format string, args ...any) {
	d.addAt(d.posOf(n), path, format, args...)
}

// lookup returns where path's value came from, falling back to its nearest
// recorded ancestor (a defaulted field has no node of its own).
func (d *decoder) lookup(path string) pos {
	for {
		if p, ok := d.pos[path]; ok {
			return p
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			if p, ok := d.pos[""]; ok {
				return p
			}
			return pos{file: d.file, line: 1}
		}
		path = path[:i]
	}
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	}
	return "nothing"
}

// resolve follows documents and aliases to the node that holds the value.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && i < maxDecodeDepth; i++ {
		switch {
		case n.Kind == yaml.DocumentNode && len(n.Content) > 0:
			n = n.Content[0]
		case n.Kind == yaml.AliasNode && n.Alias != nil:
			n = n.Alias
		default:
			return n
		}
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null" ||
		n.Kind == yaml.ScalarNode && n.Style == 0 && (n.Value == "~" || n.Value == "null" || n.Value == "")
}

// tooFar counts one more node decoded and reports, once, a document that
// nests deeper than maxDecodeDepth or expands (through aliases and merges)
// beyond maxDecodeNodes.
func (d *decoder) tooFar(n *yaml.Node, path string, depth int) bool {
	d.nodes++
	if depth <= maxDecodeDepth && d.nodes <= maxDecodeNodes {
		return false
	}
	if !d.stopped {
		d.stopped = true
		d.add(n, path, "document nests deeper than %d or expands, through aliases and merges, past %d YAML nodes (about 16,000 services of a few keys each)", maxDecodeDepth, maxDecodeNodes)
	}
	return true
}

// decode decodes n into v (settable). Fields absent from n keep their value,
// which is what lets a preset be laid under a block's own keys.
func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string, depth int) {
	n = resolve(n)
	if n == nil || n.Kind == 0 {
		return
	}
	if d.tooFar(n, path, depth) {
		return
	}
	d.pos[path] = d.posOf(n)
	if !isNull(n) {
		d.given[path] = true
	}
	if v.Kind() == reflect.Pointer {
		if isNull(n) {
			v.SetZero()
			return
		}
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		v = v.Elem()
	}
	if isNull(n) {
		return // an explicit null keeps the default
	}
	switch v.Kind() {
	case reflect.Struct:
		d.decodeStruct(n, v, path, depth)
	case reflect.Slice:
		if n.Kind == yaml.ScalarNode {
			// A list type with a one-word spelling (checks: all) reads
			// its scalar itself.
			if u, ok := v.Addr().Interface().(encoding.TextUnmarshaler); ok {
				if err := u.UnmarshalText([]byte(n.Value)); err != nil {
					d.add(n, path, "%s", explain(err))
				}
				return
			}
		}
		if n.Kind != yaml.SequenceNode {
			d.add(n, path, "expected a list, got %s", kindName(n))
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, c := range n.Content {
			d.decode(c, s.Index(i), fmt.Sprintf("%s[%d]", path, i), depth+1)
		}
		v.Set(s)
	case reflect.Map:
		d.decodeMap(n, v, path, depth)
	default:
		if n.Kind != yaml.ScalarNode {
			d.add(n, path, "expected a single value, got %s", kindName(n))
			return
		}
		if err := setScalar(v, n.Value); err != nil {
			d.add(n, path, "%s", explain(err))
		}
	}
}

func (d *decoder) decodeStruct(n *yaml.Node, v reflect.Value, path string, depth int) {
	if n.Kind != yaml.MappingNode {
		d.add(n, path, "expected a mapping, got %s", kindName(n))
		return
	}
	if d.tooFar(n, path, depth) { // merges re-enter here, not through decode
		return
	}
	// YAML merge keys ("<<: *base") come first, so the mapping's own keys
	// override them wherever they are written; of several merged mappings
	// the first wins.
	for i := 0; i+1 < len(n.Content); i += 2 {
		if kn := resolve(n.Content[i]); kn.Kind == yaml.ScalarNode && kn.Value == "<<" && kn.Style == 0 {
			src := resolve(n.Content[i+1])
			if src.Kind == yaml.SequenceNode {
				for j := len(src.Content) - 1; j >= 0; j-- {
					d.decodeStruct(resolve(src.Content[j]), v, path, depth+1)
				}
			} else {
				d.decodeStruct(src, v, path, depth+1)
			}
		}
	}
	fields := structFields(v.Type())
	seen := make(map[string]bool, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := resolve(n.Content[i]), n.Content[i+1]
		key := kn.Value
		if kn.Kind == yaml.ScalarNode && key == "<<" && kn.Style == 0 {
			continue
		}
		kp := joinPath(path, key)
		if kn.Kind != yaml.ScalarNode {
			d.add(kn, path, "expected a key, got %s", kindName(kn))
			continue
		}
		f, ok := fields[key]
		if !ok && path == "" && strings.HasPrefix(key, "x-") {
			continue // a top-level extension key: a place to keep YAML anchors
		}
		if !ok {
			kp = joinPath(path, Shorten(key))
			if s := suggest(key, slices.Sorted(maps.Keys(fields))); s != "" {
				d.add(kn, kp, "unknown key (did you mean %s?)", s)
			} else {
				d.add(kn, kp, "unknown key")
			}
			continue
		}
		if seen[key] {
			d.add(kn, kp, "duplicate key")
			continue
		}
		seen[key] = true
		d.decode(vn, v.FieldByIndex(f), kp, depth+1)
	}
}

// decodeMap decodes a mapping of free keys (a request's headers) into a
// map with string keys: each key once, each value decoded as the map's
// element type. The key's path is written path.key.
func (d *decoder) decodeMap(n *yaml.Node, v reflect.Value, path string, depth int) {
	if n.Kind != yaml.MappingNode {
		d.add(n, path, "expected a mapping, got %s", kindName(n))
		return
	}
	if v.Type().Key().Kind() != reflect.String {
		d.add(n, path, "cannot hold a mapping of Go type %v", v.Type())
		return
	}
	m := reflect.MakeMapWithSize(v.Type(), len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := resolve(n.Content[i]), n.Content[i+1]
		if kn.Kind != yaml.ScalarNode {
			d.add(kn, path, "expected a key, got %s", kindName(kn))
			continue
		}
		kp := joinPath(path, Shorten(kn.Value))
		key := reflect.ValueOf(kn.Value).Convert(v.Type().Key())
		if m.MapIndex(key).IsValid() {
			d.add(kn, kp, "duplicate key")
			continue
		}
		e := reflect.New(v.Type().Elem()).Elem()
		d.decode(vn, e, kp, depth+1)
		m.SetMapIndex(key, e)
	}
	v.Set(m)
}

// setScalar parses s into v according to v's Go type.
func setScalar(v reflect.Value, s string) error {
	if u, ok := v.Addr().Interface().(encoding.TextUnmarshaler); ok {
		return u.UnmarshalText([]byte(s)) // the enumerated names
	}
	if v.Type() == durationType {
		dur, err := time.ParseDuration(s)
		if err != nil {
			if _, nerr := strconv.ParseFloat(s, 64); nerr == nil && s != "0" {
				return fmt.Errorf("invalid duration %q (missing unit, e.g. %ss or %sms)", s, s, s)
			}
			return fmt.Errorf("invalid duration %q", s)
		}
		v.SetInt(int64(dur))
		return nil
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Bool:
		switch strings.ToLower(s) {
		case "true", "yes", "on":
			v.SetBool(true)
		case "false", "no", "off":
			v.SetBool(false)
		default:
			return fmt.Errorf("expected true or false, got %q", s)
		}
	case reflect.Int, reflect.Int64, reflect.Int32:
		i, err := strconv.ParseInt(s, 0, v.Type().Bits())
		if err != nil {
			// Accept integral numbers in float notation (max_events: 2e9).
			f, ferr := strconv.ParseFloat(s, 64)
			if ferr != nil || f != math.Trunc(f) || math.Abs(f) >= math.Exp2(float64(v.Type().Bits()-1)) {
				return fmt.Errorf("expected an integer, got %q", s)
			}
			i = int64(f)
		}
		v.SetInt(i)
	case reflect.Uint64, reflect.Uint, reflect.Uint32:
		u, err := strconv.ParseUint(s, 0, v.Type().Bits())
		if err != nil {
			return fmt.Errorf("expected a non-negative integer, got %q", s)
		}
		v.SetUint(u)
	case reflect.Float64:
		f, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
		if err != nil || strings.HasSuffix(s, "%") {
			return fmt.Errorf("expected a number, got %q", s)
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("expected a finite number, got %q", s)
		}
		v.SetFloat(f)
	default:
		return fmt.Errorf("cannot hold a value of Go type %v", v.Type())
	}
	return nil
}

// fieldCache holds structFields' results by type; the maps are never
// modified once stored, so sharing them between goroutines is safe.
var fieldCache sync.Map // reflect.Type -> map[string][]int

// structFields maps each yaml key of t to its field index, descending into
// inline fields. Fields tagged "-" are not keys.
func structFields(t reflect.Type) map[string][]int {
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string][]int)
	}
	m := make(map[string][]int)
	defer fieldCache.Store(t, m)
	var walk func(t reflect.Type, prefix []int)
	walk = func(t reflect.Type, prefix []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if name == "-" || !f.IsExported() {
				continue
			}
			idx := append(append([]int(nil), prefix...), i)
			if strings.Contains(opts, "inline") {
				walk(f.Type, idx)
				continue
			}
			if name == "" {
				name = strings.ToLower(f.Name)
			}
			m[name] = idx
		}
	}
	walk(t, nil)
	return m
}
