package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stormsim/stormsim/topology"
)

// firstYAMLBlock returns the first ```yaml block of a markdown file.
func firstYAMLBlock(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(b), "```yaml\n")
	require.True(t, ok, "%s: no ```yaml block", path)
	block, _, ok := strings.Cut(rest, "```\n")
	require.True(t, ok, "%s: the ```yaml block is not closed", path)
	return block
}

// The example at the top of docs/scenario.md is the scenario `init`
// writes, and it validates (no warning) and runs.
func TestDocsScenarioExample(t *testing.T) {
	block := firstYAMLBlock(t, "../../docs/scenario.md")
	require.Equal(t, starterScenario, block, "docs/scenario.md's example differs from cmd/stormsim/starter.yaml")
	path := filepath.Join(t.TempDir(), "example.yaml")
	require.NoError(t, os.WriteFile(path, []byte(block), 0o644))
	sc, err := topology.Load(path, nil)
	require.NoError(t, err)
	require.Len(t, sc.Services, 3)
	out, errOut, code := runCLI(t, "validate", path)
	require.Equal(t, 0, code, errOut)
	require.NotContains(t, out+errOut, "warning", "the example should say nothing it does not do")
}

func TestInitWritesAStarterThatRuns(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	out, errOut, code := runCLI(t, "init")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "wrote "+defaultInitFile)
	b, err := os.ReadFile(defaultInitFile)
	require.NoError(t, err)
	require.Equal(t, starterScenario, string(b))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file left behind")

	// It refuses to overwrite, and leaves the file as it was.
	require.NoError(t, os.WriteFile("mine.yaml", []byte("name: mine\n"), 0o644))
	_, errOut, code = runCLI(t, "init", "mine.yaml")
	require.Equal(t, exitError1, code)
	require.Contains(t, errOut, "mine.yaml already exists: not overwritten")
	b, err = os.ReadFile("mine.yaml")
	require.NoError(t, err)
	require.Equal(t, "name: mine\n", string(b))

	// What it wrote validates, runs, and compares its variants.
	_, errOut, code = runCLI(t, "validate", defaultInitFile)
	require.Equal(t, 0, code, errOut)
	out, errOut, code = runCLI(t, "run", defaultInitFile, "--format", "json")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, `"scenario": "starter"`)
	out, errOut, code = runCLI(t, "compare", defaultInitFile)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "no-retries")

	// - prints it; a second argument is a usage error.
	out, _, code = runCLI(t, "init", "-")
	require.Equal(t, 0, code)
	require.Equal(t, starterScenario, out)
	_, _, code = runCLI(t, "init", "a.yaml", "b.yaml")
	require.Equal(t, exitUsage, code)
}
