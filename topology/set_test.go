package topology

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/stormsim/stormsim/policies"
)

// TestSetOverrides applies --set overrides to valid scenarios and checks
// the decoded field that each one reaches.
func TestSetOverrides(t *testing.T) {
	tests := []struct {
		name  string
		file  string
		sets  []string
		check func(*Scenario) (got, want any)
	}{
		{"service by name", "base.yaml", []string{"services.back.workers=7"},
			func(s *Scenario) (any, any) { return s.Service("back").Workers, 7 }},
		{"top-level scalars", "base.yaml", []string{"seed=7", "duration=30s"},
			func(s *Scenario) (any, any) { return [2]any{s.Seed, s.Duration}, [2]any{uint64(7), 30 * time.Second} }},
		{"key absent from the file", "base.yaml", []string{"warmup=1500ms"},
			func(s *Scenario) (any, any) { return s.Warmup, 1500 * time.Millisecond }},
		{"pointer field", "base.yaml", []string{"services.front.queue=5"},
			func(s *Scenario) (any, any) { return *s.Service("front").Queue, 5 }},
		{"null resets a pointer", "base.yaml", []string{"services.back.queue=null"},
			func(s *Scenario) (any, any) { return s.Service("back").Queue == nil, true }},
		{"call by callee name", "base.yaml", []string{"services.front.calls.back.timeout=250ms"},
			func(s *Scenario) (any, any) { return s.Service("front").Calls[0].Timeout, 250 * time.Millisecond }},
		{"call by index", "base.yaml", []string{"services.front.calls.0.timeout=5ms"},
			func(s *Scenario) (any, any) { return s.Service("front").Calls[0].Timeout, 5 * time.Millisecond }},
		{"creates missing mappings", "base.yaml", []string{"services.front.calls.back.budget.ratio=0.1"},
			func(s *Scenario) (any, any) {
				b := s.Service("front").Calls[0].Budget
				if b == nil {
					return nil, 0.1
				}
				return b.Ratio, 0.1
			}},
		{"list element by index", "architecture.yaml", []string{"workload.schedule.0.rate=900"},
			func(s *Scenario) (any, any) {
				return [2]float64{s.Workload.Schedule[0].Rate, s.Workload.Schedule[1].Rate}, [2]float64{900, 500}
			}},
		{"appends one past the end", "base.yaml", []string{"workload.schedule.0.at=2s", "workload.schedule.0.rate=50"},
			func(s *Scenario) (any, any) { return s.Workload.Schedule, []RateStep{{At: 2 * time.Second, Rate: 50}} }},
		{"scalar list a,b", "base.yaml", []string{"services.front.calls.back.retry.on=timeout,error"},
			func(s *Scenario) (any, any) {
				return s.Service("front").Calls[0].Retry.On, []policies.RetryClass{"timeout", "error"}
			}},
		{"scalar list [a, b]", "base.yaml", []string{"services.front.calls.back.retry.on=[unavailable, timeout]"},
			func(s *Scenario) (any, any) {
				return s.Service("front").Calls[0].Retry.On, []policies.RetryClass{"unavailable", "timeout"}
			}},
		{"later set wins", "base.yaml", []string{"workload.rate=10", "workload.rate=20"},
			func(s *Scenario) (any, any) { return s.Workload.Rate, 20.0 }},
		{"boolean", "base.yaml", []string{"services.back.cancel_on_timeout=true"},
			func(s *Scenario) (any, any) { return s.Service("back").CancelOnTimeout, true }},
		{"null removes every fault", "architecture.yaml", []string{"faults=null"},
			func(s *Scenario) (any, any) { return len(s.Faults), 0 }},
		{"[] removes every fault", "architecture.yaml", []string{"faults=[]"},
			func(s *Scenario) (any, any) { return len(s.Faults), 0 }},
		{"null removes a policy block", "base.yaml", []string{"services.front.calls.back.budget.ratio=0.1", "services.front.calls.back.budget=null"},
			func(s *Scenario) (any, any) { return s.Service("front").Calls[0].Budget == nil, true }},
		{"fault by index", "architecture.yaml", []string{"faults.0.capacity=0.25"},
			func(s *Scenario) (any, any) { return *s.Faults[0].Capacity, 0.25 }},
		{"inside a flow mapping", "architecture.yaml", []string{"workload.client.retry.backoff.max=3s"},
			func(s *Scenario) (any, any) { return s.Workload.Client.Retry.Backoff.Max, 3 * time.Second }},
		{"preset by set, file keys laid over", "base.yaml", []string{"services.front.calls.back.retry.preset=grpc", "services.front.calls.back.retry.max_attempts=2"},
			func(s *Scenario) (any, any) {
				want, _ := policies.RetryPreset("grpc")
				want.Preset, want.MaxAttempts = "grpc", 2
				want, _ = want.Resolve(nil)
				return s.Service("front").Calls[0].Retry, want
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc, err := Load("testdata/"+tt.file, tt.sets)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := tt.check(sc); !reflect.DeepEqual(got, want) {
				t.Errorf("got %#v, want %#v", got, want)
			}
		})
	}
}

