package metrics

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"

	"github.com/stormsim/stormsim/inputfile"
)

// ManifestFile names the file that binds an output directory together:
// the id of the run that wrote it and the digest of every file it saved.
// It is written last, so its presence marks a finished save, and a file
// that does not match it was left by another save (one killed midway, or
// an earlier run into the same directory).
const ManifestFile = "run.json"

// maxOutputFile bounds every file read back from an output directory,
// which may come from a crafted shard: far above what a run writes.
const maxOutputFile = 1 << 30

// Manifest is the content of ManifestFile.
type Manifest struct {
	// RunID identifies the run: the shards of one run share it, and
	// 'stormsim merge' refuses to mix directories of different runs.
	RunID string `json:"run_id"`
	// Files maps each file name to the hex SHA-256 of its content.
	Files map[string]string `json:"files"`
}

// WriteManifest writes dir/ManifestFile for the named files of dir, which
// must all exist. An empty runID is replaced by one derived from the
// files' digests, so that a deterministic save stays deterministic.
func WriteManifest(dir, runID string, names ...string) error {
	m := Manifest{RunID: runID, Files: make(map[string]string, len(names))}
	slices.Sort(names)
	id := sha256.New()
	for _, n := range names {
		b, err := inputfile.Read(filepath.Join(dir, n), maxOutputFile)
		if err != nil {
			return fmt.Errorf("metrics: manifest: %w", err)
		}
		sum := sha256.Sum256(b)
		m.Files[n] = hex.EncodeToString(sum[:])
		fmt.Fprintf(id, "%s %x\n", n, sum)
	}
	if m.RunID == "" {
		m.RunID = hex.EncodeToString(id.Sum(nil)[:8])
	}
	return WriteFileAtomic(filepath.Join(dir, ManifestFile), func(w io.Writer) error {
		b, err := json.MarshalIndent(m, "", "  ")
		if err != nil {
			return err
		}
		_, err = w.Write(append(b, '\n'))
		return err
	})
}

// ErrMismatch is wrapped by ReadManifest's error when a file of the
// directory is missing or differs from the manifest's digest of it.
var ErrMismatch = errors.New("does not match " + ManifestFile)

// ReadManifest reads dir/ManifestFile and checks every file it lists
// against its digest. A directory without one gives an error wrapping
// fs.ErrNotExist; a file that differs, one wrapping ErrMismatch.
func ReadManifest(dir string) (*Manifest, error) {
	path := filepath.Join(dir, ManifestFile)
	b, err := inputfile.Read(path, maxOutputFile)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	var m Manifest
	if err := decodeJSON(b, &m, true); err != nil {
		return nil, fmt.Errorf("metrics: %s: %w", path, err)
	}
	if m.RunID == "" {
		return nil, fmt.Errorf("metrics: %s: no run_id", path)
	}
	names := make([]string, 0, len(m.Files))
	for n := range m.Files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if n != filepath.Base(n) || n == "." || n == ".." {
			return nil, fmt.Errorf("metrics: %s: file %q is not a name in its directory", path, n)
		}
		b, err := inputfile.Read(filepath.Join(dir, n), maxOutputFile)
		if err != nil {
			return nil, fmt.Errorf("metrics: %s lists %s, which %w: %v", path, n, ErrMismatch, err)
		}
		if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != m.Files[n] {
			return nil, fmt.Errorf("metrics: %s %w (run %s): it was written by another save, or the save of this run was killed midway", filepath.Join(dir, n), ErrMismatch, m.RunID)
		}
	}
	return &m, nil
}
