//go:build !unix

package sim

import "time"

// processCPU reports no CPU time where the platform has no getrusage.
func processCPU() (time.Duration, bool) { return 0, false }
