package collapse

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stormsim/stormsim/topology"
)

// mm1 returns an M/M/1 scenario (λ, μ per second) with room for limit
// customers, validated with defaults.
func mm1(t testing.TB, lambda, mu float64, limit int) *topology.Scenario {
	t.Helper()
	y := fmt.Sprintf(`name: mm1
seed: 1
duration: 1s
workload:
  entry: s
  rate: %g
services:
  - name: s
    workers: 1
    queue: %d
    service_time: {dist: exponential, mean: %s}
`, lambda, limit, time.Duration(float64(time.Second)/mu))
	sc, err := topology.Parse("mm1.yaml", []byte(y), nil)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// exactMM1 is P(an M/M/1 from empty reaches l in system within T), by
// uniformization of its birth-death chain.
func exactMM1(t testing.TB, lambda, mu float64, l int, within time.Duration) float64 {
	t.Helper()
	ch := BirthDeath(l, l, func(int) float64 { return lambda }, func(int) float64 { return mu })
	p, err := ch.Solve(0, within.Seconds(), false)
	if err != nil {
		t.Fatal(err)
	}
	return p.Probability
}

func TestSplitMM1Probe(t *testing.T) {
	sc := mm1(t, 0.6, 1, 1000)
	for _, l := range []int{8, 14, 20, 27} {
		exact := exactMM1(t, 0.6, 1, l, 60*time.Second)
		lv := Level{Kind: System, Service: "s", Threshold: float64(l)}
		start := time.Now()
		est, err := Split(context.Background(), sc, Options{Level: lv, Within: 60 * time.Second, Precision: 0.2})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("L=%d exact %.3g est %.3g ci %v levels %v runs %d events %d batches %d in %v", l, exact, est.Probability, est.CI95, est.Levels, est.Runs, est.Events, est.Batches, time.Since(start))
	}
}
