package capacity

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/stormsim/stormsim/analysis"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/topology"
)

// The fake system: a service "db" of W workers, each serving 100 req/s,
// behind an "api". Its p99 is 10ms/(1 − λ/C) with C = 100·W, times a
// lognormal noise factor exp(noise·z) drawn from the run's seed; beyond C
// nothing succeeds. With faults, goodput dips during the fault window and
// comes back only when λ is below the storm threshold (Description
// "storm=X"; +Inf when absent).

// fakeBase is the scenario the fake builder starts from.
func fakeBase() *topology.Scenario {
	return &topology.Scenario{
		Name: "fake", Seed: 7, Duration: 20 * time.Second, Warmup: 2 * time.Second, Interval: time.Second,
		Workload: topology.Workload{Entry: "api", Rate: 500},
		Services: []topology.Service{{Name: "api", Workers: 100}, {Name: "db", Workers: 10}},
	}
}

// fakeBuilder returns a Builder over fakeBase, with faults when withFaults.
func fakeBuilder(withFaults bool, storm float64) analysis.Builder {
	return func(_ analysis.Variant, sets []string) (*topology.Scenario, error) {
		sc := fakeBase()
		if withFaults {
			c := 0.5
			sc.Faults = []topology.Fault{{Service: "db", At: 6 * time.Second, For: 3 * time.Second, Capacity: &c}}
		}
		if !math.IsInf(storm, 1) {
			sc.Description = fmt.Sprintf("storm=%g", storm)
		}
		for _, set := range sets {
			path, val, _ := strings.Cut(set, "=")
			switch path {
			case "workload.rate":
				f, err := strconv.ParseFloat(val, 64)
				if err != nil {
					return nil, fmt.Errorf("--set %s: %w", set, err)
				}
				sc.Workload.Rate = f
			case "services.db.workers":
				n, err := strconv.Atoi(val)
				if err != nil {
					return nil, fmt.Errorf("--set %s: %w", set, err)
				}
				sc.Services[1].Workers = n
			default:
				return nil, fmt.Errorf("--set %s: unknown path %q", set, path)
			}
		}
		return sc, nil
	}
}

// fakeRunner is the fake system with lognormal noise of the given sigma;
// calls counts its runs.
func fakeRunner(noise float64, calls *atomic.Int64) analysis.Runner {
	return analysis.RunnerFunc(func(ctx context.Context, sc *topology.Scenario) (*metrics.Result, error) {
		if calls != nil {
			calls.Add(1)
		}
		rng := rand.New(rand.NewPCG(sc.Seed, 99))
		lambda := sc.Workload.Rate
		c := 100 * float64(sc.Services[1].Workers)
		window := (sc.Duration - sc.Warmup).Seconds()
		offered := int64(lambda * window)
		s := metrics.Summary{Scenario: sc.Name, Seed: sc.Seed, Status: "complete", Requests: metrics.Requests{Offered: offered}}
		rho := lambda / c
		if rho < 1 {
			p99 := 10 / (1 - rho) * math.Exp(noise*rng.NormFloat64())
			s.Requests.Succeeded = offered
			s.LatencyMs = metrics.Latency{P50: p99 / 6.6, P90: p99 / 2, P99: p99, P999: 1.5 * p99, Mean: p99 / 4.6, Max: 2 * p99}
			s.GoodputRPS = lambda
		} else {
			s.Requests.Failed = offered
		}
		s.Amplification = 1 + 0.1*min(rho, 1)
		s.Services = []metrics.ServiceSummary{
			{Name: "api", Utilization: 0.3 * min(rho, 1), QueueMean: 0, Amplification: 1},
			{Name: "db", Utilization: min(rho, 1), QueueMean: rho * rho / max(1-rho, 0.01), Amplification: s.Amplification},
		}
		res := &metrics.Result{Summary: s}
		if len(sc.Faults) == 0 {
			return res, nil
		}
		storm := math.Inf(1)
		if v, ok := strings.CutPrefix(sc.Description, "storm="); ok {
			storm, _ = strconv.ParseFloat(v, 64)
		}
		f := sc.Faults[0]
		n := int(sc.Duration / sc.Interval)
		ts := &metrics.TimeSeries{Interval: sc.Interval, Columns: []string{"offered", "goodput", "attempts/db"}}
		stuck := lambda >= storm
		for i := range n {
			t := time.Duration(i) * sc.Interval
			per := lambda * sc.Interval.Seconds()
			good, amp := per*(1+0.01*rng.NormFloat64()), 1.0
			switch {
			case t >= f.At && t < f.At+f.For:
				good, amp = per*0.5, 2
			case t >= f.At+f.For && stuck:
				good, amp = per*0.1, 3
			}
			ts.Rows = append(ts.Rows, []float64{per, good, amp * per})
		}
		res.Series = ts
		if stuck {
			res.Summary.Amplification = 3
		}
		return res, nil
	})
}

// fakeSLO is the objective of the fake tests: p99 under 20ms, so the
// noise-free capacity is λ = C/2.
func fakeSLO() SLO {
	s, err := ParseSLO("p99<20ms,success>=99%")
	if err != nil {
		panic(err)
	}
	return s
}
