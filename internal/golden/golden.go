// Package golden compares what a test produced with a golden file, the
// expected output kept under testdata/ and reviewed like code.
//
// Every package's tests share its one -update flag: `go test ./pkg -update`
// rewrites the golden files of pkg's tests with what they produced, after
// an intended change, and the diff is then reviewed. Without the flag a
// golden file is never written.
//
// The package is for tests only: importing it registers the -update flag
// on the default flag set, which `go test` parses.
package golden

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files with what the tests produce (review the diff)")

// Update reports whether the tests run with -update, for tests that
// rewrite something other than one file per Check.
func Update() bool { return *update }

// Check compares got with the golden file at path and reports a mismatch,
// or a missing file, as a test failure naming the first differing line.
// Under -update it writes got to path instead, creating the directory.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := write(path, got); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden: %v (go test -update creates it)", err)
	}
	if msg := Diff(got, want); msg != "" {
		t.Errorf("golden: %s differs from what the test produced (go test -update rewrites it after an intended change): %s", path, msg)
	}
}

// write writes b to path, creating its directory.
func write(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("golden: %w", err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("golden: %w", err)
	}
	return nil
}

// Diff returns "" when got equals want byte for byte, and otherwise says
// where they first differ: the line number, and that line of each.
func Diff(got, want []byte) string {
	if bytes.Equal(got, want) {
		return ""
	}
	g, w := lines(got), lines(want)
	for i := 0; ; i++ {
		switch {
		case i >= len(g):
			return fmt.Sprintf("line %d: got the end of the output, want %q", i+1, w[i])
		case i >= len(w):
			return fmt.Sprintf("line %d: got %q, want the end of the file", i+1, g[i])
		case !bytes.Equal(g[i], w[i]):
			return fmt.Sprintf("line %d: got %q, want %q", i+1, g[i], w[i])
		}
	}
}

// lines splits b after each newline; a final newline ends the last line
// rather than starting an empty one.
func lines(b []byte) [][]byte {
	ls := bytes.SplitAfter(b, []byte("\n"))
	if len(ls[len(ls)-1]) == 0 {
		ls = ls[:len(ls)-1]
	}
	return ls
}
