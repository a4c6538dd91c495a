package model

import (
	"math"
	"time"

	"github.com/stormsim/stormsim/topology"
)

// FaultState is the combined effect of the faults active on one service.
type FaultState struct {
	// Capacity scales the workers: the product of the active capacities.
	Capacity float64
	// LatencyAdd is added to every service time: the sum of the active ones.
	LatencyAdd time.Duration
	// ErrorRate, when HasErrorRate, replaces the service's error_rate: the
	// last active fault (in scenario order) that sets one wins.
	ErrorRate    float64
	HasErrorRate bool
	// Drop is the probability that a reply is lost: each active fault
	// drops independently, so Drop = 1 − Π(1 − p).
	Drop float64
	// Refuse: some active fault refuses connections (a dead server).
	Refuse bool
}

// Combine is the one rule for overlapping faults.
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

// Active returns the faults of service whose window [At, At+For) holds
// now, in scenario order, appended to dst.
func Active(dst []*topology.Fault, faults []topology.Fault, service string, now time.Duration) []*topology.Fault {
	for i := range faults {
		f := &faults[i]
		if f.Service == service && now >= f.At && now < f.At+f.For {
			dst = append(dst, f)
		}
	}
	return dst
}
