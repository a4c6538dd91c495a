package merge_test

import (
	"fmt"
	"os"

	"github.com/stormsim/stormsim/merge"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/metrics/metricstest"
	"github.com/stormsim/stormsim/shard"
)

// Two shards of a run are saved; once both are complete and of one run,
// they merge into the whole run's result.
func ExampleResults() {
	parent, err := os.MkdirTemp("", "shards")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(parent)
	parts := metricstest.StormParts(2)
	dirs := []string{shard.Dir(parent, 0), shard.Dir(parent, 1)}
	for i, p := range parts {
		p.RunID = "storm"
		if err := metrics.Save(dirs[i], p); err != nil {
			panic(err)
		}
	}
	why, err := merge.NotReady(dirs, 2, "")
	fmt.Printf("ready: %v %v\n", why == "", err)
	r, err := merge.Results(dirs)
	if err != nil {
		panic(err)
	}
	fmt.Println(r.Summary.Requests.Offered == parts[0].Summary.Requests.Offered+parts[1].Summary.Requests.Offered)
	// Output:
	// ready: true <nil>
	// true
}
