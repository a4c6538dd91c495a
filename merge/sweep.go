package merge

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/stormsim/stormsim/analysis"
	"github.com/stormsim/stormsim/shard"
)

// SweepShards reads the shards' sweep.csv files and checks that their
// units make one whole sweep: every unit 0 … P·V·R−1 exactly once (P
// points, V variants, R replicas, as the rows show them), and, with shards
// = N, that directory I holds only units ≡ I (mod N). A shard interrupted
// before its last unit, or left out, shows up as a missing unit (an
// *analysis.IncompleteSweepError).
func SweepShards(dirs []string, shards int) ([]analysis.Row, error) {
	parts := make([][]analysis.Row, len(dirs))
	for i, d := range dirs {
		name := filepath.Join(d, "sweep.csv")
		rows, err := readRows(name)
		if err != nil {
			return nil, err
		}
		if shards > 0 {
			sp := shard.Spec{Index: i, Count: shards}
			for _, r := range rows {
				if !sp.Owns(r.Index) {
					return nil, fmt.Errorf("%s holds unit %d, which belongs to shard %d/%d, not %v: shards of a different split", name, r.Index, r.Index%shards, shards, sp)
				}
			}
		}
		parts[i] = rows
	}
	rows, err := analysis.MergeRows(parts...)
	if err != nil {
		return nil, err
	}
	if err := analysis.CheckWhole(rows); err != nil {
		return nil, err
	}
	return rows, nil
}

// SweepFiles joins the rows of a sharded sweep's sweep.csv files, named
// one by one ('sweep --merge'), and returns them with the swept values by
// point, recovered from the rows.
func SweepFiles(files []string) (rows []analysis.Row, values []string, err error) {
	parts := make([][]analysis.Row, 0, len(files))
	for _, name := range files {
		r, err := readRows(name)
		if err != nil {
			return nil, nil, err
		}
		parts = append(parts, r)
	}
	if rows, err = analysis.MergeRows(parts...); err != nil {
		return nil, nil, err
	}
	return rows, SweepValues(rows), nil
}

// SweepValues returns the swept values by point, as the rows hold them
// ("" for a point no row holds).
func SweepValues(rows []analysis.Row) []string {
	var values []string
	seen := map[int]bool{}
	for _, r := range rows {
		if !seen[r.Point] {
			seen[r.Point] = true
			for len(values) <= r.Point {
				values = append(values, "")
			}
			values[r.Point] = r.Value
		}
	}
	return values
}

// readRows reads one sweep.csv.
func readRows(name string) ([]analysis.Row, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return analysis.ReadRows(name, f)
}
