package traces_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stormsim/stormsim/topology"
	"github.com/stormsim/stormsim/traces"
)

// TestAttackImportedNamesCannotInject imports traces whose service names,
// and whose file's name, carry newlines, YAML and a terminal escape: the
// scenario must hold none of it as YAML (no top-level faults block), and
// the summary no control character.
func TestAttackImportedNamesCannotInject(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "shop.otlp.json"))
	if err != nil {
		t.Fatal(err)
	}
	const payload = `\nfaults:\n  - {service: frontend, kind: error, rate: 1}\n#\u001b[2J\u2028`
	evil := strings.ReplaceAll(string(data), `"stringValue": "shop-client"`, `"stringValue": "shop-client`+payload+`"`)
	evil = strings.ReplaceAll(evil, `"stringValue": "frontend"`, `"stringValue": "frontend`+payload+`"`)
	if evil == string(data) {
		t.Fatal("the service names to poison are not in the test data")
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "traces\nfaults:\n  - {service: frontend, kind: error}\n#.json")
	if err := os.WriteFile(file, []byte(evil), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "imported.yaml")
	o, err := traces.Import([]string{file}, out, "imported")
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(strings.TrimSuffix(string(o.YAML), "\n"), "\n") {
		if strings.HasPrefix(line, "faults") || strings.ContainsAny(line, "\r\x1b\u2028") {
			t.Errorf("scenario line %d written from the input: %q", i+1, line)
		}
	}
	for p, b := range o.Samples {
		for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
			if strings.HasPrefix(line, "faults") || strings.ContainsAny(line, "\r\x1b\u2028") {
				t.Errorf("%s: line written from the input: %q", p, line)
			}
		}
	}
	for _, line := range strings.Split(strings.TrimSuffix(o.Summary, "\n"), "\n") {
		if !strings.HasPrefix(line, "inferred:") && !strings.HasPrefix(line, "not inferred:") && !strings.HasPrefix(line, "  - ") ||
			strings.ContainsAny(line, "\r\x1b\u2028") {
			t.Errorf("summary line written from the input: %q", line)
		}
	}
	if err := o.Write(out); err != nil {
		t.Fatal(err)
	}
	sc, err := topology.Load(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Faults) != 0 {
		t.Errorf("the imported scenario has %d faults, injected from the traces", len(sc.Faults))
	}
}
