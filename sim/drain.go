package sim

import (
	"fmt"
	"time"
)

// pastDrain stops the run as diverged when the next event falls more than
// limits.max_drain after the arrival window: work so slow that it would
// keep the run going, one time-series row per interval, for hours or years
// of simulated time (a latency_add of 2400h took 2.6 GB before it
// drained). A scenario without the limit (built by hand) has none.
func (m *run) pastDrain(next time.Duration) bool {
	sc := m.sc
	if sc.Limits.MaxDrain <= 0 || next <= sc.Duration+sc.Limits.MaxDrain {
		return false
	}
	m.diverge(fmt.Sprintf("work still pending: the next event is due at %v, more than %v after the arrival window ends at %v (limits.max_drain)", next, sc.Limits.MaxDrain, sc.Duration))
	return true
}
