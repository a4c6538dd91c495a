package merge

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/stormsim/stormsim/analysis"
	"github.com/stormsim/stormsim/metrics"
)

// CompareShard is the content of CompareShardFile: the comparison a shard
// belongs to (scenario, seed, every variant of the whole comparison), the
// shard it was, and the variants it ran, each saved in the subdirectory
// metrics.PathComponent(name).
type CompareShard struct {
	Scenario string             `json:"scenario"`
	Seed     uint64             `json:"seed"`
	Shard    string             `json:"shard"`
	Variants []analysis.Variant `json:"variants"`
	Owned    []string           `json:"owned"`
}

// Comparison reassembles a sharded comparison from its shards'
// directories: they must be shards of one comparison (scenario, seed and
// variants alike), every variant run by exactly one of them.
func Comparison(dirs []string) (*analysis.Comparison, error) {
	var first CompareShard
	where := map[string]string{}
	for i, d := range dirs {
		name := filepath.Join(d, CompareShardFile)
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, err
		}
		var info CompareShard
		if err := json.Unmarshal(b, &info); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if i == 0 {
			first = info
		} else if info.Scenario != first.Scenario || info.Seed != first.Seed || !slices.EqualFunc(info.Variants, first.Variants, func(a, b analysis.Variant) bool {
			return a.Name == b.Name && a.File == b.File && slices.Equal(a.Sets, b.Sets)
		}) {
			return nil, fmt.Errorf("%s and %s are shards of different comparisons", dirs[0], d)
		}
		for _, n := range info.Owned {
			if prev, ok := where[n]; ok {
				return nil, fmt.Errorf("variant %s is in both %s and %s", n, prev, d)
			}
			where[n] = d
		}
	}
	c := &analysis.Comparison{Scenario: first.Scenario, Seed: first.Seed}
	for _, v := range first.Variants {
		d, ok := where[v.Name]
		if !ok {
			return nil, fmt.Errorf("no shard holds variant %s: a shard is missing", v.Name)
		}
		res, err := metrics.Load(filepath.Join(d, metrics.PathComponent(v.Name)))
		if err != nil {
			return nil, err
		}
		c.Columns = append(c.Columns, analysis.Column{Variant: v, Result: res, Measures: analysis.MeasuresOf(res)})
	}
	return c, nil
}
