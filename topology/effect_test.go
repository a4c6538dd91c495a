package topology

import (
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stormsim/stormsim/internal/golden"
)

// effectsBase has a service of each kind of effect and an irrevocable step;
// the cases below break one key at a time, naming its line.
const effectsBase = `name: effects
duration: 1s
workload:
  entry: shop
  rate: 10
  deadline: 1s
services:
  - name: shop
    workers: 1
    service_time: {dist: constant, value: 1ms}
    calls:
      - to: ledger
      - to: pay
        timeout: 100ms
        irrevocable: true
      - to: mailer
        timeout: 100ms
  - name: ledger
    workers: 1
    service_time: {dist: constant, value: 1ms}
    versioned_write: {entities: 10}
  - name: pay
    workers: 1
    service_time: {dist: constant, value: 1ms}
    external_effect: {dedupe: key}
  - name: mailer
    workers: 1
    service_time: {dist: constant, value: 1ms}
    external_effect: {}
`

const plainScenario = `name: plain
duration: 1s
workload: {entry: a, rate: 1, client: {timeout: 1s}}
services:
  - {name: a, workers: 1, service_time: {dist: constant, value: 1ms}}
`

func TestEffectsDefaults(t *testing.T) {
	sc, err := Parse("effects.yaml", []byte(effectsBase), nil)
	if err != nil {
		t.Fatal(err)
	}
	if vw := sc.Service("ledger").VersionedWrite; vw.Retry != RetryOperation || vw.Attempts != DefaultVersionedAttempts || !vw.RedoesOperation() {
		t.Errorf("versioned_write defaults = %+v, want retry operation, attempts %d", *vw, DefaultVersionedAttempts)
	}
	if e := sc.Service("mailer").ExternalEffect; e.Dedupe != DedupeNone || e.DedupesByKey() {
		t.Errorf("mailer external_effect = %+v, want dedupe none", *e)
	}
	if e := sc.Service("pay").ExternalEffect; !e.DedupesByKey() {
		t.Errorf("pay external_effect = %+v, want dedupe key", *e)
	}
	if !sc.HasEffects() {
		t.Error("HasEffects = false")
	}
	// serve runs every effect key: none is refused.
	if probs := sc.SimulatorOnly(); probs != nil {
		t.Errorf("SimulatorOnly = %v, want none: serve runs every effect key", probs)
	}
	plain, err := Parse("plain.yaml", []byte(plainScenario), nil)
	if err != nil {
		t.Fatal(err)
	}
	if plain.HasEffects() || plain.SimulatorOnly() != nil {
		t.Errorf("a scenario without effects: HasEffects %v, SimulatorOnly %q", plain.HasEffects(), plain.SimulatorOnly())
	}
}

func TestEffectsValidation(t *testing.T) {
	for _, tc := range []struct {
		name     string
		from, to string // replaced in effectsBase
		sets     []string
		want     string
	}{
		{name: "dedupe", from: "dedupe: key", to: "dedupe: yes",
			want: `effects.yaml:25: services[2].external_effect.dedupe: must be none or key, got "yes"`},
		{name: "entities", from: "entities: 10", to: "entities: 0",
			want: "effects.yaml:21: services[1].versioned_write.entities: must be ≥ 1 (the entities the writes spread over), got 0"},
		{name: "entities missing", from: "{entities: 10}", to: "{retry: step}",
			want: "effects.yaml:21: services[1].versioned_write.entities: must be ≥ 1"},
		{name: "too many entities", from: "entities: 10", to: "entities: 10000001",
			want: "effects.yaml:21: services[1].versioned_write.entities: must be ≤ 10000000, got 10000001"},
		{name: "retry", from: "entities: 10", to: "entities: 10, retry: layer",
			want: `effects.yaml:21: services[1].versioned_write.retry: must be operation or step, got "layer"`},
		{name: "attempts", from: "entities: 10", to: "entities: 10, attempts: 0",
			want: "effects.yaml:21: services[1].versioned_write.attempts: must be in 1…1000, got 0"},
		{name: "attempts with step", from: "entities: 10", to: "entities: 10, retry: step, attempts: 2",
			want: "effects.yaml:21: services[1].versioned_write.attempts: applies only to retry: operation"},
		{name: "unknown key", from: "entities: 10", to: "entites: 10",
			want: "effects.yaml:21: services[1].versioned_write.entites: unknown key (did you mean entities?)"},
		{name: "irrevocable without timeout", from: "        timeout: 100ms\n        irrevocable", to: "        irrevocable",
			want: "effects.yaml:13: services[0].calls[1].timeout: required (> 0): past this irrevocable step no deadline bounds the call"},
		{name: "later step without timeout", from: "      - to: mailer\n        timeout: 100ms\n", to: "      - to: mailer\n",
			want: "effects.yaml:16: services[0].calls[2].timeout: required (> 0): past the irrevocable step calls[1] no deadline bounds the call"},
		{name: "client", sets: []string{"workload.client.irrevocable=true"},
			want: "workload.client.irrevocable: marks a step of a service's calls, not the client's call"},
		{name: "parallel member", from: "      - to: pay\n        timeout: 100ms\n        irrevocable: true\n",
			to:   "      - parallel:\n          - {to: pay, timeout: 100ms, irrevocable: true}\n",
			want: "effects.yaml:14: services[0].calls[1].parallel[0].irrevocable: marks a whole step: set it on the parallel group, not on one member"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := effectsBase
			if tc.from != "" {
				if !strings.Contains(src, tc.from) {
					t.Fatalf("effectsBase lacks %q", tc.from)
				}
				src = strings.Replace(src, tc.from, tc.to, 1)
			}
			_, err := Parse("effects.yaml", []byte(src), tc.sets)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

func TestEffectsTooManyExternal(t *testing.T) {
	var b strings.Builder
	b.WriteString("name: many\nduration: 1s\nworkload: {entry: s0, rate: 1, client: {timeout: 1s}}\nservices:\n")
	for i := range MaxExternalEffects + 1 {
		b.WriteString("  - {name: s" + strconv.Itoa(i) + ", workers: 1, service_time: {dist: constant, value: 1ms}, external_effect: {}}\n")
	}
	_, err := Parse("many.yaml", []byte(b.String()), nil)
	want := "many.yaml:69: services[64].external_effect: at most 64 services may have an external effect"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v\nwant it to contain %q", err, want)
	}
}

// TestEffectsBrokenGolden pins the whole report of a scenario breaking
// every effect key once (testdata/broken/effects.yaml): each problem at its
// line, in order. Run with -update after a deliberate change.
func TestEffectsBrokenGolden(t *testing.T) {
	_, err := Load(filepath.Join("testdata", "broken", "effects.yaml"), nil)
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("Load: %v, want Problems", err)
	}
	got := err.Error() + "\n"
	for _, line := range strings.Split(strings.TrimSpace(got), "\n") {
		if !positioned.MatchString(line) {
			t.Errorf("problem does not name its position: %q", line)
		}
	}
	golden.Check(t, filepath.Join("testdata", "broken", "effects.golden"), []byte(got))
}

// The valid scenario of every effect key loads (it also seeds FuzzParse).
func TestEffectsScenarioLoads(t *testing.T) {
	sc, err := Load(filepath.Join("testdata", "effects.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !sc.HasEffects() || sc.SimulatorOnly() != nil {
		t.Errorf("HasEffects %v, SimulatorOnly %v: want effects, none simulator-only", sc.HasEffects(), sc.SimulatorOnly())
	}
}
