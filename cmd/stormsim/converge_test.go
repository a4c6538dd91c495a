package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// serve refuses a scenario with convergence keys it does not run yet
// (recovery, reconciliation, owner crashes), naming them by file and
// line, before it listens on anything.
func TestServeRefusesConvergence(t *testing.T) {
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"serve", "--listen", "127.0.0.1:0", "../../experiments/order-recovery.yaml"}, &out, &errb)
	want := "order-recovery.yaml:67: services[1].recovery: recovery: simulator-only"
	if code != exitError1 || !strings.Contains(errb.String(), want) {
		t.Errorf("exit %d, stderr %q; want exit %d and %q", code, errb.String(), exitError1, want)
	}
	if strings.Contains(out.String(), "serving") {
		t.Errorf("stdout %q: it served", out.String())
	}
}
