package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stormsim/stormsim/broker"
	"github.com/stormsim/stormsim/metrics"
)

// topicScenario is an order -> inventory hop whose dual-write producer
// crashes after every commit: every intent's effect is lost.
const topicScenario = `name: hop
seed: 1
duration: 500ms
workload:
  entry: order
  arrival: constant
  rate: 20
services:
  - name: order
    workers: 4
    service_time: {dist: constant, value: 1ms}
    calls:
      - publish: {topic: orders}
  - name: inventory
    workers: 1
    service_time: {dist: constant, value: 1ms}
    consumes: {topic: orders, ack_deadline: 1s}
faults:
  - {service: order, at: 0s, for: 1m, crash_between_commit_and_publish: 1}
`

// load SCENARIO runs the topics through a JetStream (embedded, or the one
// --nats names) and reports the consumer as run does; a bad --nats is a
// usage error naming the flag.
func TestLoadScenarioTopics(t *testing.T) {
	sc := filepath.Join(t.TempDir(), "hop.yaml")
	require.NoError(t, os.WriteFile(sc, []byte(topicScenario), 0o644))
	srv, err := broker.Embedded()
	require.NoError(t, err)
	defer srv.Close()
	for _, extra := range [][]string{nil, {"--nats", srv.URL()}} {
		out, errOut, code := runCLI(t, append([]string{"load", sc, "--format", "json"}, extra...)...)
		require.Equal(t, 0, code, errOut)
		var s metrics.Summary
		require.NoError(t, json.Unmarshal([]byte(out), &s))
		c := s.Services[1].Consumer
		require.NotNil(t, c, "%v: no consumer summary", extra)
		require.EqualValues(t, 10, c.Intents, "%v: 20/s for 500 ms", extra)
		require.Equal(t, c.Intents, c.LostEffects, "%v: every commit crashed before its publish", extra)
	}
	for _, bad := range []string{"http://127.0.0.1:4222", "nats://10.1.2.3:4222", "nats://"} {
		_, errOut, code := runCLI(t, "load", sc, "--nats", bad)
		require.Equal(t, exitUsage, code, "%s: %s", bad, errOut)
		require.True(t, strings.Contains(errOut, "--nats"), "the error names the flag: %s", errOut)
	}
	_, errOut, code := runCLI(t, "load", "--target", "http://127.0.0.1:1/", "--nats", srv.URL())
	require.Equal(t, exitUsage, code, errOut)
	require.Contains(t, errOut, "--nats")
}
