package serve

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/sim"
	"github.com/stormsim/stormsim/topology"
)

// topicScenario is the order -> inventory hop of experiment outbox-order,
// small and quick: constant arrivals (so serve and the simulator offer the
// same commits), no synchronous retries (each request commits once), no
// crash unless a test sets one, unkeyed events, an outbox passing every
// 20 ms, and an inventory consumer with enough concurrency never to queue.
const topicScenario = `
name: topics
seed: 7
duration: 1s
workload:
  entry: order
  arrival: constant
  rate: 40
  deadline: 2s
  client:
    timeout: 1s
services:
  - name: order
    workers: 32
    queue: 100
    service_time: {dist: constant, value: 2ms}
    calls:
      - publish: {topic: order-created, via: outbox, outbox_interval: 20ms}
  - name: inventory
    workers: 1
    queue: 10
    service_time: {dist: constant, value: 5ms}
    consumes: {topic: order-created, concurrency: 32, ack_deadline: 1s, max_deliveries: 3}
faults:
  - {service: order, at: 0s, for: 1m, crash_between_commit_and_publish: 0, crash_between_publish_and_mark: 0}
  - {service: inventory, at: 0s, for: 1m, crash_between_effect_and_ack: 0}
`

func topicParse(t *testing.T, sets ...string) *topology.Scenario {
	t.Helper()
	sc, err := topology.Parse("topics.yaml", []byte(topicScenario), sets)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// serveTopics runs sc through serve (an embedded JetStream) and returns
// the consumer's summary.
func serveTopics(t *testing.T, sc *topology.Scenario) *metrics.ConsumerSummary {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := RunScenario(ctx, sc, ScenarioOptions{Grace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range res.Summary.Services {
		if s.Consumer != nil {
			if s.Consumer.Intents == 0 {
				t.Fatalf("serve: no intents: %+v", *s.Consumer)
			}
			return s.Consumer
		}
	}
	t.Fatal("serve: no consumer summary")
	return nil
}

// side is one run of a scenario's topics: through serve or simulated.
type side struct {
	name string
	c    *metrics.ConsumerSummary
}

// bothSides runs served through serve and simulated through the
// simulator (the same scenario, or another seed of it), serve first.
func bothSides(t *testing.T, served, simulated *topology.Scenario) []side {
	t.Helper()
	real := serveTopics(t, served)
	res, err := sim.Run(context.Background(), simulated, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return []side{{"serve", real}, {"simulator", res.Summary.Services[1].Consumer}}
}

// Exact counts through serve and a real JetStream, each the simulator's
// per intent (the comparison runs the simulator on the same scenario).
func TestServeTopicsExact(t *testing.T) {
	for _, tc := range []struct {
		name string
		sets []string
		// want per intent: published, effects, lost, duplicate, dead-lettered
		want [5]float64
	}{
		// the outbox publisher crashes after each first publish: every
		// row is published twice, every event applied twice
		{"outbox crash after publish", []string{"faults.0.crash_between_publish_and_mark=1"}, [5]float64{2, 2, 0, 1, 0}},
		// ... and the consumer's dedup record makes the second a no-op
		{"outbox crash, transactional dedup", []string{"faults.0.crash_between_publish_and_mark=1", "services.1.consumes.ack=transactional_dedup"},
			[5]float64{2, 1, 0, 0, 0}},
		// the dual-write producer crashes after every commit: all lost
		{"dual write crash after commit", []string{"services.0.calls.0.publish.via=dual_write", "services.0.calls.0.publish.outbox_interval=0s",
			"faults.0.crash_between_commit_and_publish=1"}, [5]float64{0, 0, 1, 0, 0}},
		// the consumer crashes between effect and every ack: delivered
		// max_deliveries (3) times, applied each time, then dead-lettered
		{"consumer crash before ack", []string{"faults.1.crash_between_effect_and_ack=1", "services.1.consumes.ack_deadline=100ms"},
			[5]float64{1, 3, 0, 2, 1}},
		// replicas: each of order's publishes through its own outbox,
		// inventory's are one consumer group (the durable consumer they
		// share), the crash faults hit every replica
		{"replicas, outbox crash, transactional dedup", []string{"services.0.replicas=2", "services.1.replicas=2",
			"services.1.consumes.concurrency=4", "faults.0.crash_between_publish_and_mark=1", "services.1.consumes.ack=transactional_dedup"},
			[5]float64{2, 1, 0, 0, 0}},
		{"replicas, consumer crash before ack", []string{"services.1.replicas=3", "services.1.consumes.concurrency=2",
			"faults.1.crash_between_effect_and_ack=1", "services.1.consumes.ack_deadline=100ms"}, [5]float64{1, 3, 0, 2, 1}},
		// acking first, the crash loses the effect
		{"ack before effect, crash", []string{"faults.1.crash_between_effect_and_ack=1", "services.1.consumes.ack=before_effect"},
			[5]float64{1, 0, 1, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // a second of real time each, mostly waiting
			sc := topicParse(t, tc.sets...)
			sides := bothSides(t, sc, sc)
			real, simmed := sides[0].c, sides[1].c
			per := func(c *metrics.ConsumerSummary) [5]float64 {
				n := float64(c.Intents)
				return [5]float64{float64(c.Published) / n, float64(c.Effects) / n, float64(c.LostEffects) / n,
					float64(c.DuplicateEffects) / n, float64(c.DeadLettered) / n}
			}
			if got := per(real); got != tc.want || real.InFlight != 0 {
				t.Errorf("serve per intent (published, effects, lost, duplicate, dead-lettered) = %v, want %v\n%+v", got, tc.want, *real)
			}
			if got := per(simmed); got != tc.want {
				t.Errorf("simulator per intent = %v, want %v\n%+v", got, tc.want, *simmed)
			}
			if real.Intents != simmed.Intents {
				t.Errorf("intents: serve %d, simulator %d (constant arrivals, no retries: the same commits)", real.Intents, simmed.Intents)
			}
		})
	}
}

// At a random crash rate both runs estimate the same probability p; their
// difference is within 4 standard errors of the difference of two
// independent binomial proportions, sqrt(p(1-p)(1/n₁ + 1/n₂)), and
// serve's alone within 4 of its own, sqrt(p(1-p)/n). serve runs on
// another seed: with the same one it would draw the very crashes the
// simulator draws (the same streams, in the same order), and the two must
// be independent samples for the bound.
func TestServeTopicsBinomial(t *testing.T) {
	const p = 0.3
	for _, tc := range []struct {
		name string
		sets []string
		// share is the estimate of p and its number of trials
		share func(c *metrics.ConsumerSummary) (float64, float64)
		// exact checks what holds whatever the draws
		exact func(c *metrics.ConsumerSummary) bool
	}{
		{"dual write crash: lost share of intents", []string{"services.0.calls.0.publish.via=dual_write",
			"services.0.calls.0.publish.outbox_interval=0s", "faults.0.crash_between_commit_and_publish=0.3"},
			func(c *metrics.ConsumerSummary) (float64, float64) {
				return float64(c.LostEffects) / float64(c.Intents), float64(c.Intents)
			},
			func(c *metrics.ConsumerSummary) bool {
				return c.DuplicateEffects == 0 && c.Effects+c.LostEffects == c.Intents
			}},
		// effect, then a crash before the ack in a share p of the
		// deliveries: each crash is a redelivery 100 ms later (and a
		// duplicate effect), unless it was the third delivery
		{"consumer crash: redelivered share of deliveries", []string{"faults.1.crash_between_effect_and_ack=0.3",
			"services.1.consumes.ack_deadline=100ms"},
			func(c *metrics.ConsumerSummary) (float64, float64) {
				crashes := c.Redeliveries + c.DeadLettered
				return float64(crashes) / float64(c.Deliveries), float64(c.Deliveries)
			},
			func(c *metrics.ConsumerSummary) bool {
				return c.LostEffects == 0 && c.DuplicateEffects == c.Redeliveries && c.Effects == c.Deliveries
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // three seconds of real time each, mostly waiting
			sets := append([]string{"duration=3s", "workload.rate=100"}, tc.sets...)
			sides := bothSides(t, topicParse(t, append(sets, "seed=8")...), topicParse(t, sets...))
			real, simmed := sides[0].c, sides[1].c
			pr, nr := tc.share(real)
			ps, ns := tc.share(simmed)
			if se := math.Sqrt(p * (1 - p) * (1/nr + 1/ns)); math.Abs(pr-ps) > 4*se {
				t.Errorf("serve %.3f of %.0f, simulator %.3f of %.0f: differ by more than 4×%.3f", pr, nr, ps, ns, se)
			}
			if se := math.Sqrt(p * (1 - p) / nr); math.Abs(pr-p) > 4*se {
				t.Errorf("serve %.3f of %.0f, want %.2f ± 4×%.3f", pr, nr, p, se)
			}
			if !tc.exact(real) || !tc.exact(simmed) {
				t.Errorf("serve %+v\nsimulator %+v", *real, *simmed)
			}
			t.Logf("serve %.3f of %.0f, simulator %.3f of %.0f", pr, nr, ps, ns)
		})
	}
}

// A consumer slower than its ack deadline: every delivery is redelivered
// while still in process, until max_deliveries (2), then dead-lettered,
// and each delivery applies its effect when it ends. The deadlines fall
// at 200 ms and 400 ms, the processings end at 600 ms and 800 ms: far
// from each other, so the counts are exact on both sides.
func TestServeTopicsRedelivery(t *testing.T) {
	sc := topicParse(t, "workload.rate=10", "services.1.service_time.value=600ms", "services.1.consumes.ack_deadline=200ms",
		"services.1.consumes.max_deliveries=2")
	for _, sd := range bothSides(t, sc, sc) {
		n := sd.c.Intents
		if sd.c.Deliveries != 2*n || sd.c.Redeliveries != n || sd.c.DeadLettered != n || sd.c.Effects != 2*n || sd.c.DuplicateEffects != n {
			t.Errorf("%s: %+v, want per intent 2 deliveries, 1 redelivery, 1 dead letter, 2 effects, 1 duplicate", sd.name, *sd.c)
		}
	}
}

// JetStream accepts a late ack, the simulator ignores it (docs/model.md,
// "Asynchronous hops"). The consumer takes 1.5 s, the ack deadline is
// 1 s, max_deliveries 3. Simulated: deliveries at 0, 1 and 2 s, every ack
// (at 1.5, 2.5 and 3.5 s) too late, dead-lettered at 3 s: 3 deliveries,
// 3 effects, 1 dead letter per intent. JetStream: the first delivery's
// ack at 1.5 s settles the message that was redelivered at 1 s: 2
// deliveries, 2 effects, no dead letter. Processing at 1.5 times the
// deadline puts both boundaries the real broker must keep (redelivery
// before the first ack, that ack before a third delivery) 500 ms from
// the next; at 300 ms, two CPU burners moved one in ten runs, at 100 ms a
// load average of 25 did.
func TestServeTopicsLateAck(t *testing.T) {
	sc := topicParse(t, "workload.rate=10", "services.1.service_time.value=1500ms", "services.1.consumes.ack_deadline=1s")
	sides := bothSides(t, sc, sc)
	real, simmed := sides[0].c, sides[1].c
	if n := simmed.Intents; simmed.Deliveries != 3*n || simmed.Effects != 3*n || simmed.DeadLettered != n {
		t.Errorf("simulator: %+v, want per intent 3 deliveries, 3 effects, 1 dead letter (late acks ignored)", *simmed)
	}
	if n := real.Intents; real.Deliveries != 2*n || real.Effects != 2*n || real.DeadLettered != 0 {
		t.Errorf("JetStream: %+v, want per intent 2 deliveries, 2 effects, no dead letter (a late ack accepted)", *real)
	}
}

// Ordered consumers through serve: a JetStream consumer per key with one
// message unsettled at a time. Processing times uniform on [1, 40] ms,
// two keys 10 ms apart each: unordered, later events of a key often end
// first (out of order on both sides); ordered, never, and each intent
// applies once. With a crash between effect and every ack, a key's
// message is delivered max_deliveries (3) times before the next one of
// its key, exactly as simulated.
func TestServeTopicsOrdered(t *testing.T) {
	uniform := []string{"services.1.service_time.dist=uniform", "services.1.service_time.min=1ms", "services.1.service_time.max=40ms",
		"services.1.service_time.value=0s", "services.0.calls.0.publish.keys=2", "workload.rate=200", "services.1.consumes.concurrency=8"}
	for _, sd := range bothSides(t, topicParse(t, uniform...), topicParse(t, uniform...)) {
		if sd.c.OutOfOrderEffects == 0 {
			t.Errorf("%s unordered: %+v, want effects out of order", sd.name, *sd.c)
		}
	}
	ordered := append(uniform, "services.1.consumes.ordered=true")
	for _, sd := range bothSides(t, topicParse(t, ordered...), topicParse(t, ordered...)) {
		if c := sd.c; c.OutOfOrderEffects != 0 || c.Effects != c.Intents || c.LostEffects != 0 || c.InFlight != 0 {
			t.Errorf("%s ordered: %+v, want each intent applied once, in order", sd.name, *c)
		}
	}
	crash := []string{"services.0.calls.0.publish.keys=2", "workload.rate=10", "services.1.consumes.ordered=true",
		"faults.1.crash_between_effect_and_ack=1", "services.1.consumes.ack_deadline=100ms"}
	for _, sd := range bothSides(t, topicParse(t, crash...), topicParse(t, crash...)) {
		if c, n := sd.c, sd.c.Intents; c.Deliveries != 3*n || c.Effects != 3*n || c.DeadLettered != n || c.OutOfOrderEffects != 0 || c.InFlight != 0 {
			t.Errorf("%s ordered, crash before every ack: %+v, want per intent 3 deliveries and effects, a dead letter, none out of order", sd.name, *c)
		}
	}
}

// serve refuses, at the line, an ordered consumer it cannot run as the
// simulator does: fewer consumers than keys, or acking before the effect.
func TestServeRefusesOrderedTopics(t *testing.T) {
	for _, tc := range []struct {
		sets []string
		want string
	}{
		{[]string{"services.0.calls.0.publish.keys=40", "services.1.consumes.ordered=true"},
			"--set services.1.consumes.ordered=true: services[1].consumes.ordered: on a real broker (serve, load, broker) an ordered consumer runs a consumer per key: concurrency × replicas (32) must be ≥ the topic's keys (40)"},
		{[]string{"services.0.calls.0.publish.keys=4", "services.1.consumes.ordered=true", "services.1.consumes.ack=before_effect"},
			"--set services.1.consumes.ordered=true: services[1].consumes.ordered: an ordered consumer acking before_effect is simulator-only"},
	} {
		_, err := StartCluster(topicParse(t, tc.sets...), ClusterOptions{})
		var probs topology.Problems
		if !errors.As(err, &probs) || len(probs) != 1 || !strings.HasPrefix(probs[0].String(), tc.want) {
			t.Errorf("%v: StartCluster: %v, want %s", tc.sets, err, tc.want)
		}
	}
	sc := topicParse(t, "services.0.calls.0.publish.keys=40")
	sc.Services[1].Consumes.Ordered = true
	_, err := StartCluster(sc, ClusterOptions{})
	if err == nil || !strings.HasPrefix(err.Error(), "topics.yaml:23: services[1].consumes.ordered:") {
		t.Errorf("StartCluster with an ordered consumer: %v, want it at topics.yaml:23", err)
	}
}

// An early stop reports the intents still in flight apart, not as lost:
// with an outbox passing once a minute, every intent committed before the
// stop at 500 ms still sits in the outbox.
func TestServeTopicsInFlightAtStop(t *testing.T) {
	sc := topicParse(t, "services.0.calls.0.publish.outbox_interval=1m")
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	res, err := RunScenario(ctx, sc, ScenarioOptions{Grace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Summary.Services[1].Consumer
	if c == nil || c.Intents == 0 || c.InFlight != c.Intents || c.LostEffects != 0 || c.Published != 0 {
		t.Fatalf("stopped at 500 ms: %+v, want every intent in flight, none lost or published", c)
	}
	var b strings.Builder
	if err := metrics.FormatText(&b, &res.Summary); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "intents still in flight at the stop (counted neither lost nor duplicate)") {
		t.Errorf("text summary does not say the in-flight intents are apart:\n%s", b.String())
	}
}

// A consumer group across replicas, a crash fault on one of them: the
// replicas' consumers share JetStream's durable consumer, whose waiting
// pulls it serves in order, so (as simulated, where the consumer free the
// longest takes the next message) about half the deliveries land on the
// faulty replica and crash. Whatever the order, each delivery is one
// trial of landing there; 4 binomial standard errors at p = 1/2 bound
// serve's crashed share.
func TestServeTopicsReplicaFault(t *testing.T) {
	sc := topicParse(t, "duration=2s", "services.1.replicas=2", "services.1.consumes.concurrency=2",
		"faults.1.crash_between_effect_and_ack=1", "faults.1.replica=1", "services.1.consumes.ack_deadline=100ms")
	for _, sd := range bothSides(t, sc, sc) {
		n := float64(sd.c.Deliveries)
		share := float64(sd.c.Redeliveries+sd.c.DeadLettered) / n
		if se := math.Sqrt(0.25 / n); math.Abs(share-0.5) > 4*se || sd.c.LostEffects != 0 || sd.c.DuplicateEffects != sd.c.Redeliveries {
			t.Errorf("%s: crashed share %.3f of %.0f deliveries, want 0.5 ± 4×%.3f, no effect lost, a duplicate per redelivery\n%+v", sd.name, share, n, se, *sd.c)
		}
		t.Logf("%s: crashed share %.3f of %.0f deliveries", sd.name, share, n)
	}
}

// stormsim serve: a request to the producer commits an intent, the
// consumer's /stats reports it under consumer, and the cluster says it
// embeds the JetStream it runs the topic on.
func TestServeTopicsStats(t *testing.T) {
	sc := topicParse(t, "services.0.calls.0.publish.via=dual_write", "services.0.calls.0.publish.outbox_interval=0s")
	cl, err := StartCluster(sc, ClusterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close(context.Background())
	if u, embedded := cl.NATS(); !strings.HasPrefix(u, "nats://127.0.0.1:") || !embedded {
		t.Errorf("NATS() = %q, %v, want an embedded server on 127.0.0.1", u, embedded)
	}
	for range 3 {
		resp, err := http.Get(cl.URLs["order"])
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("order answered %s", resp.Status)
		}
	}
	var st Stats
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		resp, err := http.Get(strings.TrimSuffix(cl.URLs["inventory"], "/inventory") + "/stats")
		if err != nil {
			t.Fatal(err)
		}
		st = Stats{} // omitted fields (in_flight: 0) must not keep old values
		err = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if st.Consumer != nil && st.Consumer.Intents == 3 && st.Consumer.InFlight == 0 {
			break
		}
	}
	if c := st.Consumer; c == nil || c.Intents != 3 || c.Effects != 3 || c.Deliveries != 3 || c.InFlight != 0 || c.Topic != "order-created" {
		t.Errorf("inventory /stats consumer = %+v, want 3 intents delivered and applied once each", c)
	}
	resp, err := http.Get(strings.TrimSuffix(cl.URLs["inventory"], "/inventory") + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, want := range []string{`stormsim_consumer_effects_total{service="inventory",topic="order-created"} 3`,
		`stormsim_consumer_deliveries_total{service="inventory",topic="order-created"} 3`,
		`stormsim_consumer_backlog{service="inventory",topic="order-created"} 0`} {
		if !strings.Contains(string(body), want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
