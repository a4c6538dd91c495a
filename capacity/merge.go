package capacity

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/stormsim/stormsim/metrics"
)

// ReportFiles are the files a capacity run writes to its --out directory,
// in the order WriteDir writes them; the PNG plots that do not apply (the
// recovery plot without faults) are absent.
var ReportFiles = []string{"capacity.txt", "capacity.json", PlotSLO + ".png", PlotUtilization + ".png", PlotRecovery + ".png"}

// IsShardDir reports whether dir holds a capacity run's output.
func IsShardDir(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "capacity.json"))
	return err == nil
}

// MergeShards merges the output directories of the shards of one sharded
// capacity search into out. Every shard of such a search reaches the same
// outcome (see Exchange) and writes the same report, so merging checks that
// their capacity.json files are identical — a shard that ran a different
// search, or did not finish, is an error naming it — and copies the first
// shard's report files, atomically. It returns the files written.
func MergeShards(dirs []string, out string) ([]string, error) {
	if len(dirs) == 0 {
		return nil, errors.New("capacity: merge: no shard directories")
	}
	var first []byte
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "capacity.json"))
		if err != nil {
			return nil, fmt.Errorf("capacity: merge: %s: not a finished capacity shard: %w", d, err)
		}
		if first == nil {
			first = b
			continue
		}
		if !bytes.Equal(first, b) {
			return nil, fmt.Errorf("capacity: merge: %s reports a different outcome from %s: the shards ran different searches", d, dirs[0])
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, fmt.Errorf("capacity: merge: %w", err)
	}
	var written []string
	for _, name := range ReportFiles {
		src := filepath.Join(dirs[0], name)
		data, err := os.ReadFile(src)
		if errors.Is(err, fs.ErrNotExist) && filepath.Ext(name) == ".png" {
			continue
		}
		if err != nil {
			return written, fmt.Errorf("capacity: merge: %w", err)
		}
		dst := filepath.Join(out, name)
		if err := metrics.WriteFileAtomic(dst, func(w io.Writer) error { _, err := w.Write(data); return err }); err != nil {
			return written, fmt.Errorf("capacity: merge: %w", err)
		}
		written = append(written, dst)
	}
	return written, nil
}
