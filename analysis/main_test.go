package analysis

import (
	"testing"

	"go.uber.org/goleak"
)

// RunSweep and Compare start goroutines; none may outlive a call.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
