package sim_test

import (
	"context"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/sim"
	"github.com/stormsim/stormsim/topology"
)

// asyncScenario is the order -> inventory walkthrough at its smallest: an
// order service commits and publishes order-created; inventory consumes
// it. A fault covering the whole run carries the crash probabilities
// (all 0 here; tests set them).
const asyncScenario = `
name: async
duration: 1s
workload:
  entry: order
  arrival: constant
  rate: 100
  deadline: 5s
services:
  - name: order
    workers: 8
    service_time: {dist: constant, value: 1ms}
    calls:
      - publish: {topic: order-created}
  - name: inventory
    workers: 1
    service_time: {dist: constant, value: 2ms}
    consumes: {topic: order-created, concurrency: 4, ack_deadline: 1s, max_deliveries: 3}
faults:
  - {service: order, at: 0s, for: 1h}
  - {service: inventory, at: 0s, for: 1h}
`

// runAsync runs asyncScenario with the overrides and returns its summary
// and inventory's consumer summary.
func runAsync(t *testing.T, src string, sets ...string) (metrics.Summary, *metrics.ConsumerSummary) {
	t.Helper()
	sum := runSets(t, src, sets).Summary
	for _, s := range sum.Services {
		if s.Name == "inventory" {
			if s.Consumer == nil {
				t.Fatal("inventory has no consumer summary")
			}
			return sum, s.Consumer
		}
	}
	t.Fatal("no inventory in the summary")
	return sum, nil
}

