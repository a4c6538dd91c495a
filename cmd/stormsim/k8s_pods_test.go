package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/stormsim/stormsim/k8s"
	"github.com/stormsim/stormsim/shard"
)

// podArgs returns the container args of each Job in a rendered stream, by
// Job name.
func podArgs(t *testing.T, stream []byte) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	dec := yaml.NewDecoder(bytes.NewReader(stream))
	for {
		var doc struct {
			Kind     string
			Metadata struct{ Name string }
			Spec     struct {
				Template struct {
					Spec struct {
						Containers []struct{ Args []string }
					}
				}
			}
		}
		if err := dec.Decode(&doc); err != nil {
			break
		}
		if doc.Kind == "Job" {
			require.Len(t, doc.Spec.Template.Spec.Containers, 1)
			out[doc.Metadata.Name] = doc.Spec.Template.Spec.Containers[0].Args
		}
	}
	return out
}

// TestRenderedJobsRunHere plays the cluster: it renders a 3-shard sweep,
// starts the merge Job's arguments, runs each pod's arguments here (with
// $(JOB_COMPLETION_INDEX) expanded as the kubelet does, and the pod's paths
// mapped to temporary directories) while the merge waits, and requires the
// merged sweep.csv to be the unsharded sweep's, byte for byte. The merge
// starts first, as the two Jobs do: an unlabelled merge --wait refuses
// shards already complete at its first look, since they may be a previous
// apply's (TestAttackMergeWaitUnlabelledTakesThePreviousRunsShards).
// Each pod's --shard-from-env reads the environment the Job gives it.
func TestRenderedJobsRunHere(t *testing.T) {
	const n = 3
	scenarioFile := filepath.Join("testdata", "k8s", "chain.yaml")
	data, err := os.ReadFile(scenarioFile)
	require.NoError(t, err)
	sweepArgs := []string{"--param", "workload.rate", "--values", "100,200,400", "--replicas", "2", "--duration", "3s"}
	var b bytes.Buffer
	require.NoError(t, k8s.Render(&b, k8s.Options{
		Mode: "sweep", ScenarioName: "chain", Scenario: data, Shards: n, Image: "stormsim:test", Args: sweepArgs,
	}))
	jobs := podArgs(t, b.Bytes())
	name := k8s.DefaultName("sweep", "chain")
	work, merge := jobs[name], jobs[name+"-merge"]
	require.NotEmpty(t, work)
	require.NotEmpty(t, merge)

	defer func(p time.Duration) { mergePoll = p }(mergePoll)
	mergePoll = 50 * time.Millisecond
	results := t.TempDir()
	local := func(a string) string {
		a = strings.ReplaceAll(a, k8s.ScenarioDir+"/"+k8s.ScenarioKey, scenarioFile)
		return strings.ReplaceAll(a, k8s.ResultsDir, results)
	}
	var margs []string
	for _, a := range merge {
		margs = append(margs, local(a))
	}
	merged := make(chan string, 1)
	go func() {
		_, errOut, code := runCLI(t, margs...)
		merged <- fmt.Sprintf("status %d: %s", code, errOut)
	}()
	time.Sleep(3 * mergePoll) // the merge has looked and found nothing
	for i := range n {
		var args []string
		for _, a := range work {
			args = append(args, strings.ReplaceAll(local(a), "$("+shard.IndexEnv+")", fmt.Sprint(i)))
		}
		require.Contains(t, args, "--shard-from-env")
		t.Setenv(shard.IndexEnv, fmt.Sprint(i))
		t.Setenv(shard.CountEnv, fmt.Sprint(n))
		_, errOut, code := runCLI(t, args...)
		require.Equal(t, 0, code, "pod %d: stormsim %s: %s", i, strings.Join(args, " "), errOut)
	}
	select {
	case got := <-merged:
		require.Equal(t, "status 0: ", got, "merge")
	case <-time.After(30 * time.Second):
		t.Fatal("the merge did not notice the shards")
	}

	whole := filepath.Join(t.TempDir(), "whole")
	_, errOut, code := runCLI(t, append([]string{"sweep", scenarioFile, "--out", whole}, sweepArgs...)...)
	require.Equal(t, 0, code, errOut)
	want, err := os.ReadFile(filepath.Join(whole, "sweep.csv"))
	require.NoError(t, err)
	got, err := os.ReadFile(filepath.Join(results, name, "merged", "sweep.csv"))
	require.NoError(t, err)
	require.Equal(t, string(want), string(got))
}
