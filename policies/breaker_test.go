package policies

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// breakerStep is one step of a breaker time script. op is:
//
//	allow  Allow at at; want "ok" or "deny"; the ticket is kept under name
//	done   Done with the ticket kept under name, outcome o, latency lat
//	call   Allow then Done at once (must be admitted)
//	state  check State at at against want
type breakerStep struct {
	at   time.Duration
	op   string
	name string
	o    Outcome
	lat  time.Duration
	want string
}

func runBreakerScript(t *testing.T, b Breaker, steps []breakerStep) {
	t.Helper()
	tickets := map[string]uint64{}
	for i, s := range steps {
		switch s.op {
		case "allow":
			tk, ok := b.Allow(s.at)
			if got := map[bool]string{true: "ok", false: "deny"}[ok]; got != s.want {
				t.Fatalf("step %d (t=%v): Allow = %s, want %s (state %v)", i, s.at, got, s.want, b.State(s.at))
			}
			tickets[s.name] = tk
		case "done":
			tk, found := tickets[s.name]
			if !found {
				t.Fatalf("step %d: no ticket %q", i, s.name)
			}
			b.Done(s.at, tk, s.o, s.lat)
		case "call":
			tk, ok := b.Allow(s.at)
			if !ok {
				t.Fatalf("step %d (t=%v): Allow refused a call (state %v)", i, s.at, b.State(s.at))
			}
			b.Done(s.at, tk, s.o, s.lat)
		case "state":
			if got := b.State(s.at).String(); got != s.want {
				t.Fatalf("step %d (t=%v): State = %s, want %s", i, s.at, got, s.want)
			}
		default:
			t.Fatalf("step %d: unknown op %q", i, s.op)
		}
	}
}

func calls(at time.Duration, o Outcome, n int) []breakerStep {
	s := make([]breakerStep, n)
	for i := range s {
		s[i] = breakerStep{at: at, op: "call", o: o}
	}
	return s
}

func brSteps(parts ...[]breakerStep) []breakerStep {
	var s []breakerStep
	for _, p := range parts {
		s = append(s, p...)
	}
	return s
}

func st(at time.Duration, want string) []breakerStep {
	return []breakerStep{{at: at, op: "state", want: want}}
}

func allow(at time.Duration, name, want string) breakerStep {
	return breakerStep{at: at, op: "allow", name: name, want: want}
}

func done(at time.Duration, name string, o Outcome) breakerStep {
	return breakerStep{at: at, op: "done", name: name, o: o}
}

