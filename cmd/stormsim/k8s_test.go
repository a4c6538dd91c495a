package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stormsim/stormsim/internal/golden"
	"github.com/stretchr/testify/require"
)

// TestK8sRenderGolden pins the manifests 'stormsim k8s render' prints for
// each mode (go test -update rewrites them). Their validity against the
// Kubernetes API types is checked in package k8s.
func TestK8sRenderGolden(t *testing.T) {
	scenario := filepath.Join("testdata", "k8s", "chain.yaml")
	for _, c := range []struct {
		name string
		args []string
	}{
		{"sweep", []string{"--mode", "sweep", "--shards", "8", "--parallelism", "4", "--pvc-size", "10Gi",
			"--", "--param", "workload.rate", "--range", "100:2000:100", "--replicas", "5"}},
		{"capacity", []string{"--mode", "capacity", "--shards", "3", "--namespace", "perf", "--retries", "0",
			"--args", "--slo", "--args", "p99<250ms,success>=99.9%", "--args", "--range=100:1500"}},
		{"load", []string{"--mode", "load", "--shards", "4", "--start-at", "2026-12-01T11:00:00+01:00", "--cpu", "1500m", "--memory", "1Gi",
			"--", "--target", "http://api.shop.svc:8080/", "--allow-remote", "--duration", "10m"}},
	} {
		args := append([]string{"k8s", "render", "--scenario", scenario, "--image", "ghcr.io/example/stormsim:v1.0.0"}, c.args...)
		out, errOut, code := runCLI(t, args...)
		require.Equal(t, 0, code, "%s: %s", c.name, errOut)
		golden.Check(t, filepath.Join("testdata", "k8s", c.name+".yaml"), []byte(out))
		// Rendering is a pure function of its inputs.
		again, _, _ := runCLI(t, args...)
		require.Equal(t, out, again, c.name)
	}
}

func TestK8sRenderErrors(t *testing.T) {
	scenario := filepath.Join("testdata", "k8s", "chain.yaml")
	base := []string{"k8s", "render", "--scenario", scenario, "--image", "img:1"}
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no render", []string{"k8s", "--mode", "sweep"}, exitUsage, "want 'stormsim k8s render"},
		{"no scenario", []string{"k8s", "render", "--mode", "sweep", "--shards", "2", "--image", "i"}, exitUsage, "--scenario FILE is required"},
		{"no shards", append(base, "--mode", "sweep"), exitUsage, "--shards and --image are required"},
		{"stray args", append(base, "--mode", "sweep", "--shards", "2", "extra"), exitUsage, "put the command's own arguments after --"},
		{"bad mode", append(base, "--mode", "run", "--shards", "2"), exitError1, `mode "run"`},
		{"load needs start", append(base, "--mode", "load", "--shards", "2"), exitError1, "needs --start-at"},
		{"fixed flag", append(base, "--mode", "sweep", "--shards", "2", "--", "--shard", "0/2"), exitError1, "--shard is set by the manifest"},
		{"broken scenario", []string{"k8s", "render", "--scenario", filepath.Join("testdata", "broken.yaml"), "--image", "i", "--mode", "sweep", "--shards", "2"}, exitError1, "broken.yaml:5: workload.rate"},
		{"missing scenario", []string{"k8s", "render", "--scenario", "no/such.yaml", "--image", "i", "--mode", "sweep", "--shards", "2"}, exitError1, "no such file"},
		// What the pods would refuse is refused here, before N pods fail.
		{"sweep without --param", append(base, "--mode", "sweep", "--shards", "2", "--", "--range", "1:2:1"), exitUsage, "sweep needs --param"},
		{"sweep without values", append(base, "--mode", "sweep", "--shards", "2", "--", "--param", "workload.rate"), exitUsage, "one of --values and --range"},
		{"capacity without --slo", append(base, "--mode", "capacity", "--shards", "2"), exitUsage, "capacity needs --slo"},
		{"capacity with a bad slo", append(base, "--mode", "capacity", "--shards", "2", "--", "--slo", "p99<<1"), exitUsage, `term 1 "p99<<1"`},
		{"capacity slo on no service", append(base, "--mode", "capacity", "--shards", "2", "--", "--slo", "nope.utilization<0.5"), exitUsage, `no service "nope"`},
		{"typo in a pod flag", append(base, "--mode", "sweep", "--shards", "2", "--", "--parm", "workload.rate"), exitUsage, "unknown flag: --parm"},
	} {
		_, errOut, code := runCLI(t, c.args...)
		require.Equal(t, c.code, code, "%s: %s", c.name, errOut)
		require.Contains(t, errOut, c.want, c.name)
		require.False(t, strings.Contains(errOut, "panic"), c.name)
	}
}

// A scenario's empirical sample files travel with it: each is a key of
// the ConfigMap, mounted at its path relative to the scenario, so the pods
// read what validate read; a file outside the scenario's directory is an
// error at render time.
func TestK8sRenderShipsSampleFiles(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "samples"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "samples", "db.txt"), []byte("4.1\n5.3\n"), 0o644))
	scenario := `name: sampled
duration: 10s
workload: {entry: db, rate: 10, deadline: 1s}
services:
  - {name: db, workers: 2, service_time: {dist: empirical, file: samples/db.txt}}
`
	sc := filepath.Join(dir, "sampled.yaml")
	require.NoError(t, os.WriteFile(sc, []byte(scenario), 0o644))
	args := []string{"k8s", "render", "--scenario", sc, "--image", "img:1", "--mode", "sweep", "--shards", "2", "--", "--param", "workload.rate", "--values", "5,10"}
	out, errOut, code := runCLI(t, args...)
	require.Equal(t, 0, code, errOut)
	for _, want := range []string{`"file-0": |`, "4.1\n    5.3", `- key: "file-0"`, `path: "samples/db.txt"`, `path: "scenario.yaml"`} {
		require.Contains(t, out, want)
	}

	abs := strings.Replace(scenario, "samples/db.txt", filepath.Join(dir, "samples", "db.txt"), 1)
	require.NoError(t, os.WriteFile(sc, []byte(abs), 0o644))
	_, errOut, code = runCLI(t, args...)
	require.Equal(t, exitError1, code)
	require.Contains(t, errOut, "give a path inside the scenario's directory")
}