// TestSetDoesNotLeak checks that overrides change only the scenario they
// were given for: the file is reloaded unchanged without them.
func TestSetDoesNotLeak(t *testing.T) {
	a, err := Load("testdata/base.yaml", []string{"services.back.workers=9"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Load("testdata/base.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.Service("back").Workers != 9 || b.Service("back").Workers != 2 {
		t.Errorf("workers = %d and %d, want 9 and 2", a.Service("back").Workers, b.Service("back").Workers)
	}
}

// TestPresetOverlay checks that a block naming a preset is the preset with
// the block's own keys laid over it, for each policy kind.
func TestPresetOverlay(t *testing.T) {
	const doc = `
duration: 10s
workload: {entry: a, rate: 1}
services:
  - name: a
    workers: 1
    service_time: {dist: constant, value: 1ms}
    calls:
      - to: b
        retry: {preset: aws-standard, max_attempts: 5, on: [timeout], backoff: {max: 2s}}
        budget: {preset: envoy, min_concurrency: 7}
        breaker: {preset: gobreaker, open_for: 5s}
  - name: b
    workers: 1
    service_time: {dist: constant, value: 1ms}
`
	sc, err := Parse("overlay.yaml", []byte(doc), nil)
	if err != nil {
		t.Fatal(err)
	}
	c := sc.Service("a").Calls[0]

	retry, _ := policies.RetryPreset("aws-standard")
	retry.Preset, retry.MaxAttempts, retry.On, retry.Backoff.Max = "aws-standard", 5, []policies.RetryClass{"timeout"}, 2*time.Second
	retry, _ = retry.Resolve(nil)
	budget, _ := policies.BudgetPreset("envoy")
	budget.Preset, budget.MinConcurrency = "envoy", 7
	budget, _ = budget.Resolve(nil)
	breaker, _ := policies.BreakerPreset("gobreaker")
	breaker.Preset, breaker.OpenFor = "gobreaker", 5*time.Second
	breaker, _ = breaker.Resolve(nil)

	if !reflect.DeepEqual(c.Retry, retry) {
		t.Errorf("retry = %+v, want %+v", c.Retry, retry)
	}
	if c.Budget == nil || !reflect.DeepEqual(*c.Budget, budget) {
		t.Errorf("budget = %+v, want %+v", c.Budget, budget)
	}
	if c.Breaker == nil || !reflect.DeepEqual(*c.Breaker, breaker) {
		t.Errorf("breaker = %+v, want %+v", c.Breaker, breaker)
	}
	// The overlay must not have written into the preset table.
	again, _ := policies.RetryPreset("aws-standard")
	if again.MaxAttempts == 5 || slices.Equal(again.On, []policies.RetryClass{"timeout"}) {
		t.Errorf("preset table modified: %+v", again)
	}
}

// TestVariants derives each variant of a scenario and checks that its
// overrides, and only its, are applied.
func TestVariants(t *testing.T) {
	const doc = `
duration: 10s
workload: {entry: a, rate: 1}
services:
  - {name: a, workers: 1, service_time: {dist: constant, value: 1ms}}
variants:
  - {name: wide, set: [services.a.workers=8]}
  - {name: busy, set: [workload.rate=100, services.a.workers=2]}
`
	sc, err := Parse("variants.yaml", []byte(doc), []string{"seed=3"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		workers int
		rate    float64
	}{{"wide", 8, 1}, {"busy", 2, 100}} {
		v, err := sc.Variant(tt.name)
		if err != nil {
			t.Fatal(err)
		}
		if v.Service("a").Workers != tt.workers || v.Workload.Rate != tt.rate || v.Seed != 3 {
			t.Errorf("%s: workers %d rate %v seed %d, want %d %v 3", tt.name, v.Service("a").Workers, v.Workload.Rate, v.Seed, tt.workers, tt.rate)
		}
	}
	if sc.Service("a").Workers != 1 {
		t.Errorf("base scenario changed: workers %d", sc.Service("a").Workers)
	}
	if _, err := sc.Variant("nope"); err == nil {
		t.Error("unknown variant: no error")
	}
	if _, err := sc.WithSets("services.a.workers=-1"); err == nil {
		t.Error("WithSets accepted workers=-1")
	}
}

// TestDeterministic checks that the same input decodes to the same value.
func TestDeterministic(t *testing.T) {
	a, err := Load("testdata/architecture.yaml", []string{"seed=9"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Load("testdata/architecture.yaml", []string{"seed=9"})
	if !reflect.DeepEqual(a, b) {
		t.Error("two loads of the same file differ")
	}
}