func TestBreakerScripts(t *testing.T) {
	sec := time.Second
	tests := []breakerCase{
		{"consecutive/trips at Failures, success resets",
			BreakerConfig{Kind: "consecutive", Failures: 3, OpenFor: sec, HalfOpenCalls: 2},
			brSteps(calls(0, Timeout, 2), calls(0, OK, 1), calls(0, Error, 2), st(0, "closed"),
				calls(0, Conflict, 1), calls(0, InProgress, 1), calls(0, Unavailable, 2), st(0, "closed"),
				calls(10*milli, Unavailable, 1), st(10*milli, "open"),
				[]breakerStep{allow(500*milli, "x", "deny")},
				st(1010*milli, "open"), st(1010*milli+1, "half-open")),
			1},
		{"consecutive/half-open probe race and close",
			BreakerConfig{Kind: "consecutive", Failures: 1, OpenFor: sec, HalfOpenCalls: 2},
			brSteps(calls(0, Error, 1),
				[]breakerStep{allow(sec+1, "p1", "ok"), allow(sec+1, "p2", "ok"), allow(sec+1, "p3", "deny"),
					done(sec+milli, "p1", OK)},
				st(sec+milli, "half-open"),
				[]breakerStep{allow(sec+milli, "p4", "deny"), done(sec+2*milli, "p2", OK)},
				st(sec+2*milli, "closed")),
			1},
		{"consecutive/any failed probe reopens",
			BreakerConfig{Kind: "consecutive", Failures: 1, OpenFor: sec, HalfOpenCalls: 3},
			brSteps(calls(0, Error, 1),
				[]breakerStep{allow(sec+1, "p1", "ok"), allow(sec+1, "p2", "ok"), done(sec+1, "p1", OK), done(sec+1, "p2", Timeout)},
				st(sec+1, "open"), st(2*sec+1, "open"), st(2*sec+2, "half-open")),
			2},
		{"consecutive/stale tickets are discarded",
			BreakerConfig{Kind: "consecutive", Failures: 2, OpenFor: sec, HalfOpenCalls: 1},
			brSteps(
				[]breakerStep{allow(0, "old1", "ok"), allow(0, "old2", "ok"), allow(0, "old3", "ok")},
				calls(0, Error, 2), st(0, "open"),
				// Results of attempts admitted before the breaker opened count nothing.
				[]breakerStep{done(milli, "old1", Error)},
				[]breakerStep{allow(sec+1, "probe", "ok")},
				// A stale success must not close the half-open breaker ...
				[]breakerStep{done(sec+1, "old2", OK)}, st(sec+1, "half-open"),
				// ... nor a stale failure reopen it.
				[]breakerStep{done(sec+1, "old3", Timeout)}, st(sec+1, "half-open"),
				[]breakerStep{done(sec+1, "probe", OK)}, st(sec+1, "closed")),
			1},
		{"gobreaker preset trips on the 6th failure",
			BreakerConfig{Preset: "gobreaker"},
			brSteps(calls(0, Error, 5), st(0, "closed"), calls(0, Error, 1), st(0, "open"),
				st(60*sec, "open"), st(60*sec+1, "half-open")),
			1},
		{"rate/min calls gate, trips at ≥ threshold",
			BreakerConfig{Kind: "rate", WindowType: "count", WindowSize: 10, MinCalls: 5, FailureRate: 50, OpenFor: sec, HalfOpenCalls: 2},
			brSteps(calls(0, Error, 4), st(0, "closed"), calls(0, OK, 1), st(0, "open")),
			1},
		{"rate/exactly at the threshold trips",
			BreakerConfig{Kind: "rate", WindowType: "count", WindowSize: 4, MinCalls: 4, FailureRate: 50},
			brSteps(calls(0, OK, 2), calls(0, Error, 1), st(0, "closed"), calls(0, Error, 1), st(0, "open")),
			1},
		{"rate/count window rolls over",
			BreakerConfig{Kind: "rate", WindowType: "count", WindowSize: 4, MinCalls: 4, FailureRate: 75},
			// F F O O: 50 %; then O pushes out the first F: F O O O 25 %;
			// then F F: O O F F 50 %, then F: O F F F 75 % trips.
			brSteps(calls(0, Error, 2), calls(0, OK, 3), calls(0, Error, 2), st(0, "closed"),
				calls(0, Error, 1), st(0, "open")),
			1},
		{"rate/min calls capped at a count window",
			BreakerConfig{Kind: "rate", WindowType: "count", WindowSize: 3, MinCalls: 100, FailureRate: 100},
			brSteps(calls(0, Error, 2), st(0, "closed"), calls(0, Error, 1), st(0, "open")),
			1},
		{"rate/slow calls",
			BreakerConfig{Kind: "rate", WindowType: "count", WindowSize: 4, MinCalls: 4, FailureRate: 100, SlowCallRate: 50, SlowCallDuration: 100 * milli},
			brSteps([]breakerStep{
				{op: "call", o: OK, lat: 100 * milli}, // equal is not slow
				{op: "call", o: OK, lat: 50 * milli},
				{op: "call", o: OK, lat: 101 * milli},
				{op: "call", o: OK, lat: 0},
			}, st(0, "closed"), []breakerStep{{op: "call", o: Error, lat: time.Second}}, st(0, "open")),
			1},
		{"rate/time window forgets old seconds",
			BreakerConfig{Kind: "rate", WindowType: "time", WindowSize: 2, MinCalls: 2, FailureRate: 50},
			brSteps(calls(100*milli, Error, 1), calls(2500*milli, OK, 1), st(2500*milli, "closed"),
				calls(2600*milli, OK, 1), st(2600*milli, "closed"),
				// Seconds 2 and 3: O O F is 33 %, O O F F is 50 %.
				calls(3100*milli, Error, 1), st(3100*milli, "closed"),
				calls(3200*milli, Error, 1), st(3200*milli, "open")),
			1},
		{"rate/half-open judges the probes as a batch",
			BreakerConfig{Kind: "rate", WindowType: "count", WindowSize: 2, MinCalls: 2, FailureRate: 50, OpenFor: sec, HalfOpenCalls: 4},
			brSteps(calls(0, Error, 2), st(0, "open"),
				[]breakerStep{allow(sec+1, "a", "ok"), allow(sec+1, "b", "ok"), allow(sec+1, "c", "ok"), allow(sec+1, "d", "ok"),
					allow(sec+1, "e", "deny"), done(sec+1, "a", Error)},
				st(sec+1, "half-open"), // one failure does not reopen before the batch ends
				[]breakerStep{done(sec+1, "b", OK), done(sec+1, "c", OK), done(sec+1, "d", OK)},
				st(sec+1, "closed"),
				// Closed with an empty window: one failure is below MinCalls.
				calls(sec+1, Error, 1), st(sec+1, "closed"), calls(sec+1, Error, 1), st(sec+1, "open"),
				[]breakerStep{allow(2*sec+2, "a", "ok"), allow(2*sec+2, "b", "ok"), allow(2*sec+2, "c", "ok"), allow(2*sec+2, "d", "ok"),
					done(2*sec+2, "a", Error), done(2*sec+2, "b", Timeout), done(2*sec+2, "c", OK), done(2*sec+2, "d", OK)},
				st(2*sec+2, "open")),
			3},
	}
	runBreakerCases(t, tests)
}

