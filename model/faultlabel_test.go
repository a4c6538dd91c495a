package model

import (
	"testing"
	"time"

	"github.com/stormsim/stormsim/topology"
)

// TestFaultLabel pins the one label of a fault's effects (plots, results,
// the analysis's trigger lines): every effect it has, in a fixed order.
func TestFaultLabel(t *testing.T) {
	half, all := 0.5, 1.0
	for _, tc := range []struct {
		f    topology.Fault
		want string
	}{
		{topology.Fault{}, "fault"},
		{topology.Fault{Capacity: &half}, "capacity ×0.5"},
		{topology.Fault{LatencyAdd: 200 * time.Millisecond}, "latency +200ms"},
		{topology.Fault{ErrorRate: &all, DropResponse: 0.3}, "error rate 1, drop 0.3"},
		{topology.Fault{RefuseConnections: true}, "connections refused"},
		{topology.Fault{Capacity: &half, LatencyAdd: time.Second, ErrorRate: &all, DropResponse: 0.1, RefuseConnections: true},
			"capacity ×0.5, latency +1s, error rate 1, drop 0.1, connections refused"},
	} {
		if got := FaultLabel(&tc.f); got != tc.want {
			t.Errorf("FaultLabel(%+v) = %q, want %q", tc.f, got, tc.want)
		}
	}
}
