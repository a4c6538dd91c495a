package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stormsim/stormsim/metrics"
)

// constantScenario is a one-service scenario with constant arrivals, so
// the requests a load run offers are exactly rate × duration.
const constantScenario = `name: steady
seed: 1
duration: 2s
workload:
  entry: api
  arrival: constant
  rate: 40
  deadline: 1s
services:
  - {name: api, workers: 8, service_time: {dist: constant, value: 1ms}}
`

// TestLoadScenarioHonoursFlags: in SCENARIO mode the load flags are not
// silently ignored. --rate, --duration and the other workload flags map
// onto the scenario, --max-requests and --shard bound and split its
// schedule as in target mode, and flags that only a target can use are a
// usage error.
func TestLoadScenarioHonoursFlags(t *testing.T) {
	sc := filepath.Join(t.TempDir(), "steady.yaml")
	require.NoError(t, os.WriteFile(sc, []byte(constantScenario), 0o644))
	offered := func(args ...string) int64 {
		t.Helper()
		out, errOut, code := runCLI(t, append([]string{"load", sc, "--format", "json"}, args...)...)
		require.Equal(t, 0, code, errOut)
		var s metrics.Summary
		require.NoError(t, json.Unmarshal([]byte(out), &s))
		require.Equal(t, "steady", s.Scenario)
		return s.Requests.Offered
	}
	// 100 req/s for 0.3 s instead of the scenario's 40 req/s for 2 s.
	require.EqualValues(t, 30, offered("--rate", "100", "--duration", "300ms"))
	require.EqualValues(t, 7, offered("--rate", "100", "--duration", "300ms", "--max-requests", "7"))
	// Two shards send every other request of the one schedule.
	require.EqualValues(t, 15, offered("--rate", "100", "--duration", "300ms", "--shard", "1/2"))

	for _, flag := range [][]string{{"--method", "POST"}, {"--header", "X-A: b"}, {"--body", "{}"}, {"--max-lateness", "1s"}} {
		_, errOut, code := runCLI(t, append([]string{"load", sc}, flag...)...)
		require.Equal(t, exitUsage, code, "%v: %s", flag, errOut)
		require.Contains(t, errOut, flag[0], "the error names the flag")
	}
}

// validate prints the scenario's warnings and hints after its ok line,
// each naming the keys to change; they do not fail it.
func TestValidateWarns(t *testing.T) {
	out, errOut, code := runCLI(t, "validate", "order-timeout")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "order-timeout: warning: services.gateway.calls.orders.propagate_deadline: does nothing unless workload.client.propagate_deadline is true")
	require.Contains(t, out, "order-timeout: hint: every queue is unbounded")
}
