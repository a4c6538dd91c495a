package experiments_test

import (
	"context"
	"fmt"

	"github.com/stormsim/stormsim/experiments"
	"github.com/stormsim/stormsim/sim"
	"github.com/stormsim/stormsim/topology"
)

// Run a canned experiment as `stormsim run five-layer-chain` does.
func ExampleLookup() {
	data, ok := experiments.Lookup("five-layer-chain")
	if !ok {
		panic("missing")
	}
	sc, err := topology.Parse("five-layer-chain.yaml", data, nil)
	if err != nil {
		panic(err)
	}
	res, err := sim.Run(context.Background(), sc, sim.Options{})
	if err != nil {
		panic(err)
	}
	for _, s := range res.Summary.Services {
		fmt.Printf("%s %.0f×\n", s.Name, s.Amplification)
	}
	// Output:
	// s1 3×
	// s2 9×
	// s3 27×
	// s4 81×
	// s5 243×
}

func ExampleSummary() {
	fmt.Println(experiments.Summary("sre-nested-retries"))
	// Output: three layers that each make up to 4 attempts multiply to 64.
}
