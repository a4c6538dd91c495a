package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// buildMain compiles the main package at pkg (relative to this one; "."
// for stormsim itself) into a temporary directory and returns the binary's
// path, for tests and benchmarks that run it as a separate process.
func buildMain(tb testing.TB, pkg string) string {
	tb.Helper()
	name := filepath.Base(pkg)
	if pkg == "." {
		name = "stormsim"
	}
	bin := filepath.Join(tb.TempDir(), name)
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("go build %s: %v: %s", pkg, err, out)
	}
	return bin
}
