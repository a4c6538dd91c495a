package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/stormsim/stormsim/capacity"

	"github.com/spf13/pflag"

	"github.com/stormsim/stormsim/analysis"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/shard"
)

func init() {
	register(&command{
		name:    "merge",
		summary: "merge the output directories of a sharded run into the output of a single run",
		usage:   "DIR... --out DIR [flags]\n       stormsim merge --shards N PARENT --out DIR [--wait DURATION]",
		example: `  stormsim sweep retry-storm --param workload.rate --range 100:800:100 --shard 0/2 --out run/shard-0
  stormsim sweep retry-storm --param workload.rate --range 100:800:100 --shard 1/2 --out run/shard-1
  stormsim merge run/shard-0 run/shard-1 --out run/merged
  stormsim merge --shards 2 run --out run/merged     # the same, as the Kubernetes merge Job runs it
  stormsim merge --shards 8 --wait 2h /results/my-run --out /results/my-run/merged
  stormsim merge --shards 8 --wait 2h --run nightly-42 /results/my-run --out /results/my-run/merged  # shards run with --run nightly-42`,
		new: func() subcommand { return new(mergeCommand) },
	})
}

// mergeCommand is `stormsim merge`: its flags, and the run that uses them.
type mergeCommand struct {
	out    string
	shards int
	wait   time.Duration
	format string
	label  shard.Run
}

// flags declares the command's flags on fs.
func (c *mergeCommand) flags(fs *pflag.FlagSet) {
	fs.StringVar(&c.out, "out", "", "write the merged output to `DIR` (required)")
	fs.IntVar(&c.shards, "shards", 0, "read the `N` shard directories PARENT/shard-0 … PARENT/shard-(N−1)")
	fs.DurationVar(&c.wait, "wait", 0, "wait up to this long for every shard directory to be complete (e.g. 2h); 0: they must be complete now")
	fs.StringVar(&c.format, "format", "text", "output format of a merged run's summary: text or json")
	fs.Var(&c.label, "run", "merge only the shards of the run labelled `LABEL` (their --run); with --wait, a previous run's shards are waited past, not merged")
}

// run runs the command with the arguments left after the flags.
func (c *mergeCommand) run(ctx context.Context, args []string, w io.Writer) error {
	if c.out == "" {
		return &exitError{exitUsage, errors.New("--out DIR is required")}
	}
	if c.format != "text" && c.format != "json" {
		return &exitError{exitUsage, fmt.Errorf("--format: want text or json, got %q", c.format)}
	}
	if c.wait < 0 {
		return &exitError{exitUsage, fmt.Errorf("--wait must be ≥ 0, got %v", c.wait)}
	}
	dirs, err := shardDirs(args, c.shards)
	if err != nil {
		return &exitError{exitUsage, err}
	}
	if err := checkMergeOut(dirs, c.out); err != nil {
		return &exitError{exitUsage, err}
	}
	if c.wait > 0 {
		if err := waitComplete(ctx, dirs, c.shards, c.label, c.wait, mergePoll); err != nil {
			return err
		}
	}
	return mergeDirs(dirs, c.shards, c.label, c.out, c.format, w)
}

// mergePoll is how often --wait looks at the shard directories again: often
// enough that the merge starts soon after the last shard, rarely enough that
// hours of waiting do not load a shared file system. Tests shorten it.
var mergePoll = 2 * time.Second

// shardDirs returns the directories to merge: the arguments, or with
// --shards N the N shard directories of the one PARENT argument.
func shardDirs(args []string, n int) ([]string, error) {
	if n != 0 {
		if n < 1 || n > shard.MaxCount {
			return nil, fmt.Errorf("--shards must be in [1, %d], got %d", shard.MaxCount, n)
		}
		if len(args) != 1 {
			return nil, fmt.Errorf("with --shards give one PARENT directory, got %d arguments", len(args))
		}
		dirs := make([]string, n)
		for i := range dirs {
			dirs[i] = shard.Dir(args[0], i)
		}
		return dirs, nil
	}
	if len(args) == 0 {
		return nil, errors.New("give the shards' output directories (or --shards N PARENT)")
	}
	return args, nil
}

// checkMergeOut rejects merging a directory twice (its counts would be
// doubled) or writing the merge over one of its inputs.
func checkMergeOut(dirs []string, out string) error {
	seen := map[string]string{}
	abs := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			return filepath.Clean(p)
		}
		return a
	}
	for _, d := range dirs {
		a := abs(d)
		if prev, dup := seen[a]; dup {
			return fmt.Errorf("%s and %s are the same directory: merging it twice would double its counts", prev, d)
		}
		seen[a] = d
	}
	if d, ok := seen[abs(out)]; ok {
		return fmt.Errorf("--out %s is one of the inputs (%s)", out, d)
	}
	return nil
}

// outputKind is what a shard directory holds.
type outputKind int

const (
	kindNone     outputKind = iota // nothing complete yet
	kindSweep                      // sweep.csv from 'stormsim sweep --shard'
	kindResult                     // a metrics.Save directory (run, load)
	kindCapacity                   // capacity.json from 'stormsim capacity --shard'
	kindCompare                    // compare-shard.json from 'stormsim compare --shard'
)

func (k outputKind) String() string {
	return [...]string{"incomplete", "sweep", "result", "capacity", "compare"}[k]
}

