package tune_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stormsim/stormsim/sim"
	"github.com/stormsim/stormsim/topology"
	"github.com/stormsim/stormsim/tune"
)

// TestSpuriousRateMatchesSimulation applies the recommended timeouts to a
// lightly loaded chain (no queueing, no faults, hedging left off so every
// abandoned attempt is a timeout) and checks that the share of db attempts
// that time out in the simulation is the predicted spurious-timeout rate:
// the binomial errors of the n samples and of the simulated attempts
// combined, at 4.5 standard errors.
func TestSpuriousRateMatchesSimulation(t *testing.T) {
	const n = 20000
	hops, err := tune.ParseHops([]string{
		"gateway=scenario:testdata/quiet.yaml",
		"orders=scenario:testdata/quiet.yaml",
		"db=scenario:testdata/quiet.yaml",
	}, tune.LoadOptions{ScenarioSamples: n, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	p, err := tune.Recommend(hops, tune.Options{Deadline: 2 * time.Second, Percentile: 0.99})
	if err != nil {
		t.Fatal(err)
	}
	var sets []string
	for _, s := range p.Sets() {
		if !strings.Contains(s, ".hedge.") {
			sets = append(sets, s)
		}
	}
	sc, err := topology.Load("testdata/quiet.yaml", sets)
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(context.Background(), sc, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	db := p.Hops[2]
	for _, s := range res.Summary.Services {
		if s.Name != "db" {
			continue
		}
		got := float64(s.TimedOut) / float64(s.Attempts)
		q := db.Spurious
		tol := 4.5 * math.Sqrt(q*(1-q)*(1.0/n+1.0/float64(s.Attempts)))
		t.Logf("db timeout %v: predicted %.4f, simulated %.4f (%d of %d attempts), tolerance %.4f",
			db.Timeout, q, got, s.TimedOut, s.Attempts, tol)
		if math.Abs(got-q) > tol {
			t.Errorf("simulated timeout rate %.4f, predicted %.4f ± %.4f", got, q, tol)
		}
		return
	}
	t.Fatal("no db in the summary")
}
