// Package benchaddr hands the address of a benchmark's target from the
// target to the benchmark: the target listens on a port the kernel picks
// (127.0.0.1:0) and writes the address it got to a file; the benchmark
// waits for that file and checks that the address answers as the target
// does before it times anything. So a benchmark never measures whatever
// else listens on a fixed port, and never starts before its target is up.
package benchaddr

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Write writes addr to path atomically (a temporary file renamed), so a
// reader sees the whole address or nothing.
func Write(path, addr string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("benchaddr: %w", err)
	}
	if _, err := tmp.WriteString(addr + "\n"); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("benchaddr: %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("benchaddr: %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("benchaddr: %w", err)
	}
	return nil
}

// Wait waits up to timeout for path to hold an address, then calls check
// with it until check succeeds or the timeout passes; it returns the
// address that answered.
func Wait(path string, timeout time.Duration, check func(addr string) error) (string, error) {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		b, err := os.ReadFile(path)
		if err == nil {
			addr := strings.TrimSpace(string(b))
			if last = check(addr); last == nil {
				return addr, nil
			}
			last = fmt.Errorf("%s answers wrong: %w", addr, last)
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("benchaddr: %w", err)
		} else {
			last = fmt.Errorf("no address in %s yet (did the target start?)", path)
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("benchaddr: after %v: %w", timeout, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
