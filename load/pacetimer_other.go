//go:build !linux

package load

import "time"

// pacerTimer is the schedule's timer: on this system, a plain time.Timer,
// as precise as the Go runtime's poller makes it.
type pacerTimer struct{ *time.Timer }

func newPacerTimer() *pacerTimer {
	t := &pacerTimer{time.NewTimer(time.Hour)}
	t.Stop()
	return t
}

// close stops the timer.
func (t *pacerTimer) close() { t.Stop() }
