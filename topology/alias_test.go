package topology

import (
	"strconv"
	"testing"
	"time"
)

// aliased shares blocks and values between services three ways: an alias
// of a block, an alias of a scalar, and a << merge.
const aliased = `name: aliased
duration: 10s
x-defaults: &defaults
  workers: 4
  service_time: {dist: constant, value: 3ms}
workload: {entry: a, rate: 10}
services:
  - name: a
    workers: 2
    service_time: &st {dist: constant, value: 1ms}
    calls:
      - {to: b, timeout: &t 100ms}
      - {to: c, timeout: *t}
  - name: b
    workers: 2
    service_time: *st
  - name: c
    <<: *defaults
  - name: d
    <<: *defaults
variants:
  - {name: slow-a, set: [services.a.service_time.value=50ms]}
  - {name: slow-b, set: [services.b.service_time.value=60ms]}
  - {name: slow-c, set: [services.c.service_time.value=70ms]}
`

// TestSetThroughAliases: an override changes exactly the node it names,
// whether that node is an alias, the anchor of aliases, or merged in; the
// other services sharing it keep the file's value (issue 17, item 5: a
// --set on a changed b too).
func TestSetThroughAliases(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		set        string
		a, b, c, d time.Duration // service_time.value of each service
		ab, ac     time.Duration // timeouts of a's calls to b and c
	}{
		{"", 1 * ms, 1 * ms, 3 * ms, 3 * ms, 100 * ms, 100 * ms},
		{"services.a.service_time.value=50ms", 50 * ms, 1 * ms, 3 * ms, 3 * ms, 100 * ms, 100 * ms},
		{"services.b.service_time.value=60ms", 1 * ms, 60 * ms, 3 * ms, 3 * ms, 100 * ms, 100 * ms},
		{"services.c.service_time.value=70ms", 1 * ms, 1 * ms, 70 * ms, 3 * ms, 100 * ms, 100 * ms},
		{"services.a.calls.b.timeout=5ms", 1 * ms, 1 * ms, 3 * ms, 3 * ms, 5 * ms, 100 * ms},
		{"services.a.calls.c.timeout=7ms", 1 * ms, 1 * ms, 3 * ms, 3 * ms, 100 * ms, 7 * ms},
	} {
		var sets []string
		if c.set != "" {
			sets = []string{c.set}
		}
		sc, err := Parse("aliased.yaml", []byte(aliased), sets)
		if err != nil {
			t.Fatalf("%s: %v", c.set, err)
		}
		got := [6]time.Duration{sc.Service("a").ServiceTime.Value, sc.Service("b").ServiceTime.Value,
			sc.Service("c").ServiceTime.Value, sc.Service("d").ServiceTime.Value,
			sc.Service("a").Calls[0].Timeout, sc.Service("a").Calls[1].Timeout}
		if want := [6]time.Duration{c.a, c.b, c.c, c.d, c.ab, c.ac}; got != want {
			t.Errorf("--set %s: a, b, c, d service times and a's timeouts = %v, want %v", c.set, got, want)
		}
		// The merged block keeps the keys the override did not name.
		if sc.Service("c").ServiceTime.Dist != "constant" || sc.Service("c").Workers != 4 {
			t.Errorf("--set %s: c = %+v, want the merged defaults", c.set, sc.Service("c"))
		}
	}
	// Variants: each changes only its own service, and checking one does
	// not leave its change behind for the next or for the scenario.
	sc, err := Parse("aliased.yaml", []byte(aliased), nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][3]time.Duration{
		"slow-a": {50 * ms, 1 * ms, 3 * ms}, "slow-b": {1 * ms, 60 * ms, 3 * ms}, "slow-c": {1 * ms, 1 * ms, 70 * ms},
	} {
		v, err := sc.Variant(name)
		if err != nil {
			t.Fatal(err)
		}
		got := [3]time.Duration{v.Service("a").ServiceTime.Value, v.Service("b").ServiceTime.Value, v.Service("c").ServiceTime.Value}
		if got != want {
			t.Errorf("variant %s: a, b, c service times %v, want %v", name, got, want)
		}
	}
}

// FuzzSetAliases applies fuzzed overrides to a scenario that shares nodes
// through aliases and merges: no panic, and a scalar override that loads
// changes that value and leaves every other service's service time as the
// file has it.
func FuzzSetAliases(f *testing.F) {
	for _, s := range []string{"a", "b", "c", "d"} {
		f.Add(s, "service_time.value", "9ms")
		f.Add(s, "workers", "7")
		f.Add(s, "service_time", "x")
	}
	f.Add("a", "calls.b.timeout", "1s")
	f.Add("a", "calls.0.retry.max_attempts", "2")
	base, err := Parse("aliased.yaml", []byte(aliased), nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, svc, path, value string) {
		set := "services." + svc + "." + path + "=" + value
		sc, err := Parse("aliased.yaml", []byte(aliased), []string{set})
		if err != nil {
			return
		}
		for i, s := range base.Services {
			if s.Name == svc || strconv.Itoa(i) == svc { // the service the override names
				continue
			}
			if got := sc.Service(s.Name); got == nil || got.ServiceTime.Value != s.ServiceTime.Value {
				t.Fatalf("--set %s changed service %s's service time", set, s.Name)
			}
		}
	})
}
