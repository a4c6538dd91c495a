package tune

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stormsim/stormsim/metrics"
)

// MinSamples is the least n with 1 − qⁿ ≥ conf: with it the sample
// maximum bounds the q-quantile from above at that confidence, one fewer
// and it does not.
func TestMinSamples(t *testing.T) {
	for _, c := range []struct {
		q    float64
		want int
	}{{0.95, 59}, {0.99, 299}, {0.999, 2995}, {0.5, 5}} {
		n := MinSamples(c.q, 0.95)
		if n != c.want {
			t.Errorf("MinSamples(%g, 0.95) = %d, want %d", c.q, n, c.want)
		}
		if 1-math.Pow(c.q, float64(n)) < 0.95 || 1-math.Pow(c.q, float64(n-1)) >= 0.95 {
			t.Errorf("q %g: n = %d is not the least with 1 − qⁿ ≥ 0.95", c.q, n)
		}
	}
}

// A timeout at p99.9 from 690 samples, and phase timeouts from 10 cold
// connections, are flagged; enough samples are not.
func TestSmallSampleWarnings(t *testing.T) {
	l := newLognormal(5*time.Millisecond, 50*time.Millisecond)
	few := mustSamples(t, l.draw(rand.New(rand.NewPCG(1, 1)), 690))
	many := mustSamples(t, l.draw(rand.New(rand.NewPCG(2, 2)), 5000))
	plan, err := Recommend([]Hop{{Name: "api", Samples: few}, {Name: "db", Samples: many}}, Options{Deadline: 10e9})
	if err != nil {
		t.Fatal(err)
	}
	var api, db int
	for _, w := range plan.Warnings {
		switch {
		case strings.HasPrefix(w, `hop "api": its timeout at p99.9 rests on 690 samples, fewer than the 2995`):
			api++
		case strings.HasPrefix(w, `hop "db"`) && strings.Contains(w, "samples, fewer than"):
			db++
		}
	}
	if api != 1 || db != 0 {
		t.Errorf("small-sample warnings: api %d (want 1), db %d (want 0): %q", api, db, plan.Warnings)
	}

	edges := []metrics.EdgeSummary{{From: "client", To: "api", Phases: &metrics.PhaseReport{Phases: map[string]metrics.PhaseStat{
		"connect":         {Count: 10, P99Ms: 1},
		"first_byte":      {Count: 5000, P99Ms: 20},
		metrics.PhaseCold: {Count: 10, P99Ms: 25},
		metrics.PhaseWarm: {Count: 4990, P99Ms: 21},
	}}}}
	plans, err := RecommendPhases(edges, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(plans[0].Warnings, "\n")
	for _, want := range []string{"the p99 of connect (10 samples), attempt_cold (10 samples): fewer than the 299"} {
		if !strings.Contains(got, want) {
			t.Errorf("phase warnings lack %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "first_byte") || strings.Contains(got, "attempt_warm") {
		t.Errorf("phases with enough samples warned:\n%s", got)
	}
}
