//go:build !linux

package driver

import "time"

// pacerTimer is the schedule's timer: on this system, a plain time.Timer,
// as precise as the Go runtime's poller makes it.
type pacerTimer struct{ *time.Timer }

// newPacerTimer returns a stopped pacer timer; close releases it.
func newPacerTimer() *pacerTimer {
	t := &pacerTimer{time.NewTimer(time.Hour)}
	t.Stop()
	return t
}

// Wait makes the timer fire after d.
func (t *pacerTimer) Wait(d time.Duration) { t.Reset(d) }

// Woke ignores the lateness of a wait: nothing here depends on it.
func (t *pacerTimer) Woke(time.Duration) {}

// close stops the timer.
func (t *pacerTimer) close() { t.Stop() }
