package capacity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/stormsim/stormsim/metrics"
)

// DirExchange is an Exchange through a directory that every shard can read,
// such as the shared volume of a Kubernetes Job: shard I of N writes its
// results of a step to PARENT/shard-I/capacity-runs/KEY.json (atomically)
// and reads its siblings' files, waiting for them as long as Wait allows.
// Shard I owns the runs k with k ≡ I (mod N).
type DirExchange struct {
	// Parent holds the shards' directories shard-0 … shard-(N−1).
	Parent string
	// Index and Count are I and N.
	Index, Count int
	// Poll is how often a missing file is looked for again (default 250ms);
	// Wait bounds the wait for one step (default 6h, as long as a shard
	// may be retried by the Job).
	Poll, Wait time.Duration
}

// Validate reports an exchange that cannot work.
func (x *DirExchange) Validate() error {
	switch {
	case x.Count < 1 || x.Index < 0 || x.Index >= x.Count:
		return fmt.Errorf("capacity: shard %d/%d: want 0 ≤ I < N", x.Index, x.Count)
	case x.Parent == "":
		return errors.New("capacity: a sharded search needs --out PARENT/shard-I, its siblings' directory")
	}
	return nil
}

// Owns implements Exchange.
func (x *DirExchange) Owns(k int) bool { return x.Count <= 1 || k%x.Count == x.Index }

func (x *DirExchange) file(index int, key string) string {
	return filepath.Join(x.Parent, "shard-"+strconv.Itoa(index), "capacity-runs", key+".json")
}

// exchangeFile is one shard's results of one step.
type exchangeFile struct {
	Key   string            `json:"key"`
	Shard string            `json:"shard"`
	Total int               `json:"total"`
	Runs  map[int]RunRecord `json:"runs"`
}

// Recall implements Recaller: a shard retried after a failure finds its
// own results of the steps it finished in its directory.
func (x *DirExchange) Recall(key string, total int) (map[int]RunRecord, bool) {
	data, err := os.ReadFile(x.file(x.Index, key))
	if err != nil {
		return nil, false
	}
	var f exchangeFile
	if json.Unmarshal(data, &f) != nil || f.Key != key || f.Total != total {
		return nil, false
	}
	for k := range f.Runs {
		if !x.Owns(k) {
			return nil, false
		}
	}
	return f.Runs, true
}

// Share implements Exchange.
func (x *DirExchange) Share(ctx context.Context, key string, mine map[int]RunRecord, total int) (map[int]RunRecord, error) {
	if err := x.Validate(); err != nil {
		return nil, err
	}
	own := x.file(x.Index, key)
	if err := os.MkdirAll(filepath.Dir(own), 0o755); err != nil {
		return nil, fmt.Errorf("capacity: %w", err)
	}
	shardName := fmt.Sprintf("%d/%d", x.Index, x.Count)
	if err := metrics.WriteFileAtomic(own, func(w io.Writer) error {
		return json.NewEncoder(w).Encode(exchangeFile{Key: key, Shard: shardName, Total: total, Runs: mine})
	}); err != nil {
		return nil, fmt.Errorf("capacity: %w", err)
	}
	poll, wait := x.Poll, x.Wait
	if poll <= 0 {
		poll = 250 * time.Millisecond
	}
	if wait <= 0 {
		wait = 6 * time.Hour
	}
	deadline := time.Now().Add(wait)
	all := make(map[int]RunRecord, total)
	for k, r := range mine {
		all[k] = r
	}
	for j := range x.Count {
		if j == x.Index {
			continue
		}
		path := x.file(j, key)
		for {
			data, err := os.ReadFile(path)
			if err == nil {
				var f exchangeFile
				if err := json.Unmarshal(data, &f); err != nil {
					return nil, fmt.Errorf("capacity: %s: %w", path, err)
				}
				if f.Key != key || f.Total != total {
					return nil, fmt.Errorf("capacity: %s: step %q of %d runs, want %q of %d: the shards run different searches (same scenario and flags?)", path, f.Key, f.Total, key, total)
				}
				for k, r := range f.Runs {
					if k%x.Count != j {
						return nil, fmt.Errorf("capacity: %s: run %d does not belong to shard %d/%d", path, k, j, x.Count)
					}
					all[k] = r
				}
				break
			}
			if !errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("capacity: %w", err)
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("capacity: shard %d/%d: no results for %s after %v (%s)", j, x.Count, key, wait, path)
			}
			select {
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			case <-time.After(poll):
			}
		}
	}
	return all, nil
}
