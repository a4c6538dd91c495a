package sim_test

import (
	"reflect"
	"testing"
)

// A replicated consumer is one consumer group whose members are its
// replicas, each with the service's concurrency; a replicated producer
// publishes from every replica. With constant service times and crashes
// at probability 0 or 1 no draw depends on a stream, so 2 replicas × 2
// consumers count exactly what 1 × 4 does.
func TestAsyncReplicasAreOneGroup(t *testing.T) {
	for _, sets := range [][]string{
		nil,
		{"faults.1.crash_between_effect_and_ack=1"},
		{"services.0.calls.0.publish.via=outbox", "faults.0.crash_between_publish_and_mark=1", "services.1.consumes.ack=transactional_dedup"},
	} {
		_, one := runAsync(t, asyncScenario, sets...)
		_, two := runAsync(t, asyncScenario, append([]string{"services.0.replicas=2", "services.1.replicas=2", "services.1.consumes.concurrency=2"}, sets...)...)
		if !reflect.DeepEqual(one, two) || one.Intents != 100 {
			t.Errorf("%v:\n1 replica × 4: %+v\n2 replicas × 2: %+v", sets, *one, *two)
		}
	}
}

// A crash fault on one replica of the consumer hits the deliveries that
// replica processes. At 100 req/s with 2 ms of processing every consumer
// is free when a message comes, and the one free the longest takes it:
// the four consumers (two per replica) take turns, so half the deliveries
// (within one turn: ±1) go to replica 1 and crash, each a redelivery or,
// at a message's third delivery, a dead letter.
func TestAsyncReplicaCrashFault(t *testing.T) {
	_, c := runAsync(t, asyncScenario, "services.1.replicas=2", "services.1.consumes.concurrency=2",
		"faults.1.crash_between_effect_and_ack=1", "faults.1.replica=1", "services.1.consumes.ack_deadline=50ms")
	crashes := c.Redeliveries + c.DeadLettered
	if c.Intents != 100 || c.LostEffects != 0 || c.DuplicateEffects != c.Redeliveries || c.Effects != c.Deliveries ||
		crashes < c.Deliveries/2-1 || crashes > c.Deliveries/2+1 {
		t.Errorf("%+v, want half the deliveries (±1) crashed, a duplicate per redelivery, none lost", *c)
	}
	// without the fault's replica key, every delivery crashes
	_, all := runAsync(t, asyncScenario, "services.1.replicas=2", "services.1.consumes.concurrency=2",
		"faults.1.crash_between_effect_and_ack=1", "services.1.consumes.ack_deadline=50ms")
	if all.Redeliveries+all.DeadLettered != all.Deliveries || all.DeadLettered != 100 {
		t.Errorf("a fault on both replicas: %+v, want every delivery crashed, every message dead-lettered", *all)
	}
}
