package golden

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDiff(t *testing.T) {
	tests := []struct {
		name      string
		got, want string
		diff      string // "" when equal, else a substring of the message
	}{
		{"equal", "a\nb\n", "a\nb\n", ""},
		{"empty", "", "", ""},
		{"changed line", "a\nx\nc\n", "a\nb\nc\n", `line 2: got "x\n", want "b\n"`},
		{"shorter", "a\n", "a\nb\n", `line 2: got the end of the output, want "b\n"`},
		{"longer", "a\nb\n", "a\n", `line 2: got "b\n", want the end of the file`},
		{"missing final newline", "a", "a\n", `line 1: got "a", want "a\n"`},
		{"empty output", "", "a\n", `line 1: got the end of the output, want "a\n"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Diff([]byte(tt.got), []byte(tt.want))
			if tt.diff == "" && d != "" {
				t.Fatalf("Diff = %q, want equal", d)
			}
			if !strings.Contains(d, tt.diff) || (tt.diff != "" && d == "") {
				t.Fatalf("Diff = %q, want it to contain %q", d, tt.diff)
			}
		})
	}
}

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	errors []string
	fatal  bool
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatal(args ...any) {
	r.errors, r.fatal = append(r.errors, fmt.Sprint(args...)), true
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	r.fatal = true
}

func TestCheck(t *testing.T) {
	if Update() {
		t.Skip("-update: Check writes instead of comparing")
	}
	path := filepath.Join(t.TempDir(), "out.golden")
	if err := os.WriteFile(path, []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	var same recorder
	Check(&same, path, []byte("one\ntwo\n"))
	if len(same.errors) != 0 {
		t.Errorf("equal output: %q", same.errors)
	}

	var changed recorder
	Check(&changed, path, []byte("one\n2\n"))
	if len(changed.errors) != 1 || changed.fatal || !strings.Contains(changed.errors[0], path) || !strings.Contains(changed.errors[0], "line 2") {
		t.Errorf("changed output: %q (fatal %v), want one error naming %s and line 2", changed.errors, changed.fatal, path)
	}

	var missing recorder
	Check(&missing, filepath.Join(t.TempDir(), "none.golden"), []byte("x"))
	if !missing.fatal || !strings.Contains(missing.errors[0], "-update") {
		t.Errorf("missing file: %q (fatal %v), want a fatal error pointing at -update", missing.errors, missing.fatal)
	}
}

func TestWriteCreatesDirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "out.golden")
	if err := write(path, []byte("x\n")); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "x\n" {
		t.Fatalf("read back %q, %v", b, err)
	}
}
