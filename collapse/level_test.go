package collapse

import (
	"strings"
	"testing"
)

func TestParseLevel(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Level
		err  string
	}{
		{in: "system(db)>=500", want: Level{System, "db", 500}},
		{in: " queue( db ) >= 45 ", want: Level{Queue, "db", 45}},
		{in: "inflight>=1e4", want: Level{Inflight, "", 1e4}},
		{in: "attempts_rate(api)>=2500.5", want: Level{AttemptsRate, "api", 2500.5}},
		{in: "system(db)>500", err: "want QUANTITY>=NUMBER"},
		{in: "latency(db)>=5", err: `unknown quantity "latency"`},
		{in: "system>=5", err: "needs a service"},
		{in: "system()>=5", err: "needs a service"},
		{in: "inflight(db)>=5", err: "takes no service"},
		{in: "inflight()>=5", err: "without parentheses"},
		{in: "queue(db>=5", err: "missing )"},
		{in: "queue(db)>=lots", err: "is not a number"},
		{in: "queue(db)>=NaN", err: "is not a number"},
		{in: "queue(db)>=0", err: "must be positive"},
	} {
		got, err := ParseLevel(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseLevel(%q) = %v, %v; want an error with %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseLevel(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			continue
		}
		// What String writes, ParseLevel reads back.
		if again, err := ParseLevel(got.String()); err != nil || again != got {
			t.Errorf("ParseLevel(%q) = %+v, %v; want %+v", got.String(), again, err, got)
		}
	}
}

// FuzzParseLevel checks that any input parses or fails with an error,
// never a panic, and that a parsed level survives String.
func FuzzParseLevel(f *testing.F) {
	for _, s := range []string{"system(db)>=500", "inflight>=3", "attempts_rate(a)>=1.5", "queue(x)>=", ">=", "(((>=1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseLevel(s)
		if err != nil {
			return
		}
		again, err := ParseLevel(l.String())
		if err != nil || again != l {
			t.Fatalf("ParseLevel(%q) = %+v; its String %q reads back as %+v, %v", s, l, l.String(), again, err)
		}
	})
}
