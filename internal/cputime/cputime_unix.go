//go:build unix

package cputime

import (
	"syscall"
	"time"
)

// Process returns the CPU time (user + system) this process has used, and
// false where the platform does not report it.
func Process() (time.Duration, bool) {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0, false
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano()), true
}
