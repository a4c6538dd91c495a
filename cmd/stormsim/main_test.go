package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stormsim/stormsim/internal/golden"
	"github.com/stormsim/stormsim/metrics"
)

// runCLI runs the CLI in-process and returns stdout, stderr and the status.
func runCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	return out.String(), errb.String(), code
}

func TestHelpListsEveryCommand(t *testing.T) {
	out, _, code := runCLI(t, "help")
	require.Equal(t, 0, code)
	for name := range commands {
		require.Contains(t, out, "  "+name+" ")
	}
	for name := range commands {
		out, errOut, code := runCLI(t, "help", name)
		require.Equal(t, 0, code, errOut)
		require.Contains(t, out, "Usage: stormsim "+name)
	}
}

func TestUnknownCommandAndFlag(t *testing.T) {
	_, errOut, code := runCLI(t, "frobnicate")
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, `unknown command "frobnicate"`)

	_, errOut, code = runCLI(t, "run", "--no-such-flag", "x.yaml")
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, "no-such-flag")
	require.Equal(t, 1, strings.Count(errOut, "\n"), "one clear line: %q", errOut)
}

func TestRunFiveLayerChainIs243(t *testing.T) {
	out, errOut, code := runCLI(t, "run", "five-layer-chain", "--format", "json", "--duration", "10s")
	require.Equal(t, 0, code, errOut)
	var s metrics.Summary
	require.NoError(t, json.Unmarshal([]byte(out), &s))
	require.Positive(t, s.Requests.Offered)
	want := map[string]float64{"s1": 3, "s2": 9, "s3": 27, "s4": 81, "s5": 243}
	for _, svc := range s.Services {
		require.Equal(t, want[svc.Name], svc.Amplification, svc.Name)
	}
	require.Equal(t, 243.0, s.Amplification)
	require.Equal(t, s.Requests.Offered, s.Requests.Failed)
}

func TestRunJSONIsDeterministic(t *testing.T) {
	a, _, code := runCLI(t, "run", "retry-storm", "--format", "json", "--duration", "30s", "--seed", "3")
	require.Equal(t, 0, code)
	b, _, _ := runCLI(t, "run", "retry-storm", "--format", "json", "--duration", "30s", "--seed", "3")
	require.Equal(t, a, b)
	c, _, _ := runCLI(t, "run", "retry-storm", "--format", "json", "--duration", "30s", "--seed", "4")
	require.NotEqual(t, a, c)
}

func TestRunWritesOutputDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	_, errOut, code := runCLI(t, "run", "retry-storm", "--duration", "30s", "--out", dir)
	require.Equal(t, 0, code, errOut)
	for _, f := range []string{"summary.json", "timeseries.csv", "report.html"} {
		st, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err)
		require.Positive(t, st.Size(), f)
	}
	// plot redraws from the saved result alone.
	out, errOut, code := runCLI(t, "plot", dir, "--out", filepath.Join(t.TempDir(), "redraw"))
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, ".png")
}

func TestBadInputIsOneClearError(t *testing.T) {
	cases := []struct {
		name string
		args []string
		code int
	}{
		{"missing-file", []string{"run", "no/such/file.yaml"}, exitError1},
		{"no-args", []string{"run"}, exitUsage},
		{"bad-format", []string{"run", "five-layer-chain", "--format", "xml"}, exitUsage},
		{"bad-set", []string{"run", "five-layer-chain", "--set", "services.s9.workers=4"}, exitError1},
		{"bad-set-value", []string{"run", "five-layer-chain", "--set", "services.s1.workers=-4"}, exitError1},
		{"bad-duration", []string{"run", "five-layer-chain", "--duration", "5 s"}, exitError1},
	}
	var all strings.Builder
	for _, c := range cases {
		_, errOut, code := runCLI(t, c.args...)
		require.Equal(t, c.code, code, "%s: %s", c.name, errOut)
		require.NotContains(t, errOut, "panic", c.name)
		all.WriteString("$ stormsim " + strings.Join(c.args, " ") + "\n" + errOut + "\n")
	}
	golden.Check(t, "testdata/bad-input.txt", []byte(all.String()))
}

func TestValidateReportsEveryProblem(t *testing.T) {
	out, _, code := runCLI(t, "validate", filepath.Join("testdata", "broken.yaml"))
	require.Equal(t, exitError1, code)
	golden.Check(t, "testdata/validate-broken.txt", []byte(out))
	require.GreaterOrEqual(t, strings.Count(out, "broken.yaml:"), 3, out)
}

func TestExperimentsListsCanned(t *testing.T) {
	out, _, code := runCLI(t, "experiments")
	require.Equal(t, 0, code)
	require.Contains(t, out, "five-layer-chain")
	require.Contains(t, out, "retry-storm")
}
