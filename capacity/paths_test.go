package capacity

import (
	"strings"
	"testing"

	"github.com/stormsim/stormsim/topology"
)

func TestPathOf(t *testing.T) {
	sc, err := topology.Parse("chain.yaml", []byte(`
name: chain
duration: 10s
workload:
  entry: api
  rate: 250
  deadline: 1s
  client: {timeout: 500ms, retry: {max_attempts: 3}}
services:
  - name: api
    workers: 16
    service_time: {dist: constant, value: 1ms}
    calls:
      - to: db
        timeout: 80ms
        budget: {kind: ratio, ratio: 0.2}
  - name: db
    workers: 4
    service_time: {dist: exponential, mean: 5ms}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path  string
		kind  Kind
		value float64
		set   bool
	}{
		{"workload.rate", Real, 250, true},
		{"services.db.workers", Integer, 4, true},
		{"services.api.calls.db.timeout", Duration, 0.08, true},
		{"services.api.calls.db.budget.ratio", Real, 0.2, true},
		{"services.api.calls.0.budget.ratio", Real, 0.2, true},
		{"workload.client.retry.max_attempts", Integer, 3, true},
		{"services.db.service_time.mean", Duration, 0.005, true},
		{"services.db.replicas", Integer, 1, true},           // omitted: one replica
		{"workload.instances", Integer, 1, true},             // omitted: one instance
		{"services.db.calls.x.budget.ratio", Real, 0, false}, // no such call: absent
		{"services.db.breaker.failures", 0, 0, false},        // not a path at all (checked below)
	} {
		k, v, set, err := PathOf(sc, tc.path)
		if tc.path == "services.db.breaker.failures" {
			if err == nil || !strings.Contains(err.Error(), `no key "breaker"`) {
				t.Errorf("%s: err %v, want no key breaker", tc.path, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.path, err)
			continue
		}
		if k != tc.kind || v != tc.value || set != tc.set {
			t.Errorf("%s = %v %g %v, want %v %g %v", tc.path, k, v, set, tc.kind, tc.value, tc.set)
		}
	}
	for _, tc := range []struct{ path, want string }{
		{"workload.entry", "not a number"},
		{"workload.rate.x", "single value"},
		{"nope", `no key "nope"`},
		{"services.db", "not a number"},
	} {
		if _, _, _, err := PathOf(sc, tc.path); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.path, err, tc.want)
		}
	}
}

func TestKindFormatParse(t *testing.T) {
	for _, tc := range []struct {
		k    Kind
		in   string
		v    float64
		back string
	}{
		{Integer, "24", 24, "24"},
		{Real, "0.1", 0.1, "0.1"},
		{Real, "769.7", 769.7, "769.7"},
		{Duration, "250ms", 0.25, "250ms"},
	} {
		v, err := tc.k.Parse(tc.in)
		if err != nil || v != tc.v {
			t.Errorf("%v.Parse(%q) = %g, %v", tc.k, tc.in, v, err)
		}
		if got := tc.k.Format(v); got != tc.back {
			t.Errorf("%v.Format(%g) = %q, want %q", tc.k, v, got, tc.back)
		}
	}
	if _, err := Integer.Parse("2.5"); err == nil {
		t.Error("Integer.Parse(2.5) succeeded")
	}
	if _, _, err := ParseRange(Integer, "8:4"); err == nil {
		t.Error("ParseRange(8:4) succeeded")
	}
	if lo, hi, err := DefaultRange("services.db.workers", Integer, 6); err != nil || lo != 1 || hi != 24 {
		t.Errorf("DefaultRange(6) = %g %g %v, want 1 24", lo, hi, err)
	}
	if _, _, err := DefaultRange("x", Real, 0); err == nil {
		t.Error("DefaultRange of an unset value succeeded")
	}
}
