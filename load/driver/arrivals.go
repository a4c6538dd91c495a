package driver

import (
	"fmt"
	"math"
	"time"

	"github.com/stormsim/stormsim/model"
	"github.com/stormsim/stormsim/topology"
)

// TargetArrivals returns the arrivals of a run against a target (load
// --target): the simulator's arrival process, model.Arrivals, of a workload
// with arrival ("constant" or "poisson"), rate (requests per second) and
// write fraction writes, over duration, drawn from the stream the model
// derives from seed. A scenario with that workload and seed offers the same
// requests at the same intended times, the same ones writes, simulated or
// run through serve.
//
// Constant arrivals fall at n/rate rounded to the nanosecond (not
// truncated), and a rate step restarts their phase at the step; the
// model's rule (model.Arrivals) is the one rule of both modes.
func TargetArrivals(arrival topology.Arrival, rate, writes float64, duration time.Duration, seed uint64) (*model.Arrivals, error) {
	if arrival != topology.ArrivalConstant && arrival != topology.ArrivalPoisson {
		return nil, fmt.Errorf("load: arrival: want constant or poisson, got %q", arrival)
	}
	if !(rate > 0) || math.IsInf(rate, 0) {
		return nil, fmt.Errorf("load: rate: must be a finite number > 0, got %v", rate)
	}
	if !(writes >= 0 && writes <= 1) {
		return nil, fmt.Errorf("load: write fraction must be in [0, 1], got %v", writes)
	}
	w := &topology.Workload{Arrival: arrival, Rate: rate, WriteFraction: writes}
	return model.ArrivalsFor(w, duration, seed), nil
}
