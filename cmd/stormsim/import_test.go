package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestImportTraces imports the hand-made shop traces through the CLI: to
// a file (summary on stdout) and to stdout; bad input exits non-zero with
// the file and line.
func TestImportTraces(t *testing.T) {
	shop := "../../traces/testdata/shop.otlp.json"
	out := filepath.Join(t.TempDir(), "shop.yaml")
	stdout, errOut, code := runCLI(t, "import", "traces", shop, "--out", out)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, stdout, "wrote "+out)
	require.Contains(t, stdout, "frontend: parallel group [inventory, pricing]")
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	require.Contains(t, string(data), "entry: frontend")
	// The scenario written loads and validates.
	_, errOut, code = runCLI(t, "validate", out)
	require.Equal(t, 0, code, errOut)

	stdout, errOut, code = runCLI(t, "import", "traces", shop)
	require.Equal(t, 0, code, errOut)
	require.True(t, strings.HasPrefix(stdout, "# Imported by"), stdout)
	// The summary goes to the process's stderr, so stdout is the scenario alone.
	require.NotContains(t, stdout, "\nnot inferred:\n")

	bad := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte("{\"resourceSpans\": [\n  {]\n"), 0o644))
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"import", "traces"}, exitUsage, "want at least one trace file"},
		{[]string{"import", "logs", shop}, exitUsage, "want: import traces"},
		{[]string{"import", "traces", "no-such.json"}, 1, "no-such.json"},
		{[]string{"import", "traces", bad}, 1, bad + ":2:"},
	} {
		_, errOut, code := runCLI(t, tc.args...)
		require.Equal(t, tc.code, code, "%v: %s", tc.args, errOut)
		require.Contains(t, errOut, tc.want, "%v", tc.args)
	}
}
