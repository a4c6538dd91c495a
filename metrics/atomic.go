package metrics

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// WriteFileAtomic writes a file so that readers only ever see the old
// content or the complete new content: write fills a temporary file in the
// same directory, which is synced and renamed over path only when write and
// every flush succeeded. On any error the temporary file is removed and path
// is left untouched. The file is created with mode 0644.
func WriteFileAtomic(path string, write func(io.Writer) error) error {
	return writeFileVia(path, write, os.Rename)
}

// WriteNewFileAtomic is WriteFileAtomic for a file that must not exist
// yet: the complete temporary file is hard-linked to path, which fails,
// leaving path as it was, if path exists (an error satisfying
// errors.Is(err, fs.ErrExist)). No reader ever sees a partial file, and
// nothing already there is overwritten, even by a racing writer.
func WriteNewFileAtomic(path string, write func(io.Writer) error) error {
	return writeFileVia(path, write, func(tmp, path string) error {
		if err := os.Link(tmp, path); err != nil {
			return err
		}
		return os.Remove(tmp)
	})
}

// writeFileVia writes a temporary file beside path and moves it there
// with place (a rename, or a link that refuses an existing path).
func writeFileVia(path string, write func(io.Writer) error, place func(tmp, path string) error) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err = write(f); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = f.Chmod(0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("write %s: sync: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("write %s: close: %w", path, err)
	}
	if err = place(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	// Make the rename itself durable; a directory that cannot be synced
	// (some filesystems refuse) still holds a complete file.
	if d, derr := os.Open(dir); derr == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
