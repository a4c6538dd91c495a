package metrics_test

import (
	"errors"
	"fmt"
	"strings"

	"github.com/stormsim/stormsim/metrics"
)

// failAfter accepts n writes, then fails every one.
type failAfter struct {
	n   int
	buf strings.Builder
}

func (f *failAfter) Write(p []byte) (int, error) {
	if f.n == 0 {
		return 0, errors.New("disk full")
	}
	f.n--
	return f.buf.Write(p)
}

func ExampleErrWriter() {
	dst := &failAfter{n: 2}
	w := metrics.NewErrWriter(dst)
	// Print line by line without checking each write...
	for i := range 4 {
		w.Printf("line %d\n", i)
	}
	// ...and check once: the first error is kept, later writes are dropped.
	fmt.Printf("%q %v\n", dst.buf.String(), w.Err())
	// Output:
	// "line 0\nline 1\n" disk full
}
