package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/spf13/pflag"

	"github.com/stormsim/stormsim/experiments"
	"github.com/stormsim/stormsim/topology"
)

// loadScenario reads a scenario from a file or, when no such file exists,
// from the canned experiment of that name, applying --set overrides.
func loadScenario(arg string, sets []string) (*topology.Scenario, error) {
	if _, err := os.Stat(arg); err == nil {
		return topology.Load(arg, sets)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if data, ok := experiments.Lookup(arg); ok {
		return topology.Parse(arg+".yaml", data, sets)
	}
	return nil, fmt.Errorf("%s: no such file, and no canned experiment of that name (see 'stormsim experiments')", arg)
}

// scenarioFlags are the overrides every simulating command accepts.
type scenarioFlags struct {
	sets     []string
	seed     uint64
	duration string
	// maxInflight and maxEvents override limits.max_inflight and
	// limits.max_events, the guards that stop a runaway storm (0: the
	// scenario's).
	maxInflight  int
	maxEvents    int64
	maxEventRate float64
	maxDrain     string
}

// declareLimits declares --max-inflight and --max-events.
func (f *scenarioFlags) declareLimits(fs *pflag.FlagSet) {
	fs.IntVar(&f.maxInflight, "max-inflight", 0, "stop the run as diverged when more than `N` attempts are alive (overrides limits.max_inflight)")
	fs.Int64Var(&f.maxEvents, "max-events", 0, "stop the run as diverged after `N` events (overrides limits.max_events)")
	fs.StringVar(&f.maxDrain, "max-drain", "", "stop the run as diverged when work is still pending this long after the arrival window, e.g. `10m` (overrides limits.max_drain, default 1h)")
	fs.Float64Var(&f.maxEventRate, "max-event-rate", 0, "stop the run as diverged when an interval holds more than `R` events per simulated second (overrides limits.max_event_rate)")
}

func (f *scenarioFlags) overrides() []string {
	out := append([]string(nil), f.sets...)
	if f.seed != 0 {
		out = append(out, fmt.Sprintf("seed=%d", f.seed))
	}
	if f.duration != "" {
		out = append(out, "duration="+f.duration)
	}
	if f.maxInflight != 0 {
		out = append(out, fmt.Sprintf("limits.max_inflight=%d", f.maxInflight))
	}
	if f.maxEvents != 0 {
		out = append(out, fmt.Sprintf("limits.max_events=%d", f.maxEvents))
	}
	if f.maxDrain != "" {
		out = append(out, "limits.max_drain="+f.maxDrain)
	}
	if f.maxEventRate != 0 {
		out = append(out, fmt.Sprintf("limits.max_event_rate=%g", f.maxEventRate))
	}
	return out
}
