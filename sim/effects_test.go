package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/model"
	"github.com/stormsim/stormsim/topology"
)

// runEffects runs scenario src with overrides sets and returns its summary.
func runEffects(t *testing.T, src string, sets ...string) metrics.Summary {
	t.Helper()
	sc, err := topology.Parse("effects.yaml", []byte(src), sets)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), sc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return res.Summary
}

func effectService(t *testing.T, sum metrics.Summary, name string) metrics.ServiceSummary {
	t.Helper()
	for _, s := range sum.Services {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no service %q in the summary", name)
	return metrics.ServiceSummary{}
}

// One intent: the shop does 10ms of work, then hands a payment of 200ms to
// pay; the user's deadline is 100ms and both services stop work their
// caller abandons.
const irrevocableScenario = `
name: irrevocable
duration: 1s
workload:
  entry: shop
  arrival: constant
  rate: 1
  deadline: 100ms
  write_fraction: 1
  client: {timeout: 1s}
services:
  - name: shop
    workers: 1
    service_time: {dist: constant, value: 10ms}
    cancel_on_timeout: true
    calls:
      - to: pay
        timeout: 1s
        propagate_deadline: true
        irrevocable: true
  - name: pay
    workers: 1
    service_time: {dist: constant, value: 200ms}
    cancel_on_timeout: true
`

// TestIrrevocableStepRunsPastTheDeadline: the deadline fires at 100ms,
// after the payment was sent at 10ms. Without irrevocable the deadline
// cancels the shop's attempt and, through it, the payment; with it, the
// payment runs to its end (one execution), the shop's work is wasted, and
// the intent is counted as passed an irrevocable step and unknown.
func TestIrrevocableStepRunsPastTheDeadline(t *testing.T) {
	for _, tc := range []struct {
		name        string
		sets        []string
		executions  int64
		wasted      int64
		irrevocable *metrics.Irrevocable
	}{
		{"irrevocable", nil, 1, 1, &metrics.Irrevocable{Sent: 1, Unknown: 1}},
		{"revocable", []string{"services.shop.calls.pay.irrevocable=false"}, 0, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sum := runEffects(t, irrevocableScenario, tc.sets...)
			if sum.Requests.Offered != 1 || sum.Requests.Unknown != 1 {
				t.Fatalf("requests = %+v, want 1 offered, 1 unknown", sum.Requests)
			}
			pay, shop := effectService(t, sum, "pay"), effectService(t, sum, "shop")
			if pay.Executions != tc.executions {
				t.Errorf("pay executions = %d, want %d", pay.Executions, tc.executions)
			}
			if shop.Wasted != tc.wasted {
				t.Errorf("shop wasted = %d, want %d", shop.Wasted, tc.wasted)
			}
			switch {
			case tc.irrevocable == nil && sum.Irrevocable != nil:
				t.Errorf("irrevocable = %+v, want none", *sum.Irrevocable)
			case tc.irrevocable != nil && (sum.Irrevocable == nil || *sum.Irrevocable != *tc.irrevocable):
				t.Errorf("irrevocable = %+v, want %+v", sum.Irrevocable, *tc.irrevocable)
			}
		})
	}
}

// TestIrrevocableSentOnlyWhenSent: a payment that never left (the shop's
// attempt was cancelled while it worked, before the step) does not count.
func TestIrrevocableSentOnlyWhenSent(t *testing.T) {
	sum := runEffects(t, irrevocableScenario, "workload.deadline=5ms")
	if got := *sum.Irrevocable; got != (metrics.Irrevocable{}) {
		t.Errorf("irrevocable = %+v, want none sent", got)
	}
	if pay := effectService(t, sum, "pay"); pay.Attempts != 0 {
		t.Errorf("pay attempts = %d, want 0", pay.Attempts)
	}
}

// One notification: the app calls the mailer, whose first reply is lost
// (drop_response during the first 10ms); the app's call times out after
// 50ms and retries once.
const emailScenario = `
name: email
duration: 1s
workload:
  entry: app
  arrival: constant
  rate: 1
  client: {timeout: 1s}
services:
  - name: app
    workers: 4
    service_time: {dist: constant, value: 1ms}
    calls:
      - to: mailer
        timeout: 50ms
        retry: {max_attempts: 2, on: [timeout], backoff: {initial: 1ms, jitter: none}}
  - name: mailer
    workers: 4
    service_time: {dist: constant, value: 5ms}
    external_effect: {dedupe: none}
faults:
  - {service: mailer, at: 0s, for: 10ms, drop_response: 1}
`

