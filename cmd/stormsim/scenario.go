package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

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
}

func (f *scenarioFlags) overrides() []string {
	out := append([]string(nil), f.sets...)
	if f.seed != 0 {
		out = append(out, fmt.Sprintf("seed=%d", f.seed))
	}
	if f.duration != "" {
		out = append(out, "duration="+f.duration)
	}
	return out
}
