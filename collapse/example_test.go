package collapse_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/stormsim/stormsim/collapse"
	"github.com/stormsim/stormsim/topology"
)

func ExampleParseLevel() {
	l, err := collapse.ParseLevel("system(db) >= 500")
	if err != nil {
		panic(err)
	}
	fmt.Println(l.Kind, l.Service, l.Threshold)
	// Output: system db 500
}

// An M/M/1 queue at λ = 0.6/s, μ = 1/s reaches 20 in system within a
// minute from empty about once in 6900 tries, and in about 47 hours on
// average.
func ExampleBirthDeath() {
	ch := collapse.BirthDeath(20, 20,
		func(int) float64 { return 0.6 },
		func(int) float64 { return 1 })
	p, err := ch.Solve(0, 60, true)
	if err != nil {
		panic(err)
	}
	fmt.Printf("P = %.3g, mean passage %.3g h\n", p.Probability, p.MeanTime/3600)
	// Output: P = 0.000145, mean passage 47.5 h
}

func ExampleParseSLO() {
	s, err := collapse.ParseSLO("collapse(system(db)>=500, 24h)<1e-3")
	if err != nil {
		panic(err)
	}
	fmt.Println(s.Level, s.Within, s.Bound)
	// Output: system(db)>=500 24h0m0s 0.001
}

// exampleQueue is an M/M/1 queue (λ = 0.6/s, μ = 1/s) as a scenario file.
const exampleQueue = `name: queue
seed: 1
duration: 1s
workload: {entry: s, rate: 0.6}
services:
  - {name: s, workers: 1, queue: 1000, service_time: {dist: exponential, mean: 1s}}
`

// Split estimates, by splitting on the simulation, the chance that the
// queue reaches 20 within a minute (exactly 1.45e-4, as Solve finds).
func ExampleSplit() {
	sc, err := topology.Parse("queue.yaml", []byte(exampleQueue), nil)
	if err != nil {
		panic(err)
	}
	lv, _ := collapse.ParseLevel("system(s)>=20")
	opt := collapse.Options{Level: lv, Within: time.Minute, Precision: 0.3}
	est, err := collapse.Split(context.Background(), sc, opt)
	if err != nil {
		panic(err)
	}
	exact, err := collapse.Solve(sc, opt)
	if err != nil {
		panic(err)
	}
	fmt.Printf("splitting %.2g over %d levels; exact %.3g\n", est.Probability, len(est.Levels), exact.Probability)
	fmt.Println(est.CI95[0] <= exact.Probability && exact.Probability <= est.CI95[1])
	// Output:
	// splitting 0.00017 over 6 levels; exact 0.000145
	// true
}

// An estimate as `stormsim collapse` prints it without --format json.
func ExampleEstimate_WriteText() {
	e := &collapse.Estimate{Scenario: "q", Method: "splitting", Level: "system(s)>=28", WithinS: 60,
		Probability: 1.23e-6, CI95: [2]float64{1.01e-6, 1.45e-6}, Levels: []float64{9, 17, 28},
		Runs: 9000, Events: 4200000, Batches: 30}
	if err := e.WriteText(os.Stdout); err != nil {
		fmt.Println(err)
	}
	// Output:
	// collapse   q: P(system(s)>=28 within 1m0s) = 1.23e-06, 95% interval [1.01e-06, 1.45e-06] (splitting)
	// levels     9, 17, 28
	// spent      9000 runs, 4200000 events, 30 batches
}
