package shard

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestParseStartAt(t *testing.T) {
	for _, c := range []struct {
		in      string
		want    string // String() of the result
		wantErr bool
	}{
		{"", "", false},
		{"2026-12-01T10:00:00Z", "2026-12-01T10:00:00Z", false},
		{"2026-12-01T11:00:00+01:00", "2026-12-01T10:00:00Z", false},
		{"2026-12-01T10:00:00.25Z", "2026-12-01T10:00:00.25Z", false},
		{"2026-12-01 10:00:00", "", true},
		{"tomorrow", "", true},
		{"1700000000", "", true},
	} {
		got, err := ParseStartAt(c.in)
		if (err != nil) != c.wantErr {
			t.Errorf("ParseStartAt(%q) error = %v, want error %v", c.in, err, c.wantErr)
			continue
		}
		if err != nil {
			if !strings.Contains(err.Error(), "RFC 3339") {
				t.Errorf("ParseStartAt(%q) error %q does not say what is wanted", c.in, err)
			}
			continue
		}
		if got.String() != c.want {
			t.Errorf("ParseStartAt(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestDelay is a script at fixed instants around a start at 10:00:00.
func TestDelay(t *testing.T) {
	start, _ := ParseStartAt("2026-12-01T10:00:00Z")
	at := func(s string) time.Time { return start.T.Add(mustDur(t, s)) }
	for _, c := range []struct {
		now     string
		want    time.Duration
		wantErr bool
	}{
		{"-90s", 90 * time.Second, false},
		{"-1ns", time.Nanosecond, false},
		{"0s", 0, false},
		{"1500ms", 0, false}, // late but within DefaultMaxLate: start now, keep t=0
		{"2s", 0, false},
		{"2001ms", 0, true},
		{"1h", 0, true},
	} {
		got, err := start.Delay(at(c.now), DefaultMaxLate)
		if (err != nil) != c.wantErr || got != c.want {
			t.Errorf("Delay at start%s = %v, %v; want %v, error %v", c.now, got, err, c.want, c.wantErr)
		}
	}
	if d, err := (StartAt{}).Delay(start.T, 0); d != 0 || err != nil {
		t.Errorf("zero StartAt: Delay = %v, %v; want 0, nil", d, err)
	}
	ready := start.T.Add(3 * time.Second)
	if got := start.Epoch(ready); !got.Equal(start.T) {
		t.Errorf("Epoch = %v, want the shared start %v", got, start.T)
	}
	if got := (StartAt{}).Epoch(ready); !got.Equal(ready) {
		t.Errorf("zero StartAt: Epoch = %v, want ready time %v", got, ready)
	}
}

func mustDur(t *testing.T, s string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestFlags(t *testing.T) {
	env := func(k string) (string, bool) {
		switch k {
		case IndexEnv:
			return "2", true
		case CountEnv:
			return "4", true
		}
		return "", false
	}
	for _, c := range []struct {
		args    []string
		want    Spec
		start   string
		wantErr string
	}{
		{nil, Spec{}, "", ""},
		{[]string{"--shard", "1/3"}, Spec{1, 3}, "", ""},
		{[]string{"--shard-from-env"}, Spec{2, 4}, "", ""},
		{[]string{"--shard-from-env", "--start-at", "2026-12-01T10:00:00Z"}, Spec{2, 4}, "2026-12-01T10:00:00Z", ""},
		{[]string{"--shard", "1/3", "--shard-from-env"}, Spec{}, "", "not both"},
		{[]string{"--shard", "3/3"}, Spec{}, "", "index must be in [0, 3)"},
		{[]string{"--start-at", "noon"}, Spec{}, "", "RFC 3339"},
	} {
		var f Flags
		fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
		f.Register(fs)
		f.RegisterStartAt(fs)
		err := fs.Parse(c.args)
		var got Spec
		if err == nil {
			got, err = f.Spec(env)
		}
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%v: error = %v, want %q", c.args, err, c.wantErr)
			}
			continue
		}
		if err != nil || got != c.want || f.StartAt.String() != c.start {
			t.Errorf("%v: got %v, start %q, %v; want %v, %q", c.args, got, f.StartAt, err, c.want, c.start)
		}
	}
}
