package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// serve refuses a scenario with keys only the simulator runs, naming the
// first by file and line, before it listens on anything.
func TestServeRefusesSimulatorOnlyEffects(t *testing.T) {
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"serve", "--listen", "127.0.0.1:0", "../../topology/testdata/effects.yaml"}, &out, &errb)
	want := "effects.yaml:20: services[0].calls[1].irrevocable: an irrevocable step is simulator-only"
	if code != exitError1 || !strings.Contains(errb.String(), want) {
		t.Errorf("exit %d, stderr %q; want exit %d and %q", code, errb.String(), exitError1, want)
	}
	if strings.Contains(out.String(), "serving") {
		t.Errorf("stdout %q: it served", out.String())
	}
}
