package metrics_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stormsim/stormsim/metrics"
)

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.txt")
	write := func(s string) func(io.Writer) error {
		return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
	}
	if err := metrics.WriteFileAtomic(path, write("first\n")); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	// A writer that fails half-way: the old content must survive whole.
	err := metrics.WriteFileAtomic(path, func(w io.Writer) error {
		io.WriteString(w, "partial sec")
		return boom
	})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "out.txt") {
		t.Errorf("err = %v, want boom naming the file", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "first\n" {
		t.Errorf("after a failed write the file holds %q, want the old content", b)
	}
	if err := metrics.WriteFileAtomic(path, write("second\n")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "second\n" {
		t.Errorf("file holds %q, want the new content", b)
	}
	// A failing first write never creates the file.
	fresh := filepath.Join(dir, "never.txt")
	if err := metrics.WriteFileAtomic(fresh, func(io.Writer) error { return boom }); err == nil {
		t.Error("no error")
	}
	if _, err := os.Stat(fresh); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("failed write left %s behind (stat: %v)", fresh, err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 || ents[0].Name() != "out.txt" {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("directory holds %v, want only out.txt (no temp files)", names)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, err %v; want 0644", fi.Mode(), err)
	}
}

func TestWriteFileAtomicBadDir(t *testing.T) {
	err := metrics.WriteFileAtomic(filepath.Join(t.TempDir(), "missing", "f"), func(io.Writer) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("err = %v, want one naming the path", err)
	}
}
