package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stormsim/stormsim/metrics"
)

// TestBrokerCommand walks outbox-order's topic through the embedded
// JetStream with a crash after every effect: each of the 10 events is
// delivered max_deliveries (5) times, applied each time, dead-lettered.
func TestBrokerCommand(t *testing.T) {
	out, errOut, code := runCLI(t, "broker", "outbox-order", "--intents", "10", "--set", "faults.1.crash_between_effect_and_ack=1",
		"--set", "faults.0.crash_between_commit_and_publish=0", "--set", "services.1.consumes.ack_deadline=100ms")
	require.Equal(t, 0, code, errOut)
	var c metrics.ConsumerSummary
	require.NoError(t, json.Unmarshal([]byte(out), &c))
	require.Equal(t, metrics.ConsumerSummary{Topic: "order-created", Intents: 10, Published: 10, Deliveries: 50, Redeliveries: 40,
		DeadLettered: 10, Effects: 50, DuplicateEffects: 40, OutOfOrderEffects: c.OutOfOrderEffects}, c)
}

func TestBrokerCommandUsage(t *testing.T) {
	for _, args := range [][]string{
		{"broker"},
		{"broker", "outbox-order", "--intents", "0"},
		{"broker", "retry-storm"}, // no topic
	} {
		_, errOut, code := runCLI(t, args...)
		require.Equal(t, exitUsage, code, "%v: %s", args, errOut)
	}
}
