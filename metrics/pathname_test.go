package metrics

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestPathComponent(t *testing.T) {
	long := strings.Repeat("é", 200)
	for _, c := range []struct{ name, want string }{
		{"db", "db"},
		{"orders-v2_eu.west", "orders-v2_eu.west"},
		{"", "%"},
		{".", "%2E"},
		{"..", "%2E."},
		{".hidden", "%2Ehidden"},
		{"../../../../tmp/x/PWNED", "%2E.%2F..%2F..%2F..%2Ftmp%2Fx%2FPWNED"},
		{`a\b`, "a%5Cb"},
		{"a b\t\x00", "a%20b%09%00"},
		{"a%2Fb", "a%252Fb"},
		{"C:", "C%3A"},
	} {
		if got := PathComponent(c.name); got != c.want {
			t.Errorf("PathComponent(%q) = %q, want %q", c.name, got, c.want)
		}
	}
	got := PathComponent(long)
	if len(got) > maxPathComponent {
		t.Errorf("PathComponent of %d bytes: %d bytes long, want ≤ %d", len(long), len(got), maxPathComponent)
	}
	if other := PathComponent(long + "x"); other == got {
		t.Errorf("two long names share the component %q", got)
	}
}

// FuzzPathComponent checks that no name escapes the directory it is joined
// to or collides with another.
func FuzzPathComponent(f *testing.F) {
	for _, s := range []string{"db", "..", "../x", "a/b", "%2F", ".", ""} {
		f.Add(s, s+"/")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		pa := PathComponent(a)
		if pa == "" || pa == "." || pa == ".." || strings.ContainsAny(pa, `/\`+"\x00") || strings.HasPrefix(pa, ".") {
			t.Fatalf("PathComponent(%q) = %q: not one safe component", a, pa)
		}
		if filepath.Dir(filepath.Join("out", pa)) != "out" {
			t.Fatalf("PathComponent(%q) = %q leaves out/", a, pa)
		}
		if a != b && pa == PathComponent(b) {
			t.Fatalf("PathComponent(%q) = PathComponent(%q) = %q", a, b, pa)
		}
	})
}
