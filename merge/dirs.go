package merge

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/stormsim/stormsim/analysis"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/shard"
)

// CompareShardFile is the file a 'compare --shard' directory is complete
// with: which variants it ran, beside their result directories.
const CompareShardFile = "compare-shard.json"

// Kind is what a shard directory holds.
type Kind int

// Kinds of shard output.
const (
	None     Kind = iota // nothing complete yet
	Sweep                // sweep.csv from 'stormsim sweep --shard'
	Result               // a metrics.Save directory (run, load)
	Capacity             // capacity.json from 'stormsim capacity --shard'
	Compare              // compare-shard.json from 'stormsim compare --shard'
)

// String names the kind as merge's messages do.
func (k Kind) String() string {
	if k < None || k > Compare {
		return "kind?"
	}
	return [...]string{"incomplete", "sweep", "result", "capacity", "compare"}[k]
}

// KindOf says what dir holds once it is complete. Every file is written
// atomically; metrics.Save writes faults.json last, so a result directory
// with it is complete, and a sweep shard's sweep.csv is whole when written.
func KindOf(dir string) (Kind, error) {
	exists := func(name string) (bool, error) {
		_, err := os.Stat(filepath.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return err == nil, err
	}
	for _, c := range []struct {
		kind  Kind
		files []string
	}{
		{Sweep, []string{"sweep.csv"}},
		{Capacity, []string{"capacity.json"}},
		{Compare, []string{CompareShardFile}},
		{Result, []string{metrics.SummaryFile, metrics.FaultsFile}},
	} {
		all := true
		for _, f := range c.files {
			ok, err := exists(f)
			if err != nil {
				return None, err
			}
			all = all && ok
		}
		if all {
			return c.kind, nil
		}
	}
	return None, nil
}

// CommonKind returns the kind of output every dir holds, or an error when
// one is unfinished or they differ.
func CommonKind(dirs []string) (Kind, error) {
	var kind Kind
	for i, d := range dirs {
		k, err := KindOf(d)
		if err != nil {
			return None, err
		}
		if k == None {
			return None, fmt.Errorf("%s: holds neither sweep.csv, capacity.json, %s nor a complete result (summary.json … faults.json): not a finished shard", d, CompareShardFile)
		}
		if i > 0 && k != kind {
			return None, fmt.Errorf("%s holds %s output, %s holds %s output: shards of different commands", dirs[0], kind, d, k)
		}
		kind = k
	}
	return kind, nil
}

// NotReady returns why dirs cannot be merged into a whole run yet, or ""
// when they can: a directory without finished output, one of another run
// than run (when given), a sweep whose units do not add up to a whole
// sweep, or a result shard that was interrupted (its pod is likely being
// retried). An error is a directory that cannot be read.
func NotReady(dirs []string, shards int, run shard.Run) (string, error) {
	var missing []string
	for _, d := range dirs {
		k, err := KindOf(d)
		if err != nil {
			return "", err
		}
		if k == None {
			missing = append(missing, d)
		}
	}
	if len(missing) > 0 {
		n := len(missing)
		if n > 5 {
			missing = append(missing[:5], fmt.Sprintf("and %d more", n-5))
		}
		return fmt.Sprintf("%d of %d shard directories are not complete: %s", n, len(dirs), strings.Join(missing, ", ")), nil
	}
	if why, err := RunMismatch(dirs, run); why != "" || err != nil {
		return why, err
	}
	kind, err := CommonKind(dirs)
	if err != nil {
		return "", err
	}
	if kind == Sweep {
		_, err := SweepShards(dirs, shards)
		var inc *analysis.IncompleteSweepError
		if errors.As(err, &inc) {
			return inc.Error(), nil
		}
		return "", err
	}
	for _, d := range dirs {
		name := filepath.Join(d, metrics.SummaryFile)
		b, err := os.ReadFile(name)
		if err != nil {
			return "", err
		}
		var s struct{ Status metrics.Status }
		if err := json.Unmarshal(b, &s); err != nil {
			return "", fmt.Errorf("%s: %w", name, err)
		}
		if s.Status == metrics.StatusInterrupted {
			return d + " was interrupted", nil
		}
	}
	return "", nil
}

// Ambiguous is the refusal of a wait for an unlabelled run (run "") whose
// shards were ready at the first look: a run repeated with the same flags
// has the previous run's id, and its shards may not have written their
// first unit yet, so complete shards found before any waiting may be the
// previous run's. Only a label tells them apart; a merge without a wait
// takes them as the user's word. It returns nil for a labelled run.
func Ambiguous(dirs []string, run shard.Run) error {
	if run != "" || len(dirs) == 0 {
		return nil
	}
	id := "?"
	if m, err := metrics.ReadManifest(dirs[0]); err == nil {
		id = m.RunID
	}
	return fmt.Errorf("the shards were already complete when --wait began (run %s): without --run they cannot be told from a previous run's of the same command; give the shards and the merge --run LABEL, or merge without --wait to take these", id)
}
