package metrics

import (
	"fmt"
	"io"
)

// ErrWriter is an io.Writer that remembers the first error of the writer
// it wraps and writes nothing after it, so that code printing a report
// line by line can stay linear and check the error once, at the end.
// It is not safe for concurrent use.
type ErrWriter struct {
	w   io.Writer
	err error
}

// NewErrWriter returns an ErrWriter writing to w.
func NewErrWriter(w io.Writer) *ErrWriter { return &ErrWriter{w: w} }

// Write writes p unless an earlier write failed.
func (e *ErrWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

// Printf formats to the writer as fmt.Fprintf does; its error is kept.
func (e *ErrWriter) Printf(format string, args ...any) { fmt.Fprintf(e, format, args...) }

// Err returns the first write error, or nil.
func (e *ErrWriter) Err() error { return e.err }
