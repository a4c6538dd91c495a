package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// built holds the main packages compiled for this test process, by
// package, so that the tests running stormsim as a process share one
// build (a link of the CLI is seconds of CPU).
var built struct {
	sync.Mutex
	dir  string
	bins map[string]string
}

// processDirs are the directories that outlive a test, shared by several
// (buildMain's binaries, sharedCapacity's run), removed by TestMain.
var processDirs struct {
	sync.Mutex
	paths []string
}

// processDir makes a directory removed when the test process ends.
func processDir(pattern string) (string, error) {
	d, err := os.MkdirTemp("", pattern)
	if err == nil {
		processDirs.Lock()
		processDirs.paths = append(processDirs.paths, d)
		processDirs.Unlock()
	}
	return d, err
}

// TestMain removes the directories processDir made.
func TestMain(m *testing.M) {
	code := m.Run()
	for _, d := range processDirs.paths {
		os.RemoveAll(d)
	}
	os.Exit(code)
}

// buildMain compiles the main package at pkg (relative to this one; "."
// for stormsim itself) once per test process and returns the binary's
// path, for tests and benchmarks that run it as a separate process. It
// builds with the environment's settings, as go test built this package,
// so the build reuses the packages already compiled (a CGO_ENABLED of its
// own recompiled every dependency: about 70 s on a fresh machine).
func buildMain(tb testing.TB, pkg string) string {
	tb.Helper()
	built.Lock()
	defer built.Unlock()
	if bin, ok := built.bins[pkg]; ok {
		return bin
	}
	if built.dir == "" {
		d, err := processDir("stormsim-test-bin-")
		if err != nil {
			tb.Fatalf("go build %s: %v", pkg, err)
		}
		built.dir, built.bins = d, map[string]string{}
	}
	name := filepath.Base(pkg)
	if pkg == "." {
		name = "stormsim"
	}
	sub := filepath.Join(built.dir, fmt.Sprint(len(built.bins)))
	if err := os.Mkdir(sub, 0o755); err != nil {
		tb.Fatalf("go build %s: %v", pkg, err)
	}
	bin := filepath.Join(sub, name) // the program's own name, as its messages use it
	if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
		tb.Fatalf("go build %s: %v: %s", pkg, err, out)
	}
	built.bins[pkg] = bin
	return bin
}
