package topology

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// TestDocsCoverEveryKey walks the yaml keys of Scenario and of every struct
// it reaches (the policies configs included) and fails if
// docs/scenario.md lacks a section for a struct, headed "... (pkg.Type)",
// or a table row "| `key` |" for one of its keys. The reference cannot
// drift from the code without this test failing.
func TestDocsCoverEveryKey(t *testing.T) {
	data, err := os.ReadFile("../docs/scenario.md")
	if err != nil {
		t.Fatal(err)
	}
	sections := make(map[string]string) // type name -> section text
	var name string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "#") {
			name = ""
			if i, j := strings.LastIndex(line, "("), strings.LastIndex(line, ")"); i >= 0 && j > i {
				name = line[i+1 : j]
			}
			continue
		}
		if name != "" {
			sections[name] += line + "\n"
		}
	}

	seen := make(map[reflect.Type]bool)
	var walk func(t reflect.Type)
	checked := 0
	walk = func(typ reflect.Type) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct || typ.PkgPath() == "time" || seen[typ] {
			return
		}
		seen[typ] = true
		text, ok := sections[typ.String()]
		if !ok {
			t.Errorf("docs/scenario.md has no section headed (%s)", typ)
		}
		for i := range typ.NumField() {
			f := typ.Field(i)
			key, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if key == "-" || !f.IsExported() {
				continue
			}
			walk(f.Type)
			if strings.Contains(opts, "inline") {
				continue // documented in its own type's section
			}
			checked++
			if ok && !strings.Contains(text, "| `"+key+"` |") {
				t.Errorf("docs/scenario.md section (%s) does not document key %q", typ, key)
			}
		}
	}
	walk(reflect.TypeFor[Scenario]())
	if checked < 50 {
		t.Errorf("walked only %d keys; the walk is broken", checked)
	}
}
