package tune_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stormsim/stormsim/metrics"
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

// TestResultsSourceDropsRejections: a simulated db that refuses most
// attempts at once (a full queue answers in 0 µs) must not have those
// refusals taken for fast answers. An answered attempt waited at most one
// service time in the one-slot queue and was then served for 5 ms, so its
// latency is in [5 ms, 10 ms]; and the hop says how many attempts it dropped.
func TestResultsSourceDropsRejections(t *testing.T) {
	sc, err := topology.Parse("refusing-db.yaml", []byte(`
name: refusing-db
seed: 1
duration: 10s
workload:
  entry: db
  arrival: constant
  rate: 1000
  deadline: 1s
  client: {timeout: 1s}
services:
  - name: db
    workers: 1
    queue: 1
    service_time: {dist: constant, value: 5ms}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(context.Background(), sc, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	db := res.Summary.Services[0]
	if db.Rejected < db.Attempts/2 {
		t.Fatalf("db rejected %d of %d attempts; the test needs most rejected", db.Rejected, db.Attempts)
	}
	dir := t.TempDir()
	if err := metrics.Save(dir, res); err != nil {
		t.Fatal(err)
	}
	hops, err := tune.ParseHops([]string{"db=results:" + dir}, tune.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h := hops[0]
	// The histogram's 3 significant digits: within 0.1 % of the bounds.
	for _, q := range []float64{0.001, 0.5, 0.99} {
		if got := h.Samples.Quantile(q); got < 4995*time.Microsecond || got > 10010*time.Microsecond {
			t.Errorf("db %s = %v, want within [5ms, 10ms] (refusals are not answers)", tune.PercentileName(q), got)
		}
	}
	if h.Samples.Len() != int(db.Succeeded) {
		t.Errorf("%d samples, want the %d succeeded attempts", h.Samples.Len(), db.Succeeded)
	}
	dropped := db.Attempts - db.Succeeded
	if want := fmt.Sprintf("%d of %d attempts dropped", dropped, db.Attempts); !strings.Contains(h.Note, want) {
		t.Errorf("note %q lacks %q", h.Note, want)
	}
}
