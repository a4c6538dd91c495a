package k8s

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/stormsim/stormsim/internal/golden"
	"github.com/stormsim/stormsim/topology"
)

// scenario is a small scenario with the characters a ConfigMap must carry
// verbatim: comments, quotes, a colon in a value, non-ASCII text, and a
// blank line.
const scenario = `# a "quoted" comment: with a colon → and an arrow
name: chain
seed: 7
duration: 30s

workload: {entry: a, rate: 100}
services:
  - name: a
    workers: 4
    service_time: {dist: exponential, mean: 1ms}
`

func baseOptions(mode string, shards int) Options {
	o := Options{
		Mode:         mode,
		ScenarioName: "Chain Demo",
		Scenario:     []byte(scenario),
		Shards:       shards,
		Image:        "ghcr.io/example/stormsim:v1.0.0",
		PVCSize:      "5Gi",
	}
	switch mode {
	case "sweep":
		o.Args = []string{"--param", "workload.rate", "--range", "100:1000:100", "--replicas", "5"}
		o.Parallelism = 3
	case "capacity":
		o.Args = []string{"--slo", "p99<200ms,success>=99%", "--range", "50:500"}
	case "load":
		o.Args = []string{"--target", "http://orders.default.svc:8080", "--allow-remote", "--rate", "2000", "--duration", "5m"}
		o.StartAt = "2026-12-01T10:00:00Z"
	}
	return o
}

func TestRenderGolden(t *testing.T) {
	for _, mode := range Modes {
		t.Run(mode, func(t *testing.T) {
			var b bytes.Buffer
			if err := Render(&b, baseOptions(mode, 4)); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata", mode+".yaml"), b.Bytes())
		})
	}
}

// TestRenderedManifestsAreValid decodes every rendering into the
// Kubernetes API types with unknown fields rejected, then checks the rules
// a sharded run depends on, over modes, shard counts and options.
func TestRenderedManifestsAreValid(t *testing.T) {
	for _, mode := range Modes {
		for _, shards := range []int{1, 2, 7, 100} {
			o := baseOptions(mode, shards)
			if mode == "sweep" {
				o.Parallelism = min(3, shards)
			}
			if shards%2 == 0 {
				o.Namespace = "perf"
				o.PVCSize = ""
				o.BackoffLimitPerIndex = -1
			}
			var b bytes.Buffer
			if err := Render(&b, o); err != nil {
				t.Fatalf("%s/%d: %v", mode, shards, err)
			}
			objs, err := decodeStrict(b.Bytes())
			if err != nil {
				t.Fatalf("%s/%d: %v", mode, shards, err)
			}
			if err := checkRun(objs, mode, shards); err != nil {
				t.Errorf("%s/%d:\n%v", mode, shards, err)
			}
			if len(objs.ConfigMaps) != 1 || objs.ConfigMaps[0].Data[ScenarioKey] != scenario {
				t.Errorf("%s/%d: the ConfigMap does not hold the scenario verbatim", mode, shards)
			}
			if wantPVC := o.PVCSize != ""; (len(objs.PVCs) == 1) != wantPVC {
				t.Errorf("%s/%d: %d claims rendered, PVCSize %q", mode, shards, len(objs.PVCs), o.PVCSize)
			}
			for _, j := range objs.Jobs {
				if j.Namespace != o.Namespace {
					t.Errorf("%s/%d: Job %s namespace %q, want %q", mode, shards, j.Name, j.Namespace, o.Namespace)
				}
			}
		}
	}
}

