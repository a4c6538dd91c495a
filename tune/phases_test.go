package tune

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stormsim/stormsim/metrics"
)

func TestRecommendPhases(t *testing.T) {
	edge := metrics.EdgeSummary{From: "client", To: "api", Phases: &metrics.PhaseReport{Phases: map[string]metrics.PhaseStat{
		"pool_wait":       {Count: 100, P99Ms: 40},
		"connect":         {Count: 10, P99Ms: 0.2},
		"tls":             {Count: 10, P99Ms: 30},
		"first_byte":      {Count: 100, P99Ms: 12.5},
		metrics.PhaseCold: {Count: 10, P50Ms: 35, P99Ms: 60},
		metrics.PhaseWarm: {Count: 90, P50Ms: 5, P99Ms: 13},
	}}}
	plans, err := RecommendPhases([]metrics.EdgeSummary{{From: "x", To: "y"}, edge}, 0)
	require.NoError(t, err)
	require.Len(t, plans, 1, "edges without phases are skipped")
	p := plans[0]
	require.Equal(t, PhasePlan{From: "client", To: "api", Margin: 2,
		Pool: 80 * time.Millisecond, Connect: time.Millisecond /* at least 1ms */, TLS: 60 * time.Millisecond,
		FirstByte: 25 * time.Millisecond, Timeout: 120 * time.Millisecond,
		Cold: edge.Phases.Phases[metrics.PhaseCold], Warm: edge.Phases.Phases[metrics.PhaseWarm], Bimodal: true,
		Warnings: p.Warnings}, p)
	require.Len(t, p.Warnings, 1)
	require.Contains(t, p.Warnings[0], "the p99 of pool_wait (100 samples), connect (10 samples), tls (10 samples), first_byte (100 samples), attempt_cold (10 samples), attempt_warm (90 samples): fewer than the 299")
	var b bytes.Buffer
	require.NoError(t, WritePhasePlans(&b, plans))
	require.Contains(t, b.String(), "first_byte_timeout: 25ms")
	require.Contains(t, b.String(), "more than twice as slow")

	_, err = RecommendPhases([]metrics.EdgeSummary{{From: "x", To: "y"}}, 2)
	require.ErrorContains(t, err, "no edge measured its phases")
}
