package topology

import "testing"

func TestProblemAt(t *testing.T) {
	src := []byte(`name: w
duration: 1s
workload: {entry: a, rate: 1}
services:
  - name: a
    workers: 2
    service_time: {dist: constant, value: 1ms}
`)
	for _, tc := range []struct {
		name, path string
		sets       []string
		want       string
	}{
		{"a key given", "services[0].workers", nil, "w.yaml:6: services[0].workers: no"},
		{"a key absent: its parent's line", "services[0].consumes.ordered", nil, "w.yaml:5: services[0].consumes.ordered: no"},
		{"set by an override", "services[0].workers", []string{"services.0.workers=3"}, "--set services.0.workers=3: services[0].workers: no"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := Parse("w.yaml", src, tc.sets)
			if err != nil {
				t.Fatal(err)
			}
			if got := sc.ProblemAt(tc.path, "no").String(); got != tc.want {
				t.Errorf("ProblemAt(%q) = %q, want %q", tc.path, got, tc.want)
			}
		})
	}
	built := &Scenario{Name: "code"}
	if got := built.ProblemAt("services[0].workers", "no").String(); got != "scenario: services[0].workers: no" {
		t.Errorf("a scenario built in code: %q", got)
	}
}
