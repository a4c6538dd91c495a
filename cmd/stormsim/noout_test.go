package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNoCommandWritesWithoutOut runs every command that can write files,
// without --out, from an empty working directory, and checks that it
// stays empty: files are written only where the user asked (issue 36,
// item 2). `plot DIR` writes into the directory it reads, which is
// outside the working directory here; `merge` refuses to run without
// --out; `k8s render` prints its manifests.
func TestNoCommandWritesWithoutOut(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every writing command (slow; skipped under -short, make test runs it)")
	}
	tiny, err := filepath.Abs("testdata/capacity/tiny.yaml")
	require.NoError(t, err)
	gw, err := filepath.Abs("testdata/tune/gateway.txt")
	require.NoError(t, err)
	shop, err := filepath.Abs("../../traces/testdata/shop.otlp.json")
	require.NoError(t, err)
	queue := writeCollapseQueue(t)
	saved := t.TempDir()
	_, errOut, code := runCLI(t, "run", tiny, "--out", saved)
	require.Equal(t, 0, code, errOut)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()

	cwd := t.TempDir()
	t.Chdir(cwd)
	cases := [][]string{
		{"run", tiny},
		{"compare", tiny, "--no-declared", "--variant", "one:services.api.calls.db.retry.max_attempts=1"},
		{"sweep", tiny, "--param", "workload.rate", "--values", "100,200"},
		{"metastable", tiny, "--values", "100,200", "--recovery-bound", "4s"},
		{"capacity", tiny, "--slo", "p99<100ms", "--range", "100:300", "--replicas", "1", "--recovery-bound", "8s"},
		{"collapse", queue, "--level", "system(s)>=5", "--within", "10s"},
		{"tune", "--deadline", "1s", "--hops", "gateway=" + gw},
		{"import", "traces", shop},
		{"load", "--target", srv.URL, "--rate", "50", "--duration", "200ms"},
		{"plot", saved},
		{"k8s", "render", "--mode", "sweep", "--scenario", tiny, "--shards", "2", "--image", "stormsim:test",
			"--", "--param", "workload.rate", "--values", "100,200"},
		{"merge", saved},
		{"validate", tiny},
		{"experiments"},
		{"version"},
	}
	for _, args := range cases {
		_, errOut, code := runCLI(t, args...)
		if code != 0 && code != exitError1 && !(args[0] == "merge" && code == exitUsage) {
			t.Errorf("%v: exit %d: %s", args, code, errOut)
		}
		entries, err := os.ReadDir(cwd)
		require.NoError(t, err)
		for _, e := range entries {
			t.Errorf("%v wrote %s into the working directory without --out", args, e.Name())
			require.NoError(t, os.RemoveAll(filepath.Join(cwd, e.Name())))
		}
	}
	// A shard's units are only of use in a file: without --out, a usage error.
	_, errOut, code = runCLI(t, "sweep", tiny, "--param", "workload.rate", "--values", "100,200", "--shard", "0/2")
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, "--shard 0/2 needs --out DIR")
}
