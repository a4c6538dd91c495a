package merge

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/shard"
)

// RunMismatch returns why dirs cannot be merged as the shards of one run,
// or "" when they can: a directory without its manifest (its save has not
// finished, or an older stormsim wrote it), one whose files are not the
// ones its manifest lists (a save killed midway over an earlier one), or
// directories of different runs (one is stale, left by an earlier run),
// or with want a directory of a run not labelled want.
func RunMismatch(dirs []string, want shard.Run) (string, error) {
	first, firstDir := "", ""
	for _, d := range dirs {
		m, err := metrics.ReadManifest(d)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return fmt.Sprintf("%s has no %s: its save has not finished (or a stormsim without run ids wrote it)", d, metrics.ManifestFile), nil
		case errors.Is(err, metrics.ErrMismatch):
			return err.Error(), nil
		case err != nil:
			return "", err
		}
		if got := shard.RunOf(m.RunID); want != "" && got != want {
			if got == "" {
				return fmt.Sprintf("%s is from run %s, which has no --run label, not from run %s: a previous run's output (waiting for run %s's)", d, m.RunID, want, want), nil
			}
			return fmt.Sprintf("%s is from run %s, not from run %s: a previous run's output (waiting for run %s's)", d, got, want, want), nil
		}
		if firstDir == "" {
			first, firstDir = m.RunID, d
		} else if m.RunID != first {
			return fmt.Sprintf("%s is from run %s, %s from run %s: shards of different runs (one is stale, from an earlier run with other flags or another scenario?)", firstDir, first, d, m.RunID), nil
		}
	}
	return "", nil
}
