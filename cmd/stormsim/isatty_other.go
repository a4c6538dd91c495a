//go:build !linux

package main

import "os"

// isatty reports whether f is a character device, the closest a portable
// check comes to a terminal (it also counts /dev/null).
func isatty(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
