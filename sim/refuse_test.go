package sim

import (
	"fmt"
	"testing"

	"github.com/stormsim/stormsim/topology"
)

// TestRefuseConnections: a dead replica fails every attempt not_sent at
// once and sees none of them; nginx's rules pass each request on to an
// untried server, and its passive health (max_fails=1) marks the dead one
// down after its first failure, so the edge makes one attempt per request
// plus one. HAProxy's stay on the dead server, three retries apart.
func TestRefuseConnections(t *testing.T) {
	const src = `name: refuse
duration: 2s
workload: {entry: proxy, arrival: constant, rate: 30, client: {timeout: 20s}}
services:
  - name: proxy
    workers: 100
    service_time: {dist: constant, value: 0s}
    calls:
      - {to: app, timeout: 300ms, retry: {preset: %s}}
  - name: app
    workers: 10
    replicas: 3
    service_time: {dist: constant, value: 1ms}
faults:
  - {service: app, at: 0s, for: 1h, replica: 1, refuse_connections: true}
`
	for _, tt := range []struct {
		preset        string
		attempts, app func(n int64) int64
	}{
		{"nginx", func(n int64) int64 { return n + 1 }, func(n int64) int64 { return n }},
		// The requests round robin sends to the dead server never reach one.
		{"haproxy", func(n int64) int64 { return n + 3*(n/3) }, func(n int64) int64 { return n - n/3 }},
	} {
		sc, err := topology.Parse("refuse.yaml", []byte(fmt.Sprintf(src, tt.preset)), nil)
		if err != nil {
			t.Fatal(err)
		}
		s := runScenario(t, sc).Summary
		n := s.Requests.Offered
		var edge int64
		for _, e := range s.Edges {
			if e.From == "proxy" {
				edge = e.Attempts
			}
		}
		app := s.Services[1]
		if edge != tt.attempts(n) || app.Replicas[1].Attempts != 0 || app.Attempts != tt.app(n) {
			t.Errorf("%s: edge attempts %d (want %d), dead replica saw %d, app %d (want %d)",
				tt.preset, edge, tt.attempts(n), app.Replicas[1].Attempts, app.Attempts, tt.app(n))
		}
		if tt.preset == "nginx" && s.Requests.Succeeded != n {
			t.Errorf("nginx: %d of %d succeeded, want all (passed on to a live server)", s.Requests.Succeeded, n)
		}
	}
}
