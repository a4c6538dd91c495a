//go:build !unix

package cputime

import "time"

// Process reports no CPU time where the platform has no getrusage.
func Process() (time.Duration, bool) { return 0, false }
