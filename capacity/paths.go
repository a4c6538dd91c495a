package capacity

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/stormsim/stormsim/topology"
)

// Kind is how a searched scenario path takes its values.
type Kind int

// The kinds of searchable paths.
const (
	// Real paths take any number (rates, ratios, multipliers).
	Real Kind = iota
	// Integer paths take whole numbers (workers, queue, max_attempts); the
	// search visits integers only.
	Integer
	// Duration paths take Go durations (timeouts, delays); the search works
	// in seconds and writes durations.
	Duration
)

// String returns "real", "integer" or "duration".
func (k Kind) String() string {
	switch k {
	case Integer:
		return "integer"
	case Duration:
		return "duration"
	}
	return "real"
}

// Format writes a value of this kind as --set takes it.
func (k Kind) Format(v float64) string {
	switch k {
	case Integer:
		return strconv.FormatInt(int64(v), 10)
	case Duration:
		return time.Duration(v * float64(time.Second)).String()
	}
	return strconv.FormatFloat(roundSig(v, 10), 'g', -1, 64)
}

// Parse reads a value of this kind (a Duration as a Go duration, returned
// in seconds).
func (k Kind) Parse(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if k == Duration {
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("%q is not a duration", s)
		}
		return d.Seconds(), nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if k == Integer && v != float64(int64(v)) {
		return 0, fmt.Errorf("%q is not an integer", s)
	}
	return v, nil
}

var (
	durationType = reflect.TypeFor[time.Duration]()
	serviceType  = reflect.TypeFor[topology.Service]()
	callType     = reflect.TypeFor[topology.Call]()
	workloadType = reflect.TypeFor[topology.Workload]()
)

// PathOf reports the kind of a scenario path (as --set spells it) and its
// value in sc (0 and set=false when the path leads through an absent
// optional block or list element). It fails for paths that do not name a
// single number or duration.
func PathOf(sc *topology.Scenario, path string) (k Kind, value float64, set bool, err error) {
	segs := strings.Split(path, ".")
	v := reflect.ValueOf(sc).Elem()
	typ := v.Type()
	present := true
	var parent reflect.Type // the struct holding the last key
	for i, seg := range segs {
		at := strings.Join(segs[:i], ".")
		typ, v, present = deref(typ, v, present)
		parent = typ
		switch typ.Kind() {
		case reflect.Struct:
			idx, ok := yamlField(typ, seg)
			if !ok {
				return 0, 0, false, fmt.Errorf("path %s: no key %q in %s", path, seg, orRoot(at))
			}
			f := typ.FieldByIndex(idx)
			if present {
				v = v.FieldByIndex(idx)
			}
			typ = f.Type
		case reflect.Slice:
			elem := typ.Elem()
			if present {
				found := false
				for j := range v.Len() {
					e := v.Index(j)
					if elemMatches(e, elem, seg) || strconv.Itoa(j) == seg {
						v, found = e, true
						break
					}
				}
				present = found
			}
			typ = elem
		default:
			return 0, 0, false, fmt.Errorf("path %s: %s is a single value; it has no %q", path, orRoot(at), seg)
		}
	}
	typ, v, present = deref(typ, v, present)
	switch {
	case typ == durationType:
		k = Duration
		if present {
			value = time.Duration(v.Int()).Seconds()
		}
	case typ.Kind() >= reflect.Int && typ.Kind() <= reflect.Uint64:
		k = Integer
		if present {
			if typ.Kind() >= reflect.Uint {
				value = float64(v.Uint())
			} else {
				value = float64(v.Int())
			}
		}
	case typ.Kind() == reflect.Float32 || typ.Kind() == reflect.Float64:
		k = Real
		if present {
			value = v.Float()
		}
	default:
		return 0, 0, false, fmt.Errorf("path %s: is %s, not a number or a duration", path, typ.Kind())
	}
	// A service's replicas and the client's instances count from 1: an
	// omitted key is one, which a solve searches around.
	if last := segs[len(segs)-1]; present && value == 0 &&
		(parent == serviceType && last == "replicas" || parent == workloadType && last == "instances") {
		value = 1
	}
	return k, value, present, nil
}

func orRoot(at string) string {
	if at == "" {
		return "the scenario"
	}
	return at
}

// elemMatches reports whether list element e is the one seg names:
// services by name, calls by callee.
func elemMatches(e reflect.Value, elem reflect.Type, seg string) bool {
	switch elem {
	case serviceType:
		return e.Interface().(topology.Service).Name == seg
	case callType:
		return e.Interface().(topology.Call).To == seg
	}
	return false
}

// yamlField finds the field with yaml key name, looking into inline
// (embedded) structs.
func yamlField(t reflect.Type, name string) ([]int, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		key, opts, _ := strings.Cut(tag, ",")
		if key == "-" {
			continue
		}
		if strings.Contains(opts, "inline") {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if sub, ok := yamlField(ft, name); ok {
				return append([]int{i}, sub...), true
			}
			continue
		}
		if key == "" {
			key = strings.ToLower(f.Name)
		}
		if key == name {
			return []int{i}, true
		}
	}
	return nil, false
}

// deref follows pointer types to the type they point to and, while the
// value is present, the value along with them: a nil pointer makes it
// absent (the path exists in the schema, not in this scenario).
func deref(typ reflect.Type, v reflect.Value, present bool) (reflect.Type, reflect.Value, bool) {
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
		if present {
			if v.IsNil() {
				present = false
			} else {
				v = v.Elem()
			}
		}
	}
	return typ, v, present
}
