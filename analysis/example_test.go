package analysis_test

import (
	"fmt"
	"github.com/stormsim/stormsim/shard"
	"time"

	"github.com/stormsim/stormsim/analysis"
)

func ExampleParseRange() {
	rates, _ := analysis.ParseRange("100:400:100")
	timeouts, _ := analysis.ParseRange("50ms:200ms:50ms")
	ratios, _ := analysis.ParseRange("0.1:0.3:0.1")
	fmt.Println(rates, timeouts, ratios)
	// Output: [100 200 300 400] [50ms 100ms 150ms 200ms] [0.1 0.2 0.3]
}

func ExampleParseVariant() {
	v, _ := analysis.ParseVariant("budget:services.api.calls.db.budget.ratio=0.1,workload.client.budget.ratio=0.1")
	fmt.Println(v.Name, len(v.Sets), v.Sets[0])
	f, _ := analysis.ParseVariant("alt=experiments/other.yaml")
	fmt.Println(f.Name, f.File)
	// Output:
	// budget 2 services.api.calls.db.budget.ratio=0.1
	// alt experiments/other.yaml
}

func ExampleSweep_Units() {
	s := &analysis.Sweep{
		Param:    "workload.rate",
		Values:   []string{"100", "200"},
		Variants: []analysis.Variant{{Name: analysis.Baseline}, {Name: "budget"}},
		Replicas: 2,
	}
	sh := shard.Spec{Index: 1, Count: 3}
	for _, u := range s.Units() {
		if sh.Owns(u.Index) {
			fmt.Printf("unit %d: %s=%s %s replica %d\n", u.Index, s.Param, s.Values[u.Point], s.Variants[u.Variant].Name, u.Replica)
		}
	}
	// Output:
	// unit 1: workload.rate=100 baseline replica 1
	// unit 4: workload.rate=200 baseline replica 0
	// unit 7: workload.rate=200 budget replica 1
}

func ExampleMeanCI() {
	st := analysis.MeanCI([]float64{98, 102, 101, 99, 100})
	fmt.Printf("%.1f [%.2f, %.2f]\n", st.Mean, st.Lo, st.Hi)
	// Output: 100.0 [98.04, 101.96]
}

func ExampleDetect() {
	// Goodput per second: 100 before a trigger at [10s, 15s), nothing during
	// it, then a slow climb back.
	s := analysis.Series{Interval: time.Second, End: 60 * time.Second}
	for i := range 60 {
		g := 100.0
		switch {
		case i >= 10 && i < 15:
			g = 0
		case i >= 15 && i < 20:
			g = float64(20 * (i - 14))
		}
		s.Goodput = append(s.Goodput, g)
	}
	trigger := analysis.Trigger{Start: 10 * time.Second, End: 15 * time.Second}
	v, _ := analysis.Detect(s, 2*time.Second, trigger, analysis.DetectorConfig{})
	fmt.Println(v)
	// Output: recovers after 4s
}
