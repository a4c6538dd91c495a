//go:build unix

package sim

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user + system) the process has used,
// and true where the platform reports it.
func processCPU() (time.Duration, bool) {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0, false
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano()), true
}
