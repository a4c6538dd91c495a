package metrics

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

func TestFormatTextConnLines(t *testing.T) {
	s := &Summary{Scenario: "x", Edges: []EdgeSummary{
		{From: "client", To: "api"},
		{From: "client", To: "db", Pool: &PoolSummary{Acquired: 10, Waited: 3, WaitMeanMs: 1.5, WaitMaxMs: 20, Handshakes: 4, TLSTimeouts: 2}},
		{From: "api", To: "db", Phases: &PhaseReport{Phases: map[string]PhaseStat{"tls": {Count: 3, P99Ms: 12}, "first_byte": {Count: 9, P99Ms: 40}},
			FailedIn: map[string]int64{"connect": 2}, NotSent: 2, NewConnections: 3, Reused: 6}},
		{From: "api", To: "cache", Phases: &PhaseReport{Phases: map[string]PhaseStat{"read": {Count: 4, P99Ms: 1}},
			NewConnections: 1, Reused: 3, GRPCTransparentRetries: 2}},
	}}
	var b bytes.Buffer
	if err := FormatText(&b, s); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"pool       client->db: 3 of 10 attempts waited for a connection, mean 1.50 ms, max 20.0 ms; 4 handshakes; not sent 2 (pool 0, connect 0, tls 2)\n",
		"phases     api->db p99 ms: tls 12.0, first_byte 40.0; not sent 2; failed in: connect 2; 3 new connections, 6 reused\n",
		"phases     api->cache p99 ms: read 1.00; not sent 0; failed in: -; 1 new connections, 3 reused; 2 grpc-go transparent retries\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("missing %q in\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "client->api") {
		t.Errorf("an edge without pool or phases printed a line:\n%s", b.String())
	}
}

// TestPhaseReportAddSD: merged, the standard deviation is that of the
// union of the samples: {1, 3} (mean 2, sd 1) and {5, 7, 9} (mean 7, sd
// √(8/3)) make {1, 3, 5, 7, 9}, mean 5 and sd √8.
func TestPhaseReportAddSD(t *testing.T) {
	r := PhaseReport{Phases: map[string]PhaseStat{"read": {Count: 2, MeanMs: 2, SDMs: 1}}}
	r.Add(PhaseReport{Phases: map[string]PhaseStat{"read": {Count: 3, MeanMs: 7, SDMs: math.Sqrt(8.0 / 3)}}})
	got := r.Phases["read"]
	if got.Count != 5 || math.Abs(got.MeanMs-5) > 1e-12 || math.Abs(got.SDMs-math.Sqrt(8)) > 1e-12 {
		t.Errorf("merged %+v, want count 5, mean 5, sd %v", got, math.Sqrt(8))
	}
}