// kindOf says what dir holds once it is complete. Every file is written
// atomically; metrics.Save writes faults.json last, so a result directory
// with it is complete, and a sweep shard writes its one sweep.csv at the
// end.
func kindOf(dir string) (outputKind, error) {
	exists := func(name string) (bool, error) {
		_, err := os.Stat(filepath.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return err == nil, err
	}
	for _, c := range []struct {
		kind  outputKind
		files []string
	}{
		{kindSweep, []string{"sweep.csv"}},
		{kindCapacity, []string{"capacity.json"}},
		{kindCompare, []string{compareShardFile}},
		{kindResult, []string{metrics.SummaryFile, metrics.FaultsFile}},
	} {
		all := true
		for _, f := range c.files {
			ok, err := exists(f)
			if err != nil {
				return kindNone, err
			}
			all = all && ok
		}
		if all {
			return c.kind, nil
		}
	}
	return kindNone, nil
}

// waitComplete polls until the shards are ready to merge (see ready),
// ctx is done, or timeout passes; the error says what is still missing.
//
// Unlabelled (run ""), shards ready at the first look are refused: a run
// repeated with the same flags has the previous run's id, and its shards
// may not have written their first unit yet, so complete shards found
// before any waiting may be the previous run's. Only a label tells them
// apart; a merge without --wait takes them as the user's word.
func waitComplete(ctx context.Context, dirs []string, shards int, run shard.Run, timeout, poll time.Duration) error {
	sig := ctx
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(poll)
	defer t.Stop()
	for first := true; ; first = false {
		why, err := notReady(dirs, shards, run)
		if err != nil {
			return err
		}
		if why == "" && first && run == "" {
			id := "?"
			if m, err := metrics.ReadManifest(dirs[0]); err == nil {
				id = m.RunID
			}
			return fmt.Errorf("the shards were already complete when --wait began (run %s): without --run they cannot be told from a previous run's of the same command; give the shards and the merge --run LABEL, or merge without --wait to take these", id)
		}
		if why == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			// A signal cuts the wait short: say how long it really was.
			if sig.Err() != nil {
				return fmt.Errorf("%w after waiting %v of --wait %v; the shards are not ready: %s", errInterrupted, time.Since(start).Truncate(100*time.Millisecond), timeout, why)
			}
			return fmt.Errorf("waited %v and the shards are not ready: %s (merge without --wait to see what they hold)", timeout, why)
		case <-t.C:
		}
	}
}

// notReady returns why dirs cannot be merged into a whole run yet, or ""
// when they can: a directory without finished output, one of another run
// than run (when given), a sweep whose units
// do not add up to a whole sweep, or a result shard that was interrupted
// (its pod is likely being retried).
func notReady(dirs []string, shards int, run shard.Run) (string, error) {
	var missing []string
	for _, d := range dirs {
		k, err := kindOf(d)
		if err != nil {
			return "", err
		}
		if k == kindNone {
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
	if why, err := runMismatch(dirs, run); why != "" || err != nil {
		return why, err
	}
	kind, err := commonKind(dirs)
	if err != nil {
		return "", err
	}
	if kind == kindSweep {
		_, err := readSweepShards(dirs, shards)
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

// commonKind returns the kind of output every dir holds, or an error when
// one is unfinished or they differ.
func commonKind(dirs []string) (outputKind, error) {
	var kind outputKind
	for i, d := range dirs {
		k, err := kindOf(d)
		if err != nil {
			return kindNone, err
		}
		if k == kindNone {
			return kindNone, fmt.Errorf("%s: holds neither sweep.csv, capacity.json, compare-shard.json nor a complete result (summary.json … faults.json): not a finished shard", d)
		}
		if i > 0 && k != kind {
			return kindNone, fmt.Errorf("%s holds %s output, %s holds %s output: shards of different commands", dirs[0], kind, d, k)
		}
		kind = k
	}
	return kind, nil
}

// readSweepShards reads the shards' sweep.csv files and checks that their
// units make one whole sweep: every unit 0 … P·V·R−1 exactly once (P points,
// V variants, R replicas, as the rows show them), and, with shards = N,
// that directory I holds only units ≡ I (mod N). A shard interrupted
// before its last unit, or left out, shows up as a missing unit.
func readSweepShards(dirs []string, shards int) ([]analysis.Row, error) {
	parts := make([][]analysis.Row, len(dirs))
	for i, d := range dirs {
		name := filepath.Join(d, "sweep.csv")
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		rows, err := analysis.ReadRows(name, f)
		f.Close()
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

// mergeDirs merges complete shard directories of one kind into out.
func mergeDirs(dirs []string, shards int, run shard.Run, out, format string, w io.Writer) error {
	kind, err := commonKind(dirs)
	if err != nil {
		return err
	}
	if why, err := runMismatch(dirs, run); err != nil || why != "" {
		if err == nil {
			err = errors.New(why)
		}
		return err
	}
	if kind == kindSweep {
		if _, err := readSweepShards(dirs, shards); err != nil {
			return err
		}
		files := make([]string, len(dirs))
		for i, d := range dirs {
			files[i] = filepath.Join(d, "sweep.csv")
		}
		return mergeSweep(files, out, w)
	}
	if kind == kindCompare {
		return mergeCompareShards(dirs, out, w)
	}
	if kind == kindCapacity {
		files, err := capacity.MergeShards(dirs, out)
		if err != nil {
			return err
		}
		for _, f := range files {
			fmt.Fprintln(w, f)
		}
		return nil
	}
	parts := make([]*metrics.Result, len(dirs))
	for i, d := range dirs {
		r, err := metrics.Load(d)
		if err != nil {
			return err
		}
		if i > 0 && r.Summary.Seed != parts[0].Summary.Seed {
			return fmt.Errorf("%s has seed %d, %s seed %d: shards of one run share its seed", d, r.Summary.Seed, dirs[0], parts[0].Summary.Seed)
		}
		parts[i] = r
	}
	merged, err := metrics.Merge(parts...)
	if err != nil {
		return err
	}
	return emitResult(w, merged, format, out)
}
