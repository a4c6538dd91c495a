package cputime

import (
	"runtime"
	"testing"
)

// TestProcessGrowsWithWork burns CPU and checks the reading moved: a
// reader that returned a constant, or wall time of a sleeping process,
// would fail one of the two checks.
func TestProcessGrowsWithWork(t *testing.T) {
	before, ok := Process()
	if !ok {
		if runtime.GOOS == "linux" || runtime.GOOS == "darwin" {
			t.Fatalf("no CPU time on %s", runtime.GOOS)
		}
		return
	}
	x := uint64(1)
	for i := 0; i < 200_000_000 && x != 0; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	after, _ := Process()
	if after <= before {
		t.Fatalf("CPU time did not grow over a busy loop: %v then %v (x %d)", before, after, x)
	}
}
