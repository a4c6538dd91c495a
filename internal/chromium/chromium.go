// Package chromium finds the headless browser the page tests use
// (report.html, the live view) and reads what a page logged.
package chromium

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Path returns the chromium binary, skipping the test when it is not
// installed, except under CI=true, where it must be.
func Path(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but chromium is not on PATH: install it (apt-get install -y chromium)")
		}
		t.Skip("chromium not on PATH")
	}
	return bin
}

// Console returns the page's console messages and uncaught errors from
// what chromium wrote with --enable-logging=stderr, where page console
// output is logged as ...:CONSOLE(line)] "message".
func Console(stderr string) []string {
	var out []string
	for _, line := range strings.Split(stderr, "\n") {
		if strings.Contains(line, ":CONSOLE") || strings.Contains(line, "Uncaught") {
			out = append(out, line)
		}
	}
	return out
}
