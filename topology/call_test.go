package topology

import (
	"strings"
	"testing"
	"time"
)

func TestParseCall(t *testing.T) {
	c, err := ParseCall("client.yaml", []byte("timeout: 200ms\nretry: {preset: grpc}\nbudget: {kind: ratio, ratio: 0.1}\nhonor_pushback: true\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Timeout != 200*time.Millisecond || c.Retry.MaxAttempts != 4 || c.Budget == nil || c.Budget.Ratio != 0.1 || !c.HonorPushback {
		t.Errorf("decoded %+v", c)
	}
	if c.MaxPushback != DefaultMaxPushback || c.Fanout != 1 {
		t.Errorf("defaults not applied: max_pushback %v fanout %d", c.MaxPushback, c.Fanout)
	}

	cases := []struct{ yaml, want string }{
		{"timeout: 1s\nretyr: {max_attempts: 3}\n", "client.yaml:2: client.retyr: unknown key (did you mean retry?)"},
		{"timeout: -1s\n", "client.yaml:1: client.timeout: must be ≥ 0, got -1s"},
		{"retry:\n  max_attempts: 0\n", "client.yaml:2: client.retry.max_attempts: must be ≥ 1"},
		{"timeout: 5 s\n", `client.yaml:1: client.timeout: invalid duration "5 s"`},
		{"to: db\n", "client.yaml:1: client.to: a client policy calls its one target"},
		{"budget: {kind: ratio, ratio: 1.5}\n", "client.yaml:1: client.budget"},
		{"timeout: 1s\nirrevocable: true\n", "client.yaml:2: client.irrevocable: marks a step of a service's calls, not the client's call"},
		// keys a real client does not apply are refused, not ignored
		{"timeout: 1s\nquery: {interval: 1s}\n", "client.yaml:2: client.query: a call's own status queries are the simulator's only"},
		{"timeout: 1s\nnetwork: {dist: constant, value: 1ms}\n", "client.yaml:2: client.network: the simulator's modelled one-way delay"},
		{"timeout: 1s\ncross_zone_network: {dist: constant, value: 1ms}\n", "client.yaml:2: client.cross_zone_network: zones are the simulator's"},
		{"timeout: 1s\nzone_aware: true\n", "client.yaml:2: client.zone_aware: zones are the simulator's"},
		{"timeout: 1s\npublish: {topic: t}\n", "client.yaml:2: client.publish: publishing is a service's call"},
	}
	for _, tc := range cases {
		_, err := ParseCall("client.yaml", []byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want it to contain %q", tc.yaml, err, tc.want)
		}
	}
}