func TestBreakerValidate(t *testing.T) {
	tests := []struct {
		cfg  BreakerConfig
		want string
	}{
		{BreakerConfig{}, ""},
		{BreakerConfig{Kind: "rate"}, ""},
		{BreakerConfig{Kind: "rate", WindowType: "time"}, ""},
		{BreakerConfig{Kind: "fuse"}, `breaker.kind: unknown kind "fuse"`},
		{BreakerConfig{Failures: -1}, "breaker.failures"},
		{BreakerConfig{OpenFor: -time.Second}, "breaker.open_for"},
		{BreakerConfig{HalfOpenCalls: -2}, "breaker.half_open_calls"},
		{BreakerConfig{Kind: "rate", WindowType: "calls"}, "breaker.window_type"},
		{BreakerConfig{Kind: "rate", FailureRate: 150}, "breaker.failure_rate: must be a percentage in (0, 100], got 150"},
		{BreakerConfig{Kind: "rate", SlowCallRate: -1}, "breaker.slow_call_rate"},
		{BreakerConfig{Kind: "rate", MinCalls: -1}, "breaker.min_calls"},
		{BreakerConfig{Kind: "rate", WindowSize: -1}, "breaker.window_size"},
		{BreakerConfig{Kind: "rate", SlowCallDuration: -1}, "breaker.slow_call_duration"},
	}
	for _, tt := range tests {
		err := tt.cfg.Validate()
		if tt.want == "" {
			if err != nil {
				t.Errorf("%+v: unexpected error %v", tt.cfg, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: error %v, want it to contain %q", tt.cfg, err, tt.want)
		}
		if _, err := NewBreaker(tt.cfg); err == nil {
			t.Errorf("NewBreaker(%+v) accepted an invalid config", tt.cfg)
		}
	}
}

func BenchmarkBreakers(b *testing.B) {
	for _, name := range BreakerPresetNames() {
		b.Run(name, func(b *testing.B) {
			br, err := NewBreaker(BreakerConfig{Preset: name})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for i := range b.N {
				now := time.Duration(i) * time.Millisecond
				if tk, ok := br.Allow(now); ok {
					o := OK
					if i%3 == 0 {
						o = Error
					}
					br.Done(now, tk, o, time.Millisecond)
				}
			}
		})
	}
}

// TestHystrixBreaker encodes Netflix/Hystrix hystrix-core/src/main/java/com/
// netflix/hystrix/HystrixCircuitBreaker.java at commit
// 001526b797310fa0b5befa767750cb20e82376a1 (the State classes: CLOSED.open
// from the health stream, OpenState.attemptExecution strictly after the
// sleep window, HalfOpenState.markSuccess / markNonSuccess) and the
// HealthCountsStream it subscribes to (500 ms snapshots): the
// error rate is judged on 500 ms snapshot ticks only, the trial is let
// through strictly after the sleep window, any result in half-open decides,
// and thread-pool rejections and execution timeouts are errors.
func TestHystrixBreaker(t *testing.T) {
	sec := time.Second
	tests := []breakerCase{
		{"trips on a snapshot tick, trial strictly after the sleep window",
			BreakerConfig{Preset: "hystrix"},
			brSteps(calls(0, Error, 19), st(600*milli, "closed"), // 19 < requestVolumeThreshold 20
				calls(600*milli, Error, 1), st(999*milli, "closed"), // judged at the next tick only
				st(sec, "open"),
				[]breakerStep{allow(6*sec, "a", "deny"), allow(6*sec+1, "trial", "ok"), allow(6*sec+2, "b", "deny"),
					done(6*sec+3, "trial", OK)},
				st(6*sec+3, "closed"),
				// Closing restarts the counts: 19 old errors are gone.
				calls(6*sec+4, Error, 19), st(8*sec, "closed")),
			1},
		{"a late result decides the half-open state",
			BreakerConfig{Preset: "hystrix"},
			brSteps([]breakerStep{allow(0, "late", "ok")},
				calls(0, Error, 20), st(500*milli, "open"),
				[]breakerStep{allow(5500*milli+1, "trial", "ok"), done(5600*milli, "late", Error)},
				st(5600*milli, "open"),
				// Reopened at 5.6 s: the next trial comes strictly after 10.6 s.
				[]breakerStep{allow(10600*milli, "x", "deny"), allow(10600*milli+1, "y", "ok")}),
			2},
		{"thread-pool rejections are errors",
			BreakerConfig{Preset: "hystrix", MaxConcurrent: 10},
			brSteps([]breakerStep{allow(0, "1", "ok"), allow(0, "2", "ok"), allow(0, "3", "ok"), allow(0, "4", "ok"),
				allow(0, "5", "ok"), allow(0, "6", "ok"), allow(0, "7", "ok"), allow(0, "8", "ok"), allow(0, "9", "ok"),
				allow(0, "10", "ok")},
				rejections(0, 19), st(500*milli, "closed"), // 19 rejected: below the volume threshold
				[]breakerStep{done(600*milli, "1", OK), allow(600*milli, "11", "ok")}, // a freed thread is reused
				rejections(600*milli, 1), st(sec, "open")), // 20 rejected of 21: 95 %
			1},
		{"slow results are timeouts",
			BreakerConfig{Preset: "hystrix"},
			brSteps(slow(0, 999*milli, 10), calls(0, OK, 10), st(500*milli, "closed"), // just inside the 1 s timeout
				slow(600*milli, sec, 10), st(sec, "closed"), // 10 timeouts of 30
				slow(1100*milli, sec, 10), st(1500*milli, "open")), // 20 of 40: 50 %
			1},
	}
	runBreakerCases(t, tests)
}

// rejections asks n times while the pool is full.
func rejections(at time.Duration, n int) []breakerStep {
	s := make([]breakerStep, n)
	for i := range s {
		s[i] = allow(at, fmt.Sprintf("rej%d", i), "deny")
	}
	return s
}

// slow makes n calls at at that succeed after lat.
func slow(at, lat time.Duration, n int) []breakerStep {
	s := make([]breakerStep, n)
	for i := range s {
		s[i] = breakerStep{at: at, op: "call", o: OK, lat: lat}
	}
	return s
}

// breakerCase is a breaker built from cfg, driven through steps, that must
// have opened opens times.
type breakerCase struct {
	name  string
	cfg   BreakerConfig
	steps []breakerStep
	opens int64
}

func runBreakerCases(t *testing.T, tests []breakerCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := NewBreaker(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			runBreakerScript(t, b, tt.steps)
			if got := b.Opens(); got != tt.opens {
				t.Errorf("Opens = %d, want %d", got, tt.opens)
			}
		})
	}
}
