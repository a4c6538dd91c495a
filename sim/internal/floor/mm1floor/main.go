// Command mm1floor runs the hand-specialized M/M/1 loop (floor.MM1Timeouts,
// λ = 900/s, μ = 1000/s, seed 1) as a program of its own, so that a whole
// `stormsim run` of sim/testdata/bench/mm1-timeouts.yaml can be compared
// with a whole floor process (BenchmarkMM1Process in cmd/stormsim).
//
//	mm1floor -duration 2222 -timeout 0.1
//
// prints the customers served in time, their mean sojourn in seconds and
// those whose timer fired.
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"

	"github.com/stormsim/stormsim/sim/internal/floor"
)

func main() {
	d := flag.Float64("duration", 2222, "arrival window in simulated `seconds`")
	timeout := flag.Float64("timeout", 0.1, "each customer's timeout in `seconds` (0: none)")
	flag.Parse()
	if *d <= 0 || *timeout < 0 || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: mm1floor [-duration seconds] [-timeout seconds]")
		os.Exit(2)
	}
	served, w, out := floor.MM1Timeouts(900, 1000, *d, *timeout, rand.New(rand.NewPCG(1, 1)), &floor.Heap{}, make([]float64, 0, 1024))
	fmt.Println(served, w, out)
}
