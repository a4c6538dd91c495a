package traces_test

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stormsim/stormsim/topology"
	"github.com/stormsim/stormsim/traces"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// TestImportHandwritten imports the hand-made shop traces (see
// testdata/gen_handwritten.py for what they hold) in both formats. Both
// must give exactly the scenario the traces were written to show — checked
// field by field below, then byte for byte against the golden file.
func TestImportHandwritten(t *testing.T) {
	for _, file := range []string{"shop.otlp.json", "shop.jaeger.json"} {
		t.Run(file, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "shop.yaml")
			o, err := traces.Import([]string{filepath.Join("testdata", file)}, out, "shop")
			if err != nil {
				t.Fatal(err)
			}
			if err := o.Write(out); err != nil {
				t.Fatal(err)
			}
			sc, err := topology.Load(out, nil)
			if err != nil {
				t.Fatal(err)
			}
			w := sc.Workload
			if w.Entry != "frontend" || w.Client.Timeout != 200*time.Millisecond || w.Client.Retry.MaxAttempts != 2 ||
				!slices.Equal(classes(w.Client.Retry.On), []string{"timeout"}) || w.Client.Retry.Backoff.Initial != 20*time.Millisecond {
				t.Errorf("workload: want entry frontend, client timeout 200ms, 2 attempts on [timeout] after 20ms; got %s, %v, %d on %v after %v",
					w.Entry, w.Client.Timeout, w.Client.Retry.MaxAttempts, w.Client.Retry.On, w.Client.Retry.Backoff.Initial)
			}
			fe := sc.Service("frontend")
			if fe == nil || len(fe.Calls) != 2 || len(fe.Calls[0].Parallel) != 2 || fe.Calls[1].To != "payments" {
				t.Fatalf("frontend: want a parallel group then payments, got %+v", fe)
			}
			inv, pr := fe.Calls[0].Parallel[0], fe.Calls[0].Parallel[1]
			if inv.To != "inventory" || inv.Retry.MaxAttempts > 1 || pr.To != "pricing" || pr.Retry.MaxAttempts != 2 ||
				!slices.Equal(classes(pr.Retry.On), []string{"unavailable"}) || pr.Retry.Backoff.Initial != 5*time.Millisecond {
				t.Errorf("frontend's group: want inventory (no retry) and pricing (2 attempts on [unavailable] after 5ms), got %+v and %+v", inv, pr)
			}
			if p := sc.Service("pricing"); p.ErrorRate != 0.25 || p.ErrorClass != "unavailable" {
				t.Errorf("pricing: want error rate 0.25 (1 of 4) unavailable, got %v %s", p.ErrorRate, p.ErrorClass)
			}
			if p := sc.Service("payments"); p.ServiceTime.Dist != "constant" || p.ServiceTime.Value != 18*time.Millisecond {
				t.Errorf("payments: want a constant 18ms own time, got %+v", p.ServiceTime)
			}
			var got strings.Builder
			got.Write(o.YAML)
			got.WriteString("---- summary\n" + o.Summary)
			for _, p := range slices.Sorted(mapsKeys(o.Samples)) {
				got.WriteString("---- " + filepath.Base(p) + "\n")
				got.Write(o.Samples[p])
			}
			golden(t, filepath.Join("testdata", strings.TrimSuffix(file, ".json")+".golden"), got.String())
		})
	}
}

func classes[S ~string](on []S) []string {
	out := make([]string, len(on))
	for i, c := range on {
		out[i] = string(c)
	}
	return out
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (run with -update after checking):\n--- got\n%s", path, got)
	}
}

// TestReadErrors: bad files are errors that name the file, the line of
// the JSON document and what is wrong, never a panic or empty success.
func TestReadErrors(t *testing.T) {
	for _, tc := range []struct {
		data, want string
	}{
		{"", "x.json: no trace data"},
		{"[1, 2]", "x.json:1: want a JSON object"},
		{`{"foo": 1}`, "x.json:1: neither OTLP JSON (resourceSpans) nor a Jaeger export (data)"},
		{"{\"resourceSpans\": []}\n{\"resourceSpans\": [\n{]}", "x.json:3:"},
		{`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"zz"}]}]}]}`, "x.json:1: OTLP JSON:"},
		{`{"data": 5}`, "x.json:1: Jaeger JSON: data: want an array, got a JSON number"},
		{"\n\n{\"data\": [{\"spans\": [{\"spanID\": 7}]}]}", "x.json:3: Jaeger JSON: data.spans.spanID: want a string, got a JSON number"},
		{`{"data": [{"spans": [{"spanID": "1", "duration": -5}]}]}`, "x.json:1: data[0].spans[0]: duration: must be ≥ 0, got -5"},
	} {
		_, _, err := traces.Read("x.json", []byte(tc.data))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%.40q: got %v, want an error with %q", tc.data, err, tc.want)
		}
	}
}
