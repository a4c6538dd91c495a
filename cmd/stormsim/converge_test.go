package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// serve runs a scenario with every convergence key (queries, recovery,
// reconciliation, owner crashes): it serves it until stopped.
func TestServeRunsConvergence(t *testing.T) {
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	code := run(ctx, []string{"serve", "--listen", "127.0.0.1:0", "../../experiments/order-recovery.yaml"}, &out, &errb)
	if code != 0 || !strings.Contains(out.String(), "serving order-recovery") || strings.Contains(errb.String(), "simulator-only") {
		t.Errorf("exit %d, stdout %q, stderr %q; want it served until stopped", code, out.String(), errb.String())
	}
}
