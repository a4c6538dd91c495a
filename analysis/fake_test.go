package analysis

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/topology"
)

// fakeBase is the scenario the fake builder starts from.
func fakeBase() *topology.Scenario {
	return &topology.Scenario{
		Name: "fake", Seed: 7, Duration: 20 * time.Second, Warmup: 2 * time.Second, Interval: time.Second,
		Workload: topology.Workload{Entry: "api", Rate: 100},
		Services: []topology.Service{{Name: "api", Workers: 8}, {Name: "db", Workers: 4}},
		Faults:   []topology.Fault{{Service: "db", At: 8 * time.Second, For: 4 * time.Second}},
	}
}

// fakeBuild understands workload.rate, services.db.workers and
// budget=<ratio>; every override is also recorded in Description, which the
// fake runner hashes, so different variants give different results.
func fakeBuild(v Variant, extra []string) (*topology.Scenario, error) {
	if v.File != "" {
		return nil, fmt.Errorf("fake builder: no files")
	}
	sc := fakeBase()
	for _, set := range append(append([]string(nil), v.Sets...), extra...) {
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
		case "budget", "note":
		default:
			return nil, fmt.Errorf("--set %s: unknown path %q", set, path)
		}
		if path != "workload.rate" {
			sc.Description += set + ";"
		}
	}
	return sc, nil
}

// fakeRun is a deterministic stand-in for the simulator: a system with
// capacity 25 req/s per db worker, multiplicative noise from the seed (the
// same for every variant of a replica: common random numbers) and a
// variant-dependent amplification. Without a budget, a load above 60 % of
// capacity turns the fault into a storm that never ends.
func fakeRun(_ context.Context, sc *topology.Scenario) (*metrics.Result, error) {
	rng := rand.New(rand.NewPCG(sc.Seed, 1))
	h := fnv.New64a()
	h.Write([]byte(sc.Description))
	capacity := 25 * float64(sc.Services[1].Workers)
	rate := sc.Workload.Rate
	noise := 1 + 0.05*rng.NormFloat64()
	budget := strings.Contains(sc.Description, "budget=")
	amp := 1 + float64(h.Sum64()%100)/100
	n := int(sc.Duration / sc.Interval)
	ts := &metrics.TimeSeries{Interval: sc.Interval, Columns: []string{"offered", "goodput", "attempts/api", "attempts/db"}}
	trig, _ := TriggerOf(sc)
	stuck := false
	var served float64
	for i := range n {
		t := time.Duration(i) * sc.Interval
		off := math.Round(rate * sc.Interval.Seconds() * (1 + 0.02*rng.NormFloat64()))
		good, a := min(rate, capacity)*noise, 1.0
		if t >= trig.Start && t < trig.End {
			good, a = 0.3*good, 3
			if !budget && rate > 0.6*capacity {
				stuck = true
			}
		} else if stuck {
			good, a = 0.2*good, 5
		}
		served += good * sc.Interval.Seconds()
		ts.Rows = append(ts.Rows, []float64{off, good, off, off * a})
	}
	offered := int64(rate * (sc.Duration - sc.Warmup).Seconds())
	succ := min(int64(served), offered)
	res := &metrics.Result{
		Summary: metrics.Summary{
			Scenario: sc.Name, Seed: sc.Seed, Status: "complete",
			Requests:      metrics.Requests{Offered: offered, Succeeded: succ, Failed: (offered - succ) / 2, Unknown: (offered - succ) - (offered-succ)/2},
			GoodputRPS:    float64(succ) / (sc.Duration - sc.Warmup).Seconds(),
			LatencyMs:     metrics.Latency{P50: 4 * noise, P99: 40 * noise * amp},
			Amplification: amp,
			Duplicates:    int64(10 * (amp - 1)),
			Services: []metrics.ServiceSummary{
				{Name: "api", QueueMax: int64(rate / 10)},
				{Name: "db", QueueMax: int64(rate * amp)},
			},
		},
		Series: ts,
	}
	return res, nil
}

var fakeRunner = RunnerFunc(fakeRun)
