package capacity_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/stormsim/stormsim/analysis"
	"github.com/stormsim/stormsim/capacity"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/topology"
)

func ExampleParseSLO() {
	slo, err := capacity.ParseSLO("p99<300ms, success>=99.9%, db.utilization<0.8")
	if err != nil {
		fmt.Println(err)
		return
	}
	sum := &metrics.Summary{
		Requests:  metrics.Requests{Offered: 10000, Succeeded: 9995, Failed: 5},
		LatencyMs: metrics.Latency{P99: 240},
		Services:  []metrics.ServiceSummary{{Name: "db", Utilization: 0.85}},
	}
	ok, broken, _ := slo.Holds(sum)
	fmt.Println(slo)
	fmt.Println(ok, broken[0].Name())

	_, err = capacity.ParseSLO("p99<300ms,sucess>=99%")
	fmt.Println(err)
	// Output:
	// p99<300ms,success>=99.9%,db.utilization<80%
	// false db.utilization
	// slo "p99<300ms,sucess>=99%": term 2 "sucess>=99%": unknown metric "sucess" (did you mean success?) (want p50, p90, p99, p999, mean, max, success, failed, unknown, goodput, amplification, or SERVICE.METRIC)
}

func ExampleRecoveryLowerBound() {
	// Five of five replicas recovered: at 95 % confidence, a run recovers
	// with probability at least 0.05^(1/5).
	fmt.Printf("%.3f\n", capacity.RecoveryLowerBound(5, 5, 0.95))
	fmt.Printf("%.3f\n", capacity.RecoveryLowerBound(20, 20, 0.95))
	// Output:
	// 0.549
	// 0.861
}

func ExampleRun() {
	// A stand-in for the simulator: a queue whose p99 is 10ms/(1 − λ/1000),
	// so p99 < 20ms holds up to λ = 500.
	run := analysis.RunnerFunc(func(_ context.Context, sc *topology.Scenario) (*metrics.Result, error) {
		rho := sc.Workload.Rate / 1000
		s := metrics.Summary{Status: "complete", Requests: metrics.Requests{Offered: 1000, Succeeded: 1000}}
		s.LatencyMs.P99 = 10 / (1 - rho)
		s.Services = []metrics.ServiceSummary{{Name: "db", Utilization: rho}}
		return &metrics.Result{Summary: s}, nil
	})
	// The scenario as written, with the search's overrides laid over it.
	build := func(_ analysis.Variant, sets []string) (*topology.Scenario, error) {
		sc := &topology.Scenario{Name: "example", Seed: 1, Services: []topology.Service{{Name: "db"}}}
		for _, set := range sets {
			if v, ok := strings.CutPrefix(set, "workload.rate="); ok {
				sc.Workload.Rate, _ = strconv.ParseFloat(v, 64)
			}
		}
		return sc, nil
	}
	slo, _ := capacity.ParseSLO("p99<20ms")
	out, err := capacity.Run(context.Background(), run, build, capacity.Search{
		Param: "workload.rate", Lo: 100, Hi: 900, Resolution: 5, Replicas: 1, SLO: slo, Orientation: capacity.HoldsBelow,
	}, capacity.Options{Workers: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	a := out.Answer()
	b, _ := out.Bottleneck()
	fmt.Printf("holds at %g, fails at %g, bound by %s, bottleneck %s, %d runs\n", a.HoldsAt, a.FailsAt, out.Bound(), b.Service, out.Runs)
	// Output:
	// holds at 496.875, fails at 500, bound by steady state, bottleneck db, 10 runs
}