// runSets simulates src (as async.yaml) with the overrides.
func runSets(t *testing.T, src string, sets []string) *metrics.Result {
	t.Helper()
	sc, err := topology.Parse("async.yaml", []byte(src), sets)
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(context.Background(), sc, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestAsyncExactCounts checks the boundary crashes at probability 0 and 1,
// where every count follows from the number of intents N (one per
// offered request: each request's one attempt commits once).
func TestAsyncExactCounts(t *testing.T) {
	const (
		outbox   = "services.0.calls.0.publish.via=outbox"
		dedup    = "services.1.consumes.ack=transactional_dedup"
		before   = "services.1.consumes.ack=before_effect"
		crashCP  = "faults.0.crash_between_commit_and_publish=1"
		crashPM  = "faults.0.crash_between_publish_and_mark=1"
		crashEA  = "faults.1.crash_between_effect_and_ack=1"
		maxDeliv = 3
	)
	type want struct{ published, effects, lost, dup, dead int64 } // in units of N
	for _, tc := range []struct {
		name string
		sets []string
		want want
	}{
		{"dual-write", nil, want{1, 1, 0, 0, 0}},
		{"dual-write crash after commit", []string{crashCP}, want{0, 0, 1, 0, 0}},
		{"outbox", []string{outbox}, want{1, 1, 0, 0, 0}},
		// every row is published, the publisher crashes, and the restarted
		// one publishes it again: exactly one duplicate per event
		{"outbox crash after publish", []string{outbox, crashPM}, want{2, 2, 0, 1, 0}},
		{"outbox crash after publish, dedup", []string{outbox, crashPM, dedup}, want{2, 1, 0, 0, 0}},
		// the crash at commit does not apply to an outbox: the row is in the commit
		{"outbox crash after commit", []string{outbox, crashCP}, want{1, 1, 0, 0, 0}},
		// never acked: applied on each of max_deliveries deliveries, then dead-lettered
		{"effect then crash", []string{crashEA}, want{1, maxDeliv, 0, maxDeliv - 1, 1}},
		{"effect then crash, dedup", []string{crashEA, dedup}, want{1, 1, 0, 0, 1}},
		{"ack then crash", []string{crashEA, before}, want{1, 0, 1, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sum, c := runAsync(t, asyncScenario, tc.sets...)
			n := sum.Requests.Offered
			if n == 0 || c.Intents != n {
				t.Fatalf("intents %d, offered %d: want equal and > 0", c.Intents, n)
			}
			w := tc.want
			got := want{c.Published, c.Effects, c.LostEffects, c.DuplicateEffects, c.DeadLettered}
			exp := want{w.published * n, w.effects * n, w.lost * n, w.dup * n, w.dead * n}
			if got != exp {
				t.Errorf("published, effects, lost, duplicate, dead-lettered = %+v, want %+v (N = %d)", got, exp, n)
			}
			if c.OutOfOrderEffects != 0 {
				t.Errorf("out of order %d with unkeyed events", c.OutOfOrderEffects)
			}
		})
	}
}

// within4σ fails unless x is within 4 standard deviations of a
// Binomial(n, p) count's mean: the tolerance follows from the count's
// law (a false failure has probability about 6e-5 per check).
func within4σ(t *testing.T, what string, x, n int64, p float64) {
	t.Helper()
	mean := float64(n) * p
	sd := math.Sqrt(float64(n) * p * (1 - p))
	if math.Abs(float64(x)-mean) > 4*sd {
		t.Errorf("%s = %d, want Binomial(%d, %v): %.1f ± 4×%.1f", what, x, n, p, mean, sd)
	} else {
		t.Logf("%s = %d, Binomial(%d, %v) mean %.1f, sd %.1f", what, x, n, p, mean, sd)
	}
}

// TestAsyncBinomialCrashes checks counts at random crash rates: each
// intent meets its boundary once, independently, so the lost or
// duplicated count is Binomial(N, p).
func TestAsyncBinomialCrashes(t *testing.T) {
	base := []string{"duration=20s", "workload.rate=200"}
	for _, tc := range []struct {
		name  string
		sets  []string
		p     float64
		count func(*metrics.ConsumerSummary) int64
	}{
		{"dual-write lost", []string{"faults.0.crash_between_commit_and_publish=0.2"}, 0.2,
			func(c *metrics.ConsumerSummary) int64 { return c.LostEffects }},
		{"outbox duplicates", []string{"services.0.calls.0.publish.via=outbox", "faults.0.crash_between_publish_and_mark=0.3"}, 0.3,
			func(c *metrics.ConsumerSummary) int64 { return c.DuplicateEffects }},
		{"ack-before-effect lost", []string{"services.1.consumes.ack=before_effect", "faults.1.crash_between_effect_and_ack=0.05"}, 0.05,
			func(c *metrics.ConsumerSummary) int64 { return c.LostEffects }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, c := runAsync(t, asyncScenario, append(append([]string{}, base...), tc.sets...)...)
			within4σ(t, tc.name, tc.count(c), c.Intents, tc.p)
		})
	}
}

// TestAsyncOrdering: keyed events processed concurrently with variable
// times are applied out of order; ordered delivery, or a version check,
// keeps every key's effects in order.
func TestAsyncOrdering(t *testing.T) {
	keyed := []string{"services.0.calls.0.publish.keys=3", "workload.rate=1000",
		"services.1.service_time.dist=exponential", "services.1.service_time.mean=3ms", "services.1.service_time.value=0s"}
	_, plain := runAsync(t, asyncScenario, keyed...)
	if plain.OutOfOrderEffects == 0 {
		t.Errorf("unordered concurrent consumer: no out-of-order effects in %d", plain.Effects)
	}
	_, ordered := runAsync(t, asyncScenario, append(keyed, "services.1.consumes.ordered=true")...)
	if ordered.OutOfOrderEffects != 0 || ordered.LostEffects != 0 || ordered.Effects != ordered.Intents {
		t.Errorf("ordered: %+v, want every intent applied once, in order", *ordered)
	}
	_, checked := runAsync(t, asyncScenario, append(keyed, "services.1.consumes.version_check=true")...)
	if checked.OutOfOrderEffects != 0 || checked.StaleRejected == 0 || checked.StaleRejected+checked.Effects != checked.Intents {
		t.Errorf("version check: %+v, want no out-of-order effect, the stale ones rejected", *checked)
	}
}

// TestAsyncRedeliveryStorm: a consumer slowed past its ack deadline has
// every message redelivered until max_deliveries: the broker multiplies
// the load by max_deliveries, as synchronous retries do.
func TestAsyncRedeliveryStorm(t *testing.T) {
	_, c := runAsync(t, asyncScenario, "faults.1.latency_add=1500ms", "services.1.consumes.concurrency=1000")
	if c.Deliveries != 3*c.Published || c.DeadLettered != c.Published || c.DuplicateEffects != 2*c.Intents {
		t.Errorf("storm: %+v, want 3 deliveries and 3 effects per message, all dead-lettered", *c)
	}
}

// TestAsyncValidation: async keys are checked with file, line and field.
func TestAsyncValidation(t *testing.T) {
	for _, tc := range []struct{ set, want string }{
		{"services.0.calls.0.publish.topic=nope", `services[0].calls[0].publish.topic: no service consumes topic "nope"`},
		{"services.0.calls.0.publish.via=carrier", "services[0].calls[0].publish.via: must be dual_write or outbox"},
		{"services.1.consumes.ack=whenever", "services[1].consumes.ack: must be after_effect"},
		{"services.1.consumes.max_deliveries=-1", "services[1].consumes.max_deliveries: must be ≥ 1"},
		{"faults.1.crash_between_effect_and_ack=2", "faults[1].crash_between_effect_and_ack: must be in [0, 1]"},
	} {
		_, err := topology.Parse("async.yaml", []byte(asyncScenario), []string{tc.set})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--set %s: error %v, want %q", tc.set, err, tc.want)
		}
	}
	bad := strings.Replace(asyncScenario, "publish: {topic: order-created}", "publish: {topic: order-created, keys: -2}", 1)
	if _, err := topology.Parse("async.yaml", []byte(bad), nil); err == nil || !strings.Contains(err.Error(), "async.yaml:14: services[0].calls[0].publish.keys: must be ≥ 0") {
		t.Errorf("keys -2: error %v", err)
	}
}

