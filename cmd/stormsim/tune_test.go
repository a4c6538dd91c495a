package main

import (
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stormsim/stormsim/internal/golden"
	"github.com/stretchr/testify/require"
)

// tuneChain is the three-hop chain of the checked-in samples: plain
// numbers, a CSV column and vegeta results.
var tuneChain = "gateway=testdata/tune/gateway.txt,orders=testdata/tune/orders.csv:latency_ms,db=vegeta:testdata/tune/db.json"

func TestTuneText(t *testing.T) {
	out, errOut, code := runCLI(t, "tune", "--deadline", "1s", "--hops", tuneChain)
	require.Equal(t, 0, code, errOut)
	golden.Check(t, "testdata/tune/chain.golden", []byte(out))
}

func TestTuneMixedPopulation(t *testing.T) {
	out, errOut, code := runCLI(t, "tune", "--deadline", "2s", "--hops", "api=testdata/tune/mixed.txt", "--percentile", "99")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, `warning: hop "api": samples look like a mix of populations`)
	golden.Check(t, "testdata/tune/mixed.golden", []byte(out))
}

func TestTuneJSON(t *testing.T) {
	out, errOut, code := runCLI(t, "tune", "--deadline", "1s", "--hops", tuneChain, "--format", "json", "--hedge-percentile", "90")
	require.Equal(t, 0, code, errOut)
	var doc struct {
		Plan struct {
			RetryOwner      string  `json:"retry_owner"`
			HedgePercentile float64 `json:"hedge_percentile"`
			Hops            []struct {
				Name           string  `json:"name"`
				TimeoutMs      float64 `json:"timeout_ms"`
				SpuriousRate   float64 `json:"spurious_timeout_rate"`
				HedgeExtraLoad float64 `json:"hedge_extra_load"`
				Note           string  `json:"note"`
			} `json:"hops"`
			Set []string `json:"set"`
		} `json:"plan"`
		Verify *json.RawMessage `json:"verify"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	require.Equal(t, "db", doc.Plan.RetryOwner)
	require.Equal(t, 0.9, doc.Plan.HedgePercentile)
	require.Len(t, doc.Plan.Hops, 3)
	require.Nil(t, doc.Verify)
	db := doc.Plan.Hops[2]
	require.Contains(t, db.Note, "40 of 3000 vegeta results excluded")
	// At the nearest-rank p90 of 2960 samples, 296 lie above: 10%.
	require.InDelta(t, 0.1, db.HedgeExtraLoad, 1.0/2960)
	require.Contains(t, doc.Plan.Set, "services.orders.calls.db.retry.max_attempts=3")
}

func TestTuneErrors(t *testing.T) {
	cases := []struct {
		name string
		args []string
		code int
	}{
		{"bad-number", []string{"--deadline", "1s", "--hops", "db=testdata/tune/bad.txt"}, exitError1},
		{"missing-column", []string{"--deadline", "1s", "--hops", "orders=testdata/tune/orders.csv:latency"}, exitError1},
		{"deadline-too-short", []string{"--deadline", "100ms", "--hops", tuneChain}, exitError1},
		{"no-deadline", []string{"--hops", tuneChain}, exitUsage},
		{"bad-percentile", []string{"--deadline", "1s", "--hops", tuneChain, "--percentile", "p100"}, exitUsage},
		{"bad-hop", []string{"--deadline", "1s", "--hops", "gateway"}, exitError1},
		{"chain-mismatch", []string{"--deadline", "1s", "--hops", "orders=testdata/tune/orders.csv:latency_ms", "--verify", "testdata/tune/chain.yaml"}, exitError1},
	}
	var all strings.Builder
	for _, c := range cases {
		out, errOut, code := runCLI(t, append([]string{"tune"}, c.args...)...)
		require.Equal(t, c.code, code, "%s: %s", c.name, errOut)
		require.Empty(t, out, c.name)
		all.WriteString(c.name + ": " + errOut)
	}
	golden.Check(t, "testdata/tune/errors.golden", []byte(all.String()))
}

// TestTuneVerifyAndOut simulates the chain scenario as written and tuned,
// and checks the files --out writes.
func TestTuneVerifyAndOut(t *testing.T) {
	dir := t.TempDir()
	out, errOut, code := runCLI(t, "tune", "--deadline", "1s", "--hops", tuneChain,
		"--verify", "testdata/tune/chain.yaml", "--set", "duration=10s", "--out", dir)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "verify: tune-chain, baseline vs tuned")
	require.Regexp(t, `goodput \(rps\)\s+\d+\.\d\s+\d+\.\d`, out)
	for _, f := range []string{"plan.txt", "plan.json", "verify.txt", "cdf-gateway.png", "cdf-orders.png", "cdf-db.png"} {
		_, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err, f)
	}
	f, err := os.Open(filepath.Join(dir, "cdf-db.png"))
	require.NoError(t, err)
	defer f.Close()
	_, err = png.Decode(f)
	require.NoError(t, err)
}
