package topology

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stormsim/stormsim/policies"
)

// explicitZeroDoc gives each preset kind a key written as 0 (and one as
// null, which keeps the preset's value).
const explicitZeroDoc = `
name: zeros
duration: 10s
workload:
  entry: a
  rate: 10
  client:
    retry: {preset: grpc, backoff: {initial: 0}}
services:
  - {name: a, workers: 1, service_time: {dist: constant, value: 1ms}, calls: [
      {to: b, budget: {preset: finagle, min_per_sec: 0}, breaker: {preset: gobreaker, open_for: 0}},
      {to: b, budget: {preset: aws, retry_cost: 0, throttle_cost: 0}, breaker: {preset: hystrix, slow_call_duration: 0}},
      {to: b, budget: {preset: finagle, min_per_sec: ~}}]}
  - {name: b, workers: 1, service_time: {dist: constant, value: 1ms}}
`

// TestExplicitZeroBeatsPreset: a key written as 0 wins over the preset for
// every preset kind, in the scenario and in the policies built from it.
func TestExplicitZeroBeatsPreset(t *testing.T) {
	sc, err := Parse("zeros.yaml", []byte(explicitZeroDoc), nil)
	if err != nil {
		t.Fatal(err)
	}
	client, calls := sc.Workload.Client, sc.Service("a").Calls
	checks := []struct {
		name      string
		got, want any
	}{
		{"retry grpc backoff.initial: 0", client.Retry.Backoff.Initial, time.Duration(0)},
		{"retry grpc keeps max_attempts", client.Retry.MaxAttempts, 4},
		{"budget finagle min_per_sec: 0", calls[0].Budget.MinPerSec, 0.0},
		{"budget finagle keeps ratio", calls[0].Budget.Ratio, 0.2},
		{"breaker gobreaker open_for: 0", calls[0].Breaker.OpenFor, time.Duration(0)},
		{"breaker gobreaker keeps failures", calls[0].Breaker.Failures, 6},
		{"budget aws retry_cost: 0", calls[1].Budget.RetryCost, 0},
		{"budget aws throttle_cost: 0", calls[1].Budget.ThrottleCost, 0},
		{"budget aws keeps timeout_cost", calls[1].Budget.TimeoutCost, 10},
		{"breaker hystrix slow_call_duration: 0", calls[1].Breaker.SlowCallDuration, time.Duration(0)},
		{"budget finagle min_per_sec: null keeps the preset", calls[2].Budget.MinPerSec, 10.0},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}

	// The run builds from the same values: the client's first retry waits
	// 0 (proportional jitter of 0), and the budget with min_per_sec 0
	// refuses a retry before any request, where the preset's 10/s allows it.
	e, err := policies.NewEdge(client.EdgeConfig(), rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if d := e.Backoff.Delay(1, 0, e.Rand); d != 0 {
		t.Errorf("client's first retry waits %v, want 0", d)
	}
	for i, want := range map[int]bool{0: false, 2: true} {
		e, err := policies.NewEdge(calls[i].EdgeConfig(), rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			t.Fatal(err)
		}
		if got := e.Budget.TryRetry(time.Second, policies.Unavailable); got != want {
			t.Errorf("calls[%d] (min_per_sec %v): retry with no traffic admitted = %v, want %v", i, calls[i].Budget.MinPerSec, got, want)
		}
	}
}

// checkBuilds checks that what the loader accepted is what the run builds:
// each resolved policy config is a fixed point of Resolve (nothing is
// expanded again) and valid, and the edge the simulator and load mode
// build from the call (through Call.EdgeConfig) builds and carries it.
func checkBuilds(t *testing.T, sc *Scenario) {
	t.Helper()
	check := func(path string, c *Call) {
		if again, err := c.Retry.Resolve(nil); err != nil || !reflect.DeepEqual(again, c.Retry) {
			t.Errorf("%s.retry: resolved %+v again into %+v (%v)", path, c.Retry, again, err)
		}
		if b := c.Budget; b != nil {
			if again, err := b.Resolve(nil); err != nil || again != *b {
				t.Errorf("%s.budget: resolved %+v again into %+v (%v)", path, *b, again, err)
			}
		}
		if b := c.Breaker; b != nil {
			if again, err := b.Resolve(nil); err != nil || again != *b {
				t.Errorf("%s.breaker: resolved %+v again into %+v (%v)", path, *b, again, err)
			}
		}
		e, err := policies.NewEdge(c.EdgeConfig(), rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			t.Errorf("%s: validated, but the run cannot build it: %v", path, err)
			return
		}
		bo, _ := policies.NewBackoff(c.Retry.Backoff)
		on, _ := policies.ParseOutcomeSet(c.Retry.On, policies.DefaultRetryOn)
		if e.MaxAttempts != c.Retry.MaxAttempts || e.Backoff != bo || e.RetryOn != on {
			t.Errorf("%s: built %d attempts, %+v, on %b from %+v", path, e.MaxAttempts, e.Backoff, e.RetryOn, c.Retry)
		}
	}
	check("workload.client", &sc.Workload.Client)
	for i := range sc.Services {
		for j := range sc.Services[i].Calls {
			check(fmt.Sprintf("services[%d].calls[%d]", i, j), &sc.Services[i].Calls[j])
		}
	}
}

// genPolicy writes a random policy block of one kind: maybe a preset, and
// some of the keys, zero included where zero is meaningful. It returns the
// YAML flow mapping and the keys it wrote with their values.
func genPolicy(r *rand.Rand, presets []string, keys map[string][]string) (string, map[string]string) {
	written := map[string]string{}
	var parts []string
	if r.IntN(3) > 0 {
		p := presets[r.IntN(len(presets))]
		parts = append(parts, "preset: "+p)
		written["preset"] = p
	}
	for k, vals := range keys {
		if r.IntN(3) == 0 {
			v := vals[r.IntN(len(vals))]
			written[k] = v
		}
	}
	// Nested keys (backoff.x) go in their own mapping.
	nested := map[string][]string{}
	for k, v := range written {
		if k == "preset" {
			continue
		}
		if outer, inner, ok := strings.Cut(k, "."); ok {
			nested[outer] = append(nested[outer], inner+": "+v)
		} else {
			parts = append(parts, k+": "+v)
		}
	}
	for outer, kv := range nested {
		parts = append(parts, outer+": {"+strings.Join(kv, ", ")+"}")
	}
	return "{" + strings.Join(parts, ", ") + "}", written
}

var (
	retryKeys = map[string][]string{
		"max_attempts": {"1", "2", "5"}, "on": {"[unavailable]", "[timeout, error]", "[in_progress]"},
		"backoff.initial": {"0s", "10ms"}, "backoff.max": {"0s", "2s"}, "backoff.multiplier": {"1", "1.5"},
		"backoff.jitter": {"none", "full", "equal", "decorrelated", "proportional"}, "backoff.spread": {"0", "0.3"},
	}
	budgetKeys = map[string][]string{
		"min_per_sec": {"0", "5"}, "ratio": {"0.1", "0.5"}, "window": {"1s", "10s"}, "max_tokens": {"1", "100"},
		"token_ratio": {"0.5"}, "retry_cost": {"0", "3"}, "timeout_cost": {"0", "7"}, "throttle_cost": {"0", "2"},
		"no_retry_increment": {"0", "1"}, "capacity": {"0", "50"}, "percent": {"10"}, "min_concurrency": {"0", "4"},
		"scope": {"edge", "service"}, "kind": {"ratio", "token_bucket", "aws_quota", "concurrency"},
	}
	breakerKeys = map[string][]string{
		"open_for": {"0s", "2s"}, "failures": {"1", "3"}, "half_open_calls": {"1", "2"}, "min_calls": {"1", "20"},
		"failure_rate": {"25", "100"}, "slow_call_rate": {"50"}, "slow_call_duration": {"0s", "1s"},
		"window_type": {"count", "time"}, "window_size": {"5", "50"}, "kind": {"consecutive", "rate"},
	}
)

// fieldByKey returns the field of a config struct at a dotted yaml key.
func fieldByKey(v reflect.Value, key string) reflect.Value {
	for part := range strings.SplitSeq(key, ".") {
		f, ok := structFields(v.Type())[part]
		if !ok {
			return reflect.Value{}
		}
		v = v.FieldByIndex(f)
	}
	return v
}

// TestResolvedIsWhatRunsBuild generates random scenarios whose call
// policies mix presets with explicit keys (zeros included) and checks that
// an accepted scenario carries, for every key written, exactly the written
// value, for every key not written the preset's value, and that it is what
// the run builds (checkBuilds); a rejected one names file, line and path.
func TestResolvedIsWhatRunsBuild(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 1))
	accepted := 0
	for iter := range 400 {
		type block struct {
			kind    string
			written map[string]string
		}
		var blocks []block
		var b strings.Builder
		fmt.Fprintf(&b, "name: gen\nduration: 5s\nworkload:\n  entry: a\n  arrival: %s\n  rate: 10\n",
			[]string{"poisson", "constant"}[r.IntN(2)])
		b.WriteString("services:\n  - name: a\n    workers: 2\n    service_time: {dist: exponential, mean: 1ms}\n")
		fmt.Fprintf(&b, "    error_class: %s\n    downstream_failure: %s\n    calls:\n",
			errorClasses[r.IntN(len(errorClasses))], downstreams[r.IntN(len(downstreams))])
		for range 1 + r.IntN(3) {
			b.WriteString("      - to: b\n")
			for _, kind := range []string{"retry", "budget", "breaker"} {
				if r.IntN(4) == 0 {
					continue
				}
				var flow string
				var written map[string]string
				switch kind {
				case "retry":
					flow, written = genPolicy(r, policies.RetryPresetNames(), retryKeys)
				case "budget":
					flow, written = genPolicy(r, policies.BudgetPresetNames(), budgetKeys)
				case "breaker":
					flow, written = genPolicy(r, policies.BreakerPresetNames(), breakerKeys)
				}
				fmt.Fprintf(&b, "        %s: %s\n", kind, flow)
				blocks = append(blocks, block{kind, written})
			}
			blocks = append(blocks, block{}) // call separator
		}
		b.WriteString("  - name: b\n    workers: 1\n    service_time: {dist: constant, value: 1ms}\n")
		doc := b.String()

		sc, err := Parse("gen.yaml", []byte(doc), nil)
		if err != nil {
			checkPositioned(t, err)
			for _, p := range err.(Problems) {
				if p.Path == "" || p.File != "gen.yaml" {
					t.Errorf("case %d: problem without a field: %v", iter, p)
				}
			}
			continue
		}
		accepted++
		checkBuilds(t, sc)
		// Walk the blocks in the order they were written.
		calls, ci := sc.Service("a").Calls, 0
		for _, bl := range blocks {
			if bl.kind == "" {
				ci++
				continue
			}
			var cfg, preset reflect.Value
			c := &calls[ci]
			switch bl.kind {
			case "retry":
				cfg = reflect.ValueOf(c.Retry)
				if p, ok := bl.written["preset"]; ok {
					pc, _ := policies.RetryPreset(p)
					preset = reflect.ValueOf(pc)
				}
			case "budget":
				cfg = reflect.ValueOf(*c.Budget)
				if p, ok := bl.written["preset"]; ok {
					pc, _ := policies.BudgetPreset(p)
					preset = reflect.ValueOf(pc)
				}
			case "breaker":
				cfg = reflect.ValueOf(*c.Breaker)
				if p, ok := bl.written["preset"]; ok {
					pc, _ := policies.BreakerPreset(p)
					preset = reflect.ValueOf(pc)
				}
			}
			for key, val := range bl.written {
				f := fieldByKey(cfg, key)
				if bl.kind == "retry" && key == "max_attempts" && c.Retry.EachServerOnce {
					// each_server_once caps the attempts at the callee's replicas.
					if w, err := strconv.Atoi(val); err == nil {
						val = strconv.Itoa(min(w, sc.Service(c.To).ReplicaCount()))
					}
				}
				if got := fmt.Sprint(f.Interface()); !sameValue(got, val) {
					t.Errorf("case %d: calls[%d].%s.%s written %s, resolved %s\n%s", iter, ci, bl.kind, key, val, got, doc)
				}
			}
			if !preset.IsValid() {
				continue
			}
			for key := range keysOf(bl.kind) {
				if _, ok := bl.written[key]; ok {
					continue
				}
				want, got := fieldByKey(preset, key), fieldByKey(cfg, key)
				if !want.IsZero() && !reflect.DeepEqual(want.Interface(), got.Interface()) {
					t.Errorf("case %d: calls[%d].%s.%s not written: resolved %v, want the preset's %v\n%s", iter, ci, bl.kind, key, got, want, doc)
				}
			}
		}
	}
	// The generator must exercise the accepting path, not only rejections.
	t.Logf("accepted %d of 400", accepted)
	if accepted < 100 {
		t.Errorf("only %d of 400 generated scenarios were accepted", accepted)
	}
}

func keysOf(kind string) map[string][]string {
	switch kind {
	case "retry":
		return retryKeys
	case "budget":
		return budgetKeys
	}
	return breakerKeys
}

// sameValue compares a resolved field, printed by fmt, with the YAML
// value written for it.
func sameValue(got, written string) bool {
	if got == written {
		return true
	}
	if d, err := time.ParseDuration(written); err == nil {
		return got == d.String()
	}
	return strings.Trim(written, "[]") == strings.Trim(strings.ReplaceAll(got, " ", ", "), "[]") ||
		strings.ReplaceAll(strings.Trim(written, "[]"), ",", "") == strings.Trim(got, "[]")
}
