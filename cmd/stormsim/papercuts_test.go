package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The small things a new user meets first (issue 36, item 13).
func TestPapercuts(t *testing.T) {
	// A bare stormsim prints the help and exits 2.
	out, _, code := runCLI(t)
	require.Equal(t, exitUsage, code)
	require.Contains(t, out, "Usage: stormsim COMMAND")

	// --version is version.
	out, errOut, code := runCLI(t, "--version")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "stormsim "+version+"\n", out)

	// A mistyped command or SLO metric gets a suggestion.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"comapre", "x.yaml"}, `unknown command "comapre" (did you mean compare?)`},
		{[]string{"valdiate"}, `unknown command "valdiate" (did you mean validate?)`},
		{[]string{"run", "five-layer-chain", "--slo", "sucess>=99%"}, `unknown metric "sucess" (did you mean success?)`},
		{[]string{"run", "five-layer-chain", "--slo", "db.utilisation<0.9"}, `unknown service metric "utilisation" (did you mean utilization?)`},
	} {
		_, errOut, code := runCLI(t, c.args...)
		require.NotEqual(t, 0, code, c.args)
		require.Contains(t, errOut, c.want, c.args)
	}

	// One fault is "1 fault".
	out, errOut, code = runCLI(t, "validate", "testdata/capacity/tiny.yaml")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "(tiny: 2 services, 1 fault)")

	// A run with writes shows its duplicates, zero included.
	out, errOut, code = runCLI(t, "run", "testdata/capacity/tiny.yaml", "--set", "workload.write_fraction=0.5", "--set", "workload.idempotency_keys=true")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "duplicates 0")
	out, _, _ = runCLI(t, "run", "testdata/capacity/tiny.yaml")
	require.False(t, strings.Contains(out, "duplicates"), "a run without writes does not mention duplicates")
}
