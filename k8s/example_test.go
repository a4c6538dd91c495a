package k8s_test

import (
	"fmt"

	"github.com/stormsim/stormsim/k8s"
)

func ExampleDocuments() {
	docs, err := k8s.Documents(k8s.Options{
		Mode:         "sweep",
		ScenarioName: "retry-storm",
		Scenario:     []byte("name: retry-storm\n"),
		Shards:       8,
		Image:        "ghcr.io/example/stormsim:v1",
		PVCSize:      "10Gi",
	})
	if err != nil {
		panic(err)
	}
	for _, d := range docs {
		fmt.Println(d.File)
	}
	// Output:
	// scenario-configmap.yaml
	// pvc.yaml
	// job.yaml
	// merge-job.yaml
}

func ExampleDefaultName() {
	fmt.Println(k8s.DefaultName("load", "Five Layer Chain"))
	// Output: stormsim-load-five-layer-chain
}
