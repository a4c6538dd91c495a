package main

import (
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
	} {
		_, errOut, code := runCLI(t, c.args...)
		require.Equal(t, c.code, code, "%s: %s", c.name, errOut)
		require.Contains(t, errOut, c.want, c.name)
		require.False(t, strings.Contains(errOut, "panic"), c.name)
	}
}
