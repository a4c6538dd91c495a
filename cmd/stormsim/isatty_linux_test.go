package main

import (
	"os"
	"testing"
)

// /dev/null is a character device but no terminal: a run with its stderr
// sent there draws no progress bar.
func TestDevNullIsNoTerminal(t *testing.T) {
	f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if isTerminal(f) {
		t.Error("isTerminal(/dev/null) = true")
	}
}