// TestAsyncSeriesAndDeterminism: the consumer's columns exist only with
// topics, add up to the summary's counts (no warm-up here), and two runs
// of one seed are identical.
func TestAsyncSeriesAndDeterminism(t *testing.T) {
	sets := []string{"services.0.calls.0.publish.via=outbox", "faults.0.crash_between_publish_and_mark=0.2",
		"faults.1.crash_between_effect_and_ack=0.1", "services.0.calls.0.publish.keys=4"}
	a, b := runSets(t, asyncScenario, sets), runSets(t, asyncScenario, sets)
	ja, _ := json.Marshal(a.Summary)
	jb, _ := json.Marshal(b.Summary)
	if string(ja) != string(jb) || !reflect.DeepEqual(a.Series, b.Series) {
		t.Fatal("two runs of one seed differ")
	}
	col := func(name string) float64 {
		i := slices.Index(a.Series.Columns, metrics.Column(name, "inventory"))
		if i < 0 {
			t.Fatalf("no column %s/inventory in %v", name, a.Series.Columns)
		}
		var s float64
		for _, row := range a.Series.Rows {
			s += row[i]
		}
		return s
	}
	var c *metrics.ConsumerSummary
	for _, s := range a.Summary.Services {
		if s.Consumer != nil {
			c = s.Consumer
		}
	}
	for _, x := range []struct {
		name string
		want int64
	}{{metrics.MetricDeliveries, c.Deliveries}, {metrics.MetricRedeliveries, c.Redeliveries}, {metrics.MetricEffects, c.Effects},
		{metrics.MetricDuplicateEffects, c.DuplicateEffects}, {metrics.MetricLostEffects, c.LostEffects}, {metrics.MetricOutOfOrderEffects, c.OutOfOrderEffects}} {
		if got := col(x.name); got != float64(x.want) {
			t.Errorf("sum of %s/inventory = %v, want the summary's %d", x.name, got, x.want)
		}
	}
	if c.DuplicateEffects == 0 || c.Redeliveries == 0 {
		t.Errorf("crashes at 0.2 and 0.1 made no duplicate: %+v", *c)
	}
	res := runYAML(t, "plain.yaml", strings.Replace(strings.Replace(asyncScenario,
		"    calls:\n      - publish: {topic: order-created}\n", "", 1),
		"    consumes: {topic: order-created, concurrency: 4, ack_deadline: 1s, max_deliveries: 3}\n", "", 1))
	for _, c := range res.Series.Columns {
		if strings.HasPrefix(c, metrics.MetricDeliveries+"/") {
			t.Errorf("no topics, yet column %s", c)
		}
	}
	for _, s := range res.Summary.Services {
		if s.Consumer != nil {
			t.Errorf("no topics, yet %s has a consumer summary", s.Name)
		}
	}
}
