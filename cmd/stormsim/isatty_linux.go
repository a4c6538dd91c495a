package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// isatty reports whether f is a terminal: whether the terminal driver
// answers for its attributes.
func isatty(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