// TestExternalEffectDuplicates: one lost reply and one retry execute the
// e-mail step twice: without dedupe two e-mails are delivered (one
// duplicate); a channel deduplicating by key delivers one and absorbs one.
func TestExternalEffectDuplicates(t *testing.T) {
	for _, tc := range []struct {
		dedupe string
		want   metrics.Effects
	}{
		{"none", metrics.Effects{Sent: 2, Delivered: 2, Duplicates: 1}},
		{"key", metrics.Effects{Sent: 2, Delivered: 1, Absorbed: 1}},
	} {
		t.Run(tc.dedupe, func(t *testing.T) {
			sum := runEffects(t, emailScenario, "services.mailer.external_effect.dedupe="+tc.dedupe)
			if sum.Requests.Succeeded != 1 {
				t.Fatalf("requests = %+v, want 1 succeeded", sum.Requests)
			}
			mailer := effectService(t, sum, "mailer")
			if mailer.Effects == nil || *mailer.Effects != tc.want {
				t.Errorf("mailer effects = %+v, want %+v", mailer.Effects, tc.want)
			}
			if app := effectService(t, sum, "app"); app.Effects != nil {
				t.Errorf("app effects = %+v, want none (it has no external effect)", *app.Effects)
			}
		})
	}
}

// Two writers of one entity: constant arrivals 5ms apart, each reading at
// its start and writing 10ms later, so the second reads before the first
// writes and its write conflicts.
const conflictScenario = `
name: conflict
duration: 10ms
workload:
  entry: accounts
  arrival: constant
  rate: 200
  client: {timeout: 1s}
services:
  - name: accounts
    workers: 4
    service_time: {dist: constant, value: 10ms}
    versioned_write: {entities: 1, retry: step}
`

