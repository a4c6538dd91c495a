package topology

import (
	"strings"
	"testing"
)

// TestServiceNames: names every mode can carry load; names that simulated
// but failed every request in load mode (a%zz, tabs, control characters)
// or that escape a path are refused (issue 17, item 13).
func TestServiceNames(t *testing.T) {
	for name, ok := range map[string]bool{
		"db": true, "orders-v2": true, "api.gateway": true, "a_b~c": true, "S1": true,
		"a%zz": false, "a\tb": false, "a\x01": false, "a b": false, "a/b": false, "..": false,
		".hidden": false, "-x": false, "é": false, strings.Repeat("a", MaxNameLen+1): false,
	} {
		sc := strings.Replace(aliased, "name: d\n", "name: "+quote(name)+"\n", 1)
		_, err := Parse("names.yaml", []byte(sc), nil)
		if got := err == nil; got != ok {
			t.Errorf("service name %q: loads %v, want %v (%v)", name, got, ok, err)
		}
		if !ok && (err == nil || !strings.Contains(err.Error(), "services[3].name:")) {
			t.Errorf("service name %q: %v, want a problem at services[3].name", name, err)
		}
	}
}

// quote writes s as a YAML double-quoted string.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteString(`\` + string(r))
		case r < 0x20:
			b.WriteString(`\x`)
			b.WriteString(string("0123456789abcdef"[r>>4]) + string("0123456789abcdef"[r&15]))
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
