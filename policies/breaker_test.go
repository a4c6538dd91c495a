package policies

import (
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
	tests := []struct {
		name  string
		cfg   BreakerConfig
		steps []breakerStep
		opens int64
	}{
		{"consecutive/trips at Failures, success resets",
			BreakerConfig{Kind: "consecutive", Failures: 3, OpenFor: sec, HalfOpenCalls: 2},
			brSteps(calls(0, Timeout, 2), calls(0, OK, 1), calls(0, Error, 2), st(0, "closed"),
				calls(0, Conflict, 1), calls(0, InProgress, 1), calls(0, Unavailable, 2), st(0, "closed"),
				calls(10*milli, Unavailable, 1), st(10*milli, "open"),
				[]breakerStep{allow(500*milli, "x", "deny")},
				st(1009*milli, "open"), st(1010*milli, "half-open")),
			1},
		{"consecutive/half-open probe race and close",
			BreakerConfig{Kind: "consecutive", Failures: 1, OpenFor: sec, HalfOpenCalls: 2},
			brSteps(calls(0, Error, 1),
				[]breakerStep{allow(sec, "p1", "ok"), allow(sec, "p2", "ok"), allow(sec, "p3", "deny"),
					done(sec+milli, "p1", OK)},
				st(sec+milli, "half-open"),
				[]breakerStep{allow(sec+milli, "p4", "deny"), done(sec+2*milli, "p2", OK)},
				st(sec+2*milli, "closed")),
			1},
		{"consecutive/any failed probe reopens",
			BreakerConfig{Kind: "consecutive", Failures: 1, OpenFor: sec, HalfOpenCalls: 3},
			brSteps(calls(0, Error, 1),
				[]breakerStep{allow(sec, "p1", "ok"), allow(sec, "p2", "ok"), done(sec, "p1", OK), done(sec, "p2", Timeout)},
				st(sec, "open"), st(2*sec-1, "open"), st(2*sec, "half-open")),
			2},
		{"consecutive/stale tickets are discarded",
			BreakerConfig{Kind: "consecutive", Failures: 2, OpenFor: sec, HalfOpenCalls: 1},
			brSteps(
				[]breakerStep{allow(0, "old1", "ok"), allow(0, "old2", "ok"), allow(0, "old3", "ok")},
				calls(0, Error, 2), st(0, "open"),
				// Results of attempts admitted before the breaker opened count nothing.
				[]breakerStep{done(milli, "old1", Error)},
				[]breakerStep{allow(sec, "probe", "ok")},
				// A stale success must not close the half-open breaker ...
				[]breakerStep{done(sec, "old2", OK)}, st(sec, "half-open"),
				// ... nor a stale failure reopen it.
				[]breakerStep{done(sec, "old3", Timeout)}, st(sec, "half-open"),
				[]breakerStep{done(sec, "probe", OK)}, st(sec, "closed")),
			1},
		{"gobreaker preset trips on the 6th failure",
			BreakerConfig{Preset: "gobreaker"},
			brSteps(calls(0, Error, 5), st(0, "closed"), calls(0, Error, 1), st(0, "open"),
				st(60*sec-1, "open"), st(60*sec, "half-open")),
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
				[]breakerStep{allow(sec, "a", "ok"), allow(sec, "b", "ok"), allow(sec, "c", "ok"), allow(sec, "d", "ok"),
					allow(sec, "e", "deny"), done(sec, "a", Error)},
				st(sec, "half-open"), // one failure does not reopen before the batch ends
				[]breakerStep{done(sec, "b", OK), done(sec, "c", OK), done(sec, "d", OK)},
				st(sec, "closed"),
				// Closed with an empty window: one failure is below MinCalls.
				calls(sec, Error, 1), st(sec, "closed"), calls(sec, Error, 1), st(sec, "open"),
				[]breakerStep{allow(2*sec, "a", "ok"), allow(2*sec, "b", "ok"), allow(2*sec, "c", "ok"), allow(2*sec, "d", "ok"),
					done(2*sec, "a", Error), done(2*sec, "b", Timeout), done(2*sec, "c", OK), done(2*sec, "d", OK)},
				st(2*sec, "open")),
			3},
		{"hystrix preset",
			BreakerConfig{Preset: "hystrix"},
			brSteps(calls(0, Error, 19), st(0, "closed"), calls(0, Error, 1), st(0, "open"),
				[]breakerStep{allow(5*sec, "a", "ok"), allow(5*sec, "b", "deny"), done(5*sec, "a", OK)},
				st(5*sec, "closed")),
			1},
	}
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
