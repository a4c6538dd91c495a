package metrics_test

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/stormsim/stormsim/metrics"
)

// WriteNewFileAtomic writes a file that must not exist yet: the second
// write is refused and the first content stays.
func ExampleWriteNewFileAtomic() {
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "scenario.yaml")
	write := func(text string) func(io.Writer) error {
		return func(w io.Writer) error { _, err := io.WriteString(w, text); return err }
	}
	fmt.Println(metrics.WriteNewFileAtomic(path, write("name: first\n")))
	err = metrics.WriteNewFileAtomic(path, write("name: second\n"))
	fmt.Println(errors.Is(err, fs.ErrExist))
	b, _ := os.ReadFile(path)
	fmt.Print(string(b))
	left, _ := os.ReadDir(dir)
	fmt.Println(len(left), "file")
	// Output:
	// <nil>
	// true
	// name: first
	// 1 file
}
