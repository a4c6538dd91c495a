package model

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/stormsim/stormsim/topology"
)

// FaultState is the combined effect of the faults active on one service.
type FaultState struct {
	// Capacity scales the workers: the product of the active capacities.
	Capacity float64
	// LatencyAdd is added to every service time: the sum of the active ones.
	LatencyAdd time.Duration
	// ErrorRate, when HasErrorRate, replaces the service's error_rate: of
	// the active faults that set one, the last in the order given to
	// Combine wins — the order they started in, ties in scenario order,
	// as both drivers apply them (Callee.SetFaults).
	ErrorRate    float64
	HasErrorRate bool
	// Drop is the probability that a reply is lost: each active fault
	// drops independently, so Drop = 1 − Π(1 − p).
	Drop float64
	// Refuse: some active fault refuses connections (a dead server).
	Refuse bool
}

// Combine is the one rule for overlapping faults, given the active ones in
// the order they started (ties in scenario order).
func Combine(active []*topology.Fault) FaultState {
	fs := FaultState{Capacity: 1}
	keep := 1.0
	for _, f := range active {
		if f.Capacity != nil {
			fs.Capacity *= *f.Capacity
		}
		fs.LatencyAdd += f.LatencyAdd
		if f.ErrorRate != nil {
			fs.HasErrorRate, fs.ErrorRate = true, *f.ErrorRate
		}
		keep *= 1 - f.DropResponse
		fs.Refuse = fs.Refuse || f.RefuseConnections
	}
	fs.Drop = 1 - keep
	return fs
}

// Workers is how many of workers may be busy under the combined capacity,
// rounded down.
func (fs FaultState) Workers(workers int) int {
	return int(math.Floor(float64(workers)*fs.Capacity + 1e-9))
}

// ReplicaFaults returns the faults of scenario sc that hit replica rep
// of service name (topology.Fault.ReplicasHit), in scenario order: the one
// answer to "which faults hit replica r", which the simulator's callee,
// consumer and publishers and serve's alike act on. A fault confined to
// other replicas is not among them, nor are its connection resets.
func ReplicaFaults(sc *topology.Scenario, name string, rep int) []*topology.Fault {
	svc := sc.Service(name)
	if svc == nil {
		return nil
	}
	var fs []*topology.Fault
	for i := range sc.Faults {
		if f := &sc.Faults[i]; f.Service == name && slices.Contains(f.ReplicasHit(svc), rep) {
			fs = append(fs, f)
		}
	}
	return fs
}

// ResetTimes returns when the faults fs close every connection to the
// replica they hit (reset_connections, a deploy): at each such fault's
// start, in fs's order. fs are one replica's (ReplicaFaults): a reset
// closes the connections to the replicas its fault hits, no others.
func ResetTimes(fs []*topology.Fault) []time.Duration {
	var at []time.Duration
	for _, f := range fs {
		if f.ResetConnections {
			at = append(at, f.At)
		}
	}
	return at
}

// FaultLabel names the effects of fault f for plots and results (a
// metrics.FaultWindow's label): every effect it has, joined in a fixed
// order, "fault" when it has none of them.
func FaultLabel(f *topology.Fault) string {
	var parts []string
	if f.Capacity != nil {
		parts = append(parts, fmt.Sprintf("capacity ×%g", *f.Capacity))
	}
	if f.LatencyAdd > 0 {
		parts = append(parts, fmt.Sprintf("latency +%v", f.LatencyAdd))
	}
	if f.ErrorRate != nil {
		parts = append(parts, fmt.Sprintf("error rate %g", *f.ErrorRate))
	}
	if f.DropResponse > 0 {
		parts = append(parts, fmt.Sprintf("drop %g", f.DropResponse))
	}
	if f.RefuseConnections {
		parts = append(parts, "connections refused")
	}
	if len(parts) == 0 {
		return "fault"
	}
	return strings.Join(parts, ", ")
}
