package merge

import (
	"fmt"

	"github.com/stormsim/stormsim/metrics"
)

// Results loads the result directories of a run's shards (run or load,
// each a metrics.Save) and merges them with metrics.Merge. The shards of
// one run share its seed: directories of different seeds are refused.
func Results(dirs []string) (*metrics.Result, error) {
	parts := make([]*metrics.Result, len(dirs))
	for i, d := range dirs {
		r, err := metrics.Load(d)
		if err != nil {
			return nil, err
		}
		if i > 0 && r.Summary.Seed != parts[0].Summary.Seed {
			return nil, fmt.Errorf("%s has seed %d, %s seed %d: shards of one run share its seed", d, r.Summary.Seed, dirs[0], parts[0].Summary.Seed)
		}
		parts[i] = r
	}
	return metrics.Merge(parts...)
}
