package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// serve runs a scenario with every effect key (irrevocable steps,
// versioned writes, external effects): it serves it until stopped.
func TestServeRunsEffects(t *testing.T) {
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	code := run(ctx, []string{"serve", "--listen", "127.0.0.1:0", "../../topology/testdata/effects.yaml"}, &out, &errb)
	if code != 0 || !strings.Contains(out.String(), "serving ") || strings.Contains(errb.String(), "simulator-only") {
		t.Errorf("exit %d, stdout %q, stderr %q; want it served until stopped", code, out.String(), errb.String())
	}
}