// TestCheckRunCatchesBrokenManifests makes sure the validation can fail:
// each mutation of a good rendering must be reported.
func TestCheckRunCatchesBrokenManifests(t *testing.T) {
	var good bytes.Buffer
	if err := Render(&good, baseOptions("load", 4)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, old, new string }{
		{"unknown field", "completionMode: Indexed", "completionMode: Indexed\n  completionz: 4"},
		{"wrong type", "completions: 4", "completions: four"},
		{"not indexed", "completionMode: Indexed", "completionMode: NonIndexed"},
		{"completions", "completions: 4", "completions: 5"},
		{"parallelism", "parallelism: 4", "parallelism: 2"},
		{"restart policy", "restartPolicy: Never", "restartPolicy: OnFailure"},
		{"no shard-from-env", `- "--shard-from-env"`, `- "--verbose"`},
		{"mount without volume", "- name: scenario\n              mountPath", "- name: scenery\n              mountPath"},
		{"shards env", `value: "4"`, `value: "3"`},
		{"no start-at", `- "--start-at"`, `- "--verbose"`},
		{"configmap name", "name: \"stormsim-load-chain-demo-scenario\"\n  labels", "name: \"other\"\n  labels"},
	} {
		broken := strings.Replace(good.String(), c.old, c.new, 1)
		if broken == good.String() {
			t.Fatalf("%s: mutation did not apply", c.name)
		}
		objs, err := decodeStrict([]byte(broken))
		if err == nil {
			err = checkRun(objs, "load", 4)
		}
		if err == nil {
			t.Errorf("%s: not detected", c.name)
		}
	}
}

func TestOptionErrors(t *testing.T) {
	for _, c := range []struct {
		name    string
		mut     func(*Options)
		wantErr string
	}{
		{"mode", func(o *Options) { o.Mode = "run" }, `mode "run"`},
		{"empty scenario", func(o *Options) { o.Scenario = nil }, "scenario: empty"},
		{"binary scenario", func(o *Options) { o.Scenario = []byte{0xff, 0xfe} }, "not UTF-8"},
		{"shards", func(o *Options) { o.Shards = 0 }, "shards must be in [1, 100000]"},
		{"parallelism", func(o *Options) { o.Parallelism = 9 }, "parallelism must be in [1, shards=4]"},
		{"image", func(o *Options) { o.Image = "" }, "image"},
		{"load parallelism", func(o *Options) { o.Mode = "load"; o.Parallelism = 2; o.StartAt = "2026-12-01T10:00:00Z" }, "must equal shards"},
		{"load start", func(o *Options) { o.Mode = "load"; o.Parallelism = 0 }, "needs --start-at"},
		{"start for sweep", func(o *Options) { o.StartAt = "2026-12-01T10:00:00Z" }, "--start-at is for load"},
		{"bad start", func(o *Options) { o.Mode = "load"; o.Parallelism = 0; o.StartAt = "noon" }, "RFC 3339"},
		{"name", func(o *Options) { o.Name = "Bad_Name" }, `name "Bad_Name"`},
		{"namespace", func(o *Options) { o.Namespace = "a.b" }, "namespace"},
		{"cpu", func(o *Options) { o.Resources.CPU = "two" }, `quantity "two"`},
		{"fixed arg", func(o *Options) { o.Args = []string{"--out=/x"} }, "--out is set by the manifest"},
		{"no name", func(o *Options) { o.ScenarioName = "" }, "scenario name"},
		{"merge wait", func(o *Options) { o.MergeWait = -time.Second }, "merge wait"},
		{"run label", func(o *Options) { o.Run = "a.b" }, `run label "a.b"`},
		{"run in args", func(o *Options) { o.Args = []string{"--run=x"} }, "--run is set by the manifest"},
	} {
		o := baseOptions("sweep", 4)
		c.mut(&o)
		err := Render(new(bytes.Buffer), o)
		if err == nil || !strings.Contains(err.Error(), c.wantErr) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.wantErr)
		}
	}
}

func TestDefaultName(t *testing.T) {
	for _, c := range []struct{ mode, scenario, want string }{
		{"sweep", "retry-storm", "stormsim-sweep-retry-storm"},
		{"load", "Five Layer_Chain!", "stormsim-load-five-layer-chain"},
		{"capacity", strings.Repeat("x", 80), "stormsim-capacity-" + strings.Repeat("x", maxNameLen-len("stormsim-capacity-"))},
		{"sweep", "a" + strings.Repeat("-", 60), "stormsim-sweep-a"},
		{"sweep", "_under score_", "stormsim-sweep-under-score"},
		{"sweep", "!!!", "stormsim-sweep"},
	} {
		got := DefaultName(c.mode, c.scenario)
		if got != c.want || !dnsLabel.MatchString(got) || len(got) > maxNameLen {
			t.Errorf("DefaultName(%q, %q) = %q, want %q", c.mode, c.scenario, got, c.want)
		}
	}
}