// TestConflictRetries: after the conflict, a retry of only the write step
// overwrites the first writer's update (one lost update); a redo of the
// whole read-modify-write reads again and commits cleanly (none lost,
// one more write).
func TestConflictRetries(t *testing.T) {
	for _, tc := range []struct {
		retry string
		want  metrics.VersionedWrites
	}{
		{"step", metrics.VersionedWrites{Writes: 2, Conflicts: 1, LostUpdates: 1, ConflictRate: 0.5}},
		{"operation", metrics.VersionedWrites{Writes: 3, Conflicts: 1, Redone: 1, ConflictRate: 1.0 / 3}},
	} {
		t.Run(tc.retry, func(t *testing.T) {
			sum := runEffects(t, conflictScenario, "services.accounts.versioned_write.retry="+tc.retry)
			if sum.Requests.Offered != 2 || sum.Requests.Succeeded != 2 {
				t.Fatalf("requests = %+v, want 2 offered, 2 succeeded", sum.Requests)
			}
			got := effectService(t, sum, "accounts").VersionedWrites
			if got == nil || *got != tc.want {
				t.Errorf("versioned writes = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestConflictAborts: with one read-modify-write allowed, the conflicting
// writer answers conflict instead of redoing.
func TestConflictAborts(t *testing.T) {
	sum := runEffects(t, conflictScenario, "services.accounts.versioned_write.retry=operation",
		"services.accounts.versioned_write.attempts=1")
	want := metrics.VersionedWrites{Writes: 2, Conflicts: 1, Aborted: 1, ConflictRate: 0.5}
	if got := effectService(t, sum, "accounts").VersionedWrites; got == nil || *got != want {
		t.Errorf("versioned writes = %+v, want %+v", got, want)
	}
	if sum.Requests.Succeeded != 1 || sum.Requests.Failed != 1 {
		t.Errorf("requests = %+v, want 1 succeeded, 1 failed (conflict)", sum.Requests)
	}
}

// conflictRate makes conflictScenario Poisson writers at 1000/s over 20
// entities, 10ms between read and write, with workers enough that nothing
// queues.
var conflictRate = []string{"duration=20s", "seed=7", "workload.arrival=poisson", "workload.rate=1000",
	"services.accounts.workers=1000", "services.accounts.versioned_write.entities=20"}

// TestConflictRateClosedForm checks the conflict rate of step retries
// (every write commits once, w after its read) against 1 − exp(−λw/K).
// The tolerance is 4 standard deviations of the observed rate: n writes
// whose indicators are each correlated only with those of the writes of the
// same entity less than w apart (2μ of them on average, μ = λw/K), so
// Var ≤ p(1−p)(1+2μ)/n.
func TestConflictRateClosedForm(t *testing.T) {
	const rate, entities = 1000.0, 20
	w := 10 * time.Millisecond
	sum := runEffects(t, conflictScenario, conflictRate...)
	vw := effectService(t, sum, "accounts").VersionedWrites
	if vw == nil || vw.Writes < 15000 {
		t.Fatalf("versioned writes = %+v, want about 20000 writes", vw)
	}
	p := model.ConflictProbability(rate, w, entities)
	mu := rate * w.Seconds() / entities
	tol := 4 * math.Sqrt(p*(1-p)*(1+2*mu)/float64(vw.Writes))
	t.Logf("conflict rate %.4f over %d writes; closed form %.4f ± %.4f", vw.ConflictRate, vw.Writes, p, tol)
	if math.Abs(vw.ConflictRate-p) > tol {
		t.Errorf("conflict rate = %.4f over %d writes, want %.4f ± %.4f", vw.ConflictRate, vw.Writes, p, tol)
	}
	if vw.LostUpdates != vw.Conflicts {
		t.Errorf("lost updates = %d, want every conflict (%d) under retry: step", vw.LostUpdates, vw.Conflicts)
	}
}

// One checkout: the shop's irrevocable step is a parallel group of two
// channels needing one answer; the slow one's attempt would be cancelled
// once the fast one answered, had the step not been irrevocable.
const irrevocableGroupScenario = `
name: irrevocable-group
duration: 1s
workload:
  entry: shop
  arrival: constant
  rate: 1
  client: {timeout: 1s}
services:
  - name: shop
    workers: 1
    service_time: {dist: constant, value: 1ms}
    calls:
      - wait_for: 1
        irrevocable: true
        parallel:
          - {to: fast, timeout: 500ms}
          - {to: slow, timeout: 500ms}
  - name: fast
    workers: 1
    service_time: {dist: constant, value: 5ms}
  - name: slow
    workers: 1
    service_time: {dist: constant, value: 50ms}
    cancel_on_timeout: true
    external_effect: {}
`

// TestIrrevocableGroupNotAborted: the quorum met by the fast member does
// not cancel the slow member's attempt once the step is irrevocable.
func TestIrrevocableGroupNotAborted(t *testing.T) {
	for _, tc := range []struct {
		set  string
		sent int64
	}{
		{"services.shop.calls.0.irrevocable=true", 1},
		{"services.shop.calls.0.irrevocable=false", 0},
	} {
		sum := runEffects(t, irrevocableGroupScenario, tc.set)
		if sum.Requests.Succeeded != 1 {
			t.Fatalf("%s: requests = %+v, want 1 succeeded", tc.set, sum.Requests)
		}
		if got := effectService(t, sum, "slow").Effects.Sent; got != tc.sent {
			t.Errorf("%s: slow effects sent = %d, want %d", tc.set, got, tc.sent)
		}
	}
}

// A payment handed irrevocably to a channel that deduplicates by key,
// whose first reply is lost: the shop's retry reaches the channel again,
// which absorbs it; the user, whose deadline passed meanwhile, saw UNKNOWN.
const paymentScenario = `
name: payment
duration: 1s
workload:
  entry: shop
  arrival: constant
  rate: 1
  deadline: 30ms
  write_fraction: 1
  client: {timeout: 1s}
services:
  - name: shop
    workers: 1
    service_time: {dist: constant, value: 1ms}
    cancel_on_timeout: true
    calls:
      - to: channel
        timeout: 50ms
        irrevocable: true
        propagate_deadline: true
        retry: {max_attempts: 2, on: [timeout], backoff: {initial: 1ms, jitter: none}}
  - name: channel
    workers: 1
    service_time: {dist: constant, value: 10ms}
    cancel_on_timeout: true
    reject_expired: true
    external_effect: {dedupe: key}
faults:
  - {service: channel, at: 0s, for: 20ms, drop_response: 1}
`

func TestIrrevocablePaymentRetriedAndAbsorbed(t *testing.T) {
	sum := runEffects(t, paymentScenario)
	if sum.Requests.Unknown != 1 {
		t.Fatalf("requests = %+v, want 1 unknown (the deadline passed at 30ms)", sum.Requests)
	}
	ch := effectService(t, sum, "channel")
	if want := (metrics.Effects{Sent: 2, Delivered: 1, Absorbed: 1}); ch.Effects == nil || *ch.Effects != want {
		t.Errorf("channel effects = %+v, want %+v", ch.Effects, want)
	}
	if want := (metrics.Irrevocable{Sent: 1, Unknown: 1}); sum.Irrevocable == nil || *sum.Irrevocable != want {
		t.Errorf("irrevocable = %+v, want %+v", sum.Irrevocable, want)
	}
}

// TestEffectsDeterministic: a scenario with every effect, run twice with
// one seed, writes byte-identical JSON.
func TestEffectsDeterministic(t *testing.T) {
	src := conflictScenario + `
    calls:
      - {to: mailer, timeout: 50ms, irrevocable: true, retry: {max_attempts: 2, on: [timeout]}}
  - name: mailer
    workers: 8
    service_time: {dist: exponential, mean: 2ms}
    external_effect: {}
faults:
  - {service: mailer, at: 5s, for: 5s, drop_response: 0.05}
`
	var out [2][]byte
	for i := range out {
		sum := runEffects(t, src, append(conflictRate, "duration=3s", "faults.0.at=1s")...)
		b, err := json.Marshal(sum)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = b
		if m := effectService(t, sum, "mailer").Effects; m == nil || m.Duplicates == 0 {
			t.Fatalf("mailer effects = %+v, want some duplicates", m)
		}
	}
	if !bytes.Equal(out[0], out[1]) {
		t.Errorf("two runs of one seed differ:\n%s\n%s", out[0], out[1])
	}
}
