package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stormsim/stormsim/metrics"
)

// TestRunSLO: --slo judges a run like k6's thresholds: a breached term is
// named in the output, the command exits with exitSLO (distinct from bad
// input and from a diverged run), and JSON carries every term's value and
// verdict. A met SLO exits 0; a bad expression is a usage error.
func TestRunSLO(t *testing.T) {
	sc := filepath.Join(t.TempDir(), "tiny.yaml")
	require.NoError(t, os.WriteFile(sc, []byte(tinyScenario), 0o644))

	out, errOut, code := runCLI(t, "run", sc, "--slo", "p99<1ms,success>=20%", "--format", "json")
	require.Equal(t, exitSLO, code, errOut)
	require.Contains(t, errOut, "SLO breached: p99")
	var s metrics.Summary
	require.NoError(t, json.Unmarshal([]byte(out), &s))
	require.NotNil(t, s.SLO)
	require.False(t, s.SLO.Met)
	require.Len(t, s.SLO.Terms, 2)
	p99, success := s.SLO.Terms[0], s.SLO.Terms[1]
	require.Equal(t, "p99<1ms", p99.Term)
	require.False(t, p99.Met)
	require.NotNil(t, p99.Value)
	// JSON rounds every float to 6 significant digits, the summary's too.
	require.InEpsilon(t, s.LatencyMs.P99, *p99.Value, 1e-5)
	require.True(t, success.Met)
	require.InEpsilon(t, float64(s.Requests.Succeeded)/float64(s.Requests.Offered), *success.Value, 1e-5)

	text, _, code := runCLI(t, "run", sc, "--slo", "p99<1ms")
	require.Equal(t, exitSLO, code)
	require.Contains(t, text, "slo        BREACHED: p99 of succeeded requests =")

	_, errOut, code = runCLI(t, "run", sc, "--slo", "success>=1%", "--format", "json")
	require.Equal(t, 0, code, errOut)

	_, _, code = runCLI(t, "run", sc, "--slo", "p99<<3")
	require.Equal(t, exitUsage, code)
	_, errOut, code = runCLI(t, "run", sc, "--slo", "nope.utilization<0.5")
	require.Equal(t, exitError1, code)
	require.Contains(t, errOut, `no service "nope"`)
}

// compare applies --slo to every variant and names those that breach it.
func TestCompareSLO(t *testing.T) {
	sc := filepath.Join(t.TempDir(), "tiny.yaml")
	require.NoError(t, os.WriteFile(sc, []byte(tinyScenario), 0o644))
	out, _, code := runCLI(t, "compare", sc, "--no-declared", "--variant", "slow:services.db.workers=1", "--slo", "success>=20%")
	require.Equal(t, exitSLO, code, out)
	require.Contains(t, out, "slo success>=20%: baseline met")
	require.Contains(t, out, "slow BREACHED (success =")
}

// TestSLOPopulation (issue 36 item 10): --slo 'p99<…' judges the survivors
// and says so; p99(all) counts the failed requests too, at their time to
// failure, and can breach where p99 is met.
func TestSLOPopulation(t *testing.T) {
	sc := "testdata/capacity/tiny.yaml"
	text, errOut, code := runCLI(t, "run", sc, "--slo", "p99<120ms")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, text, "met: p99 of succeeded requests = ")
	text, _, code = runCLI(t, "run", sc, "--slo", "p99(ok)<120ms,p99(all)<120ms")
	require.Equal(t, exitSLO, code, text)
	require.Contains(t, text, "BREACHED: p99 of all requests = ")
	require.Contains(t, text, "met: p99 of succeeded requests = ")
	out, _, code := runCLI(t, "compare", sc, "--slo", "p99(all)<120ms")
	require.Equal(t, exitSLO, code)
	require.Contains(t, out, "BREACHED (p99 of all requests = ")
}
