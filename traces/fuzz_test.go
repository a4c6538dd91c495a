package traces_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stormsim/stormsim/topology"
	"github.com/stormsim/stormsim/traces"
)

// FuzzImport feeds arbitrary bytes to the readers. They must never panic;
// whatever they accept must infer without panicking, and when a request
// could be followed to an entry the scenario written must load.
func FuzzImport(f *testing.F) {
	for _, name := range []string{"shop.otlp.json", "shop.jaeger.json"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"resourceSpans":[]}` + "\n" + `{"resourceSpans":[]}`))
	f.Add([]byte(`{"data":[{"traceID":"1","spans":[{"traceID":"1","spanID":"2","startTime":1,"duration":5,"processID":"p","tags":[{"key":"span.kind","value":"server"}]}],"processes":{"p":{"serviceName":"a b/c"}}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		spans, _, err := traces.Read("fuzz.json", data)
		if err != nil {
			return
		}
		m := traces.Infer(spans)
		if m.Entry == "" {
			return
		}
		o := m.Scenario(traces.WriteOptions{Sources: []string{"fuzz.json"}})
		if _, err := topology.Parse("imported.yaml", o.YAML, nil); err != nil {
			t.Fatalf("the imported scenario does not load: %v\n%s", err, o.YAML)
		}
	})
}
