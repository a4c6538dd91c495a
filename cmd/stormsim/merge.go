package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/stormsim/stormsim/capacity"
	"github.com/stormsim/stormsim/merge"

	"github.com/spf13/pflag"

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
	fs.DurationVar(&c.wait, "wait", 0, "wait up to this long for every shard directory to be complete (e.g. 2h); 0: they must be complete now; without --run, shards all complete at the first look are refused (they may be a previous run's)")
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

// waitComplete polls until the shards are ready to merge (merge.NotReady),
// ctx is done, or timeout passes; the error says what is still missing.
// Unlabelled (run ""), shards ready at the first look are refused
// (merge.Ambiguous).
func waitComplete(ctx context.Context, dirs []string, shards int, run shard.Run, timeout, poll time.Duration) error {
	sig := ctx
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(poll)
	defer t.Stop()
	for first := true; ; first = false {
		why, err := merge.NotReady(dirs, shards, run)
		if err != nil {
			return err
		}
		if why == "" && first {
			if err := merge.Ambiguous(dirs, run); err != nil {
				return err
			}
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

// mergeDirs merges complete shard directories of one kind into out.
func mergeDirs(dirs []string, shards int, run shard.Run, out, format string, w io.Writer) error {
	kind, err := merge.CommonKind(dirs)
	if err != nil {
		return err
	}
	if why, err := merge.RunMismatch(dirs, run); err != nil || why != "" {
		if err == nil {
			err = errors.New(why)
		}
		return err
	}
	switch kind {
	case merge.Sweep:
		rows, err := merge.SweepShards(dirs, shards)
		if err != nil {
			return err
		}
		return writeSweep(out, rows, merge.SweepValues(rows), true, "", w)
	case merge.Compare:
		return mergeCompareShards(dirs, out, w)
	case merge.Capacity:
		files, err := capacity.MergeShards(dirs, out)
		if err != nil {
			return err
		}
		for _, f := range files {
			fmt.Fprintln(w, f)
		}
		return nil
	}
	merged, err := merge.Results(dirs)
	if err != nil {
		return err
	}
	return emitResult(w, merged, format, out)
}
