package broker_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stormsim/stormsim/broker"
	"github.com/stormsim/stormsim/experiments"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/sim"
	"github.com/stormsim/stormsim/topology"
)

// hop is the experiment outbox-order made small and quick for a real
// broker: no crash unless a test sets one, a 300 ms ack deadline so that
// real redeliveries come quickly, at most 3 deliveries, unkeyed events.
var hop = []string{"faults.0.crash_between_commit_and_publish=0", "faults.0.crash_between_publish_and_mark=0",
	"faults.1.crash_between_effect_and_ack=0", "services.1.consumes.ack_deadline=300ms", "services.1.consumes.max_deliveries=3",
	"services.0.calls.0.publish.keys=0", "duration=2s", "warmup=0s"}

func parse(t testing.TB, sets ...string) *topology.Scenario {
	t.Helper()
	data, _ := experiments.Lookup("outbox-order")
	sc, err := topology.Parse("outbox-order.yaml", data, append(append([]string{}, hop...), sets...))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// both runs the hop on the simulator and through the embedded JetStream
// (n intents), returning the two consumer summaries.
func both(t *testing.T, srv *broker.Server, n int, sets ...string) (simmed, real *metrics.ConsumerSummary) {
	t.Helper()
	sc := parse(t, sets...)
	res, err := sim.Run(context.Background(), sc, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	simmed = res.Summary.Services[1].Consumer
	if simmed == nil || simmed.Intents == 0 {
		t.Fatalf("simulator: no intents in %+v", simmed)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// another seed: the two runs are independent samples
	real, err = broker.Walk(ctx, srv.URL(), sc, "order-created", n, sc.Seed+1)
	if err != nil {
		t.Fatal(err)
	}
	return simmed, real
}

func TestWalkAgainstSimulator(t *testing.T) {
	srv, err := broker.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	const outbox = "services.0.calls.0.publish.via=outbox"
	const interval = "services.0.calls.0.publish.outbox_interval=20ms"
	// exact: per intent, the same counts in both (ratios to intents)
	for _, tc := range []struct {
		name string
		sets []string
	}{
		{"effect then crash, dead-lettered", []string{"faults.1.crash_between_effect_and_ack=1"}},
		{"effect then crash, dedup", []string{"faults.1.crash_between_effect_and_ack=1", "services.1.consumes.ack=transactional_dedup"}},
		{"outbox crash after publish", []string{outbox, interval, "faults.0.crash_between_publish_and_mark=1"}},
		{"dual write crash after commit", []string{"faults.0.crash_between_commit_and_publish=1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, r := both(t, srv, 20, tc.sets...)
			per := func(c *metrics.ConsumerSummary) [5]float64 {
				n := float64(c.Intents)
				return [5]float64{float64(c.Published) / n, float64(c.Effects) / n, float64(c.LostEffects) / n,
					float64(c.DuplicateEffects) / n, float64(c.DeadLettered) / n}
			}
			if per(s) != per(r) {
				t.Errorf("per intent (published, effects, lost, duplicate, dead-lettered): simulator %v, JetStream %v\nsim %+v\nreal %+v", per(s), per(r), *s, *r)
			}
		})
	}
	// random crashes: both proportions estimate p; their difference is
	// within 4 standard errors of two independent binomial proportions
	t.Run("binomial dual write", func(t *testing.T) {
		const p = 0.3
		s, r := both(t, srv, 400, "duration=3s", "faults.0.crash_between_commit_and_publish=0.3")
		ps, pr := float64(s.LostEffects)/float64(s.Intents), float64(r.LostEffects)/float64(r.Intents)
		se := math.Sqrt(p * (1 - p) * (1/float64(s.Intents) + 1/float64(r.Intents)))
		if math.Abs(ps-pr) > 4*se {
			t.Errorf("lost share: simulator %.3f (%d intents), JetStream %.3f (%d), differ by more than 4×%.3f", ps, s.Intents, pr, r.Intents, se)
		}
		t.Logf("lost share: simulator %.3f of %d, JetStream %.3f of %d", ps, s.Intents, pr, r.Intents)
		if rse := math.Sqrt(p * (1 - p) / float64(r.Intents)); math.Abs(pr-p) > 4*rse {
			t.Errorf("JetStream lost share %.3f, want %.2f ± 4×%.3f", pr, p, rse)
		}
	})
	t.Run("binomial consumer crash", func(t *testing.T) {
		// after_effect: a crash on the first delivery (p) means a
		// redelivery and a duplicate; max_deliveries 3 makes two more
		// crashes rare (p² = 0.01 per intent), so duplicates ≈ Binomial
		// per delivery; compare the per-delivery redelivery shares
		const p = 0.1
		s, r := both(t, srv, 300, "duration=2s", "faults.1.crash_between_effect_and_ack=0.1")
		ps, pr := float64(s.Redeliveries)/float64(s.Deliveries), float64(r.Redeliveries)/float64(r.Deliveries)
		se := math.Sqrt(p * (1 - p) * (1/float64(s.Deliveries) + 1/float64(r.Deliveries)))
		if math.Abs(ps-pr) > 4*se {
			t.Errorf("redelivery share: simulator %.3f, JetStream %.3f, differ by more than 4×%.3f\nsim %+v\nreal %+v", ps, pr, se, *s, *r)
		}
		t.Logf("redelivery share: simulator %.3f of %d, JetStream %.3f of %d", ps, s.Deliveries, pr, r.Deliveries)
		if r.DuplicateEffects != r.Redeliveries || r.LostEffects != 0 {
			t.Errorf("JetStream: %+v, want a duplicate per redelivery and none lost", *r)
		}
	})
}
