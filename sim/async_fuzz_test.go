package sim_test

import (
	"fmt"
	"testing"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/topology"
)

// checkIntents checks what holds for every consumer summary whatever the
// settings: each intent ends with effects or without (lost or rejected as
// stale), so effects − duplicates + lost + stale-only = intents; dedup
// never duplicates; ack-before-effect never redelivers.
func checkIntents(t *testing.T, c *metrics.ConsumerSummary, ack string, versionCheck bool) {
	t.Helper()
	applied := c.Effects - c.DuplicateEffects // intents with at least one effect
	if applied+c.LostEffects > c.Intents || (!versionCheck && applied+c.LostEffects != c.Intents) {
		t.Errorf("effects %d − duplicates %d + lost %d against %d intents: %+v", c.Effects, c.DuplicateEffects, c.LostEffects, c.Intents, *c)
	}
	if c.LostEffects < 0 || c.DuplicateEffects < 0 || c.OutOfOrderEffects > c.Effects || c.Redeliveries > c.Deliveries {
		t.Errorf("inconsistent counts: %+v", *c)
	}
	switch ack {
	case "transactional_dedup":
		if c.DuplicateEffects != 0 {
			t.Errorf("dedup: %d duplicates", c.DuplicateEffects)
		}
	case "before_effect":
		if c.Redeliveries != 0 || c.DeadLettered != 0 {
			t.Errorf("ack before effect: %d redeliveries, %d dead-lettered", c.Redeliveries, c.DeadLettered)
		}
	}
}

// FuzzAsync runs the async walkthrough under arbitrary settings: it must
// validate or refuse cleanly, never panic, drain, and keep the intent
// accounting's invariants. reps picks 1–3 replicas of the producer
// (reps mod 3) and of the consumer group ((reps / 3) mod 3): each producer
// replica with its outbox, the consumer's replicas as one group's members.
func FuzzAsync(f *testing.F) {
	f.Add(uint8(4), uint8(3), uint16(1000), uint8(0), uint8(0), uint8(0), false, uint8(0), false, uint8(0), false, uint16(0), uint8(0))
	f.Add(uint8(1), uint8(1), uint16(5), uint8(50), uint8(50), uint8(50), true, uint8(2), true, uint8(3), true, uint16(30), uint8(4))
	f.Add(uint8(16), uint8(5), uint16(20), uint8(100), uint8(100), uint8(100), true, uint8(1), false, uint8(50), false, uint16(10), uint8(8))
	f.Fuzz(func(t *testing.T, conc, maxDel uint8, deadlineMs uint16, pc, pm, pe uint8, outbox bool, ack uint8, ordered bool, keys uint8, check bool, slowMs uint16, reps uint8) {
		acks := []string{"after_effect", "before_effect", "transactional_dedup"}
		via := "dual_write"
		if outbox {
			via = "outbox"
		}
		a := acks[int(ack)%len(acks)]
		sets := []string{
			"workload.rate=300",
			fmt.Sprintf("services.1.consumes.concurrency=%d", conc),
			fmt.Sprintf("services.1.consumes.max_deliveries=%d", maxDel),
			fmt.Sprintf("services.1.consumes.ack_deadline=%dms", deadlineMs),
			fmt.Sprintf("services.1.consumes.ack=%s", a),
			fmt.Sprintf("services.1.consumes.ordered=%v", ordered),
			fmt.Sprintf("services.1.consumes.version_check=%v", check),
			fmt.Sprintf("services.0.calls.0.publish.via=%s", via),
			fmt.Sprintf("services.0.calls.0.publish.keys=%d", keys),
			fmt.Sprintf("faults.0.crash_between_commit_and_publish=%v", float64(pc)/100),
			fmt.Sprintf("faults.0.crash_between_publish_and_mark=%v", float64(pm)/100),
			fmt.Sprintf("faults.1.crash_between_effect_and_ack=%v", float64(pe)/100),
			fmt.Sprintf("faults.1.latency_add=%dms", slowMs),
			fmt.Sprintf("services.0.replicas=%d", 1+reps%3),
			fmt.Sprintf("services.1.replicas=%d", 1+reps/3%3),
		}
		_, err := topology.Parse("async.yaml", []byte(asyncScenario), sets)
		if err != nil {
			if conc == 0 || maxDel == 0 || deadlineMs == 0 || pc > 100 || pm > 100 || pe > 100 {
				return // refused, as it should be
			}
			t.Fatalf("valid settings refused: %v", err)
		}
		if conc == 0 || maxDel == 0 || deadlineMs == 0 || pc > 100 || pm > 100 || pe > 100 {
			t.Fatalf("invalid settings accepted: %v", sets)
		}
		sum, c := runAsync(t, asyncScenario, sets...)
		for i, s := range sum.Services {
			if want := 1 + int(reps)/[]int{1, 3}[i]%3; max(len(s.Replicas), 1) != want {
				t.Fatalf("%s runs %d replicas, want %d", s.Name, len(s.Replicas), want)
			}
		}
		if c.Intents == 0 {
			t.Fatalf("no intents: %+v", *c)
		}
		checkIntents(t, c, a, check)
	})
}