// TestLiteral checks the block-scalar encoder on the cases that pick its
// header or force quoting; FuzzLiteral checks the round trip at large.
func TestLiteral(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"a: 1\n", "|\n  a: 1"},
		{"a: 1", "|-\n  a: 1"},
		{"a\n\n", "|+\n  a\n"},
		{"a\n\nb\n", "|\n  a\n\n  b"},
		{" indented\n", `" indented\n"`},
		{"bell\a\n", `"bell\u0007\n"`},
		{"", `""`},
	} {
		if got := literal(2, c.in); got != c.want {
			t.Errorf("literal(%q) = %q, want %q", c.in, got, c.want)
		}
		roundTrip(t, c.in)
	}
}

func roundTrip(t *testing.T, s string) {
	t.Helper()
	doc := "data:\n  k: " + literal(4, s) + "\nnext: 1\n"
	var got struct {
		Data map[string]string
		Next int
	}
	if err := yaml.Unmarshal([]byte(doc), &got); err != nil {
		t.Fatalf("literal(%q) does not parse: %v\n%s", s, err, doc)
	}
	if got.Data["k"] != s || got.Next != 1 {
		t.Fatalf("literal(%q) decodes to %q (next %d)\n%s", s, got.Data["k"], got.Next, doc)
	}
}

func FuzzLiteral(f *testing.F) {
	for _, s := range []string{scenario, "a", "a\n\n\n", "\n\nx\n", "x\n  \n", "\t tab", "x\r\ny", "- a\n- b", "k: |\n  nested\n", "é\u2028", "# only a comment"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			t.Skip("Render rejects non-UTF-8 scenarios before encoding")
		}
		roundTrip(t, s)
	})
}

// TestDeployTree keeps deploy/kubernetes in step with the renderer: each
// mode's job.yaml and merge-job.yaml there are its rendering with fixed
// options (-update rewrites them), and the tree's scenario is valid input.
func TestDeployTree(t *testing.T) {
	root := filepath.Join("..", "deploy", "kubernetes")
	for _, o := range DeployOptions() {
		docs, err := Documents(o)
		if err != nil {
			t.Fatal(err)
		}
		var stream bytes.Buffer
		for _, d := range docs {
			stream.WriteString("---\n")
			stream.Write(d.YAML)
			switch d.File {
			case "job.yaml", "merge-job.yaml":
				golden.Check(t, filepath.Join(root, o.Mode, d.File), d.YAML)
			case "pvc.yaml":
				golden.Check(t, filepath.Join(root, "base", d.File), d.YAML)
			}
		}
		objs, err := decodeStrict(stream.Bytes())
		if err != nil {
			t.Fatalf("%s: %v", o.Mode, err)
		}
		if err := checkRun(objs, o.Mode, o.Shards); err != nil {
			t.Errorf("%s: %v", o.Mode, err)
		}
	}
	// The scenarios the bases and the example ship must load as they are.
	for _, dir := range []string{"sweep", "capacity", "load", filepath.Join("examples", "sweep-16-shards")} {
		if _, err := topology.Load(filepath.Join(root, dir, ScenarioKey), nil); err != nil {
			t.Errorf("%s: %v", dir, err)
		}
	}
}

// TestRenderRunLabelsShardsAndMerge (issue 37, item 13): with a run label
// every shard records it and the merge Job waits for that run's shards, so
// a previous apply's complete shards under the same name are not merged.
func TestRenderRunLabelsShardsAndMerge(t *testing.T) {
	o := baseOptions("sweep", 4)
	o.Run = "nightly-42"
	docs, err := Documents(o)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"job.yaml":       "- \"--shard-from-env\"\n            - \"--out\"\n            - \"/results/stormsim-sweep-chain-demo/shard-$(JOB_COMPLETION_INDEX)\"\n            - \"--run\"\n            - \"nightly-42\"\n",
		"merge-job.yaml": "- \"--wait\"\n            - \"6h0m0s\"\n            - \"--run\"\n            - \"nightly-42\"\n            - \"/results/stormsim-sweep-chain-demo\"\n",
	}
	for _, d := range docs {
		if w, ok := want[d.File]; ok {
			if !strings.Contains(string(d.YAML), w) {
				t.Errorf("%s lacks the run label:\n%s", d.File, d.YAML)
			}
			delete(want, d.File)
		}
	}
	if len(want) > 0 {
		t.Errorf("not rendered: %v", want)
	}
}
