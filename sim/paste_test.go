package sim

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stormsim/stormsim/topology"
)

// TestPastedGRPCThrottling is issue 15's done-when check in the simulator:
// a pasted gRPC service config with retryThrottling (10 tokens, ratio 0.1)
// against an always-UNAVAILABLE backend gives the first request 4 attempts
// (tokens 10 → 6) and every later one 1 (the first failure leaves ≤ 5
// tokens, at or below half, so A6 throttles the retry).
func TestPastedGRPCThrottling(t *testing.T) {
	sc, err := topology.Load("testdata/paste/down.yaml", nil)
	require.NoError(t, err)
	e := edgeOf(runScenario(t, sc).Summary, "client", "cart")
	require.EqualValues(t, 10, e.Calls)
	require.EqualValues(t, 3, e.Retries, "the first request's three retries")
	require.EqualValues(t, 9, e.RetriesDenied, "one denied retry for each later request")
	require.EqualValues(t, 4+9, e.Attempts)
}
