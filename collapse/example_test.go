package collapse_test

import (
	"fmt"

	"github.com/stormsim/stormsim/collapse"
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
