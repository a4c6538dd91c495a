package main

import (
	"io"
	"os"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
)

// isTerminal reports whether w is a terminal: a file the terminal
// driver answers for (isatty), so /dev/null and other character devices
// that are not terminals draw no progress bar.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	return isatty(f)
}

// progressBar is one mpb bar drawn on w, or nothing (the zero value)
// when w is not a terminal and the bar is not forced, so that logs and
// pipes stay clean.
type progressBar struct {
	p   *mpb.Progress
	bar *mpb.Bar
}

// newProgressBar returns the bar with its decorators, drawn on w when w is
// a terminal or force is set.
func newProgressBar(w io.Writer, force bool, width int, refresh time.Duration, opts ...mpb.BarOption) progressBar {
	if !force && !isTerminal(w) {
		return progressBar{}
	}
	// mpb draws nothing on a non-terminal unless told to refresh anyway.
	p := mpb.New(mpb.WithOutput(w), mpb.WithWidth(width), mpb.WithRefreshRate(refresh),
		mpb.ContainerOptional(mpb.WithAutoRefresh(), force))
	return progressBar{p: p, bar: p.AddBar(0, opts...)}
}

// finish completes the bar and waits until it is drawn.
func (b progressBar) finish() {
	if b.bar == nil {
		return
	}
	b.bar.SetTotal(-1, true)
	b.p.Wait()
}

// simProgress shows a simulation's progress in simulated seconds.
type simProgress struct {
	progressBar
	last time.Duration
}

func newSimProgress(w io.Writer, force bool, name string) *simProgress {
	return &simProgress{progressBar: newProgressBar(w, force, 100, 150*time.Millisecond,
		mpb.BarWidth(30),
		mpb.PrependDecorators(decor.Name(name+" ", decor.WCSyncSpaceR), decor.Percentage(decor.WCSyncSpace)),
		mpb.AppendDecorators(decor.Name(" sim time "), decor.Current(0, "%ds "), etaDecorator(&eta{})),
	)}
}

// update is a sim.Options.Progress callback.
func (s *simProgress) update(now, end time.Duration) {
	if s.bar == nil {
		return
	}
	if s.bar.Current() == 0 {
		s.bar.SetTotal(int64(end/time.Second)+1, false)
	}
	if now/time.Second > s.last/time.Second {
		s.bar.SetCurrent(int64(now / time.Second))
		s.last = now
	}
}

// countProgress is a progress bar over a count of runs.
type countProgress struct {
	progressBar
}

func newCountProgress(w io.Writer, force bool, name string) *countProgress {
	return &countProgress{newProgressBar(w, force, 100, 200*time.Millisecond,
		mpb.BarWidth(30),
		mpb.PrependDecorators(decor.Name(name+" ", decor.WCSyncSpaceR), decor.CountersNoUnit("%d/%d runs", decor.WCSyncSpace)),
		mpb.AppendDecorators(decor.Percentage(decor.WCSyncSpace), decor.Name(" "), etaDecorator(&eta{})),
	)}
}

// update is an analysis.SweepOptions.Progress callback.
func (c *countProgress) update(done, total int) {
	if c.bar == nil {
		return
	}
	c.bar.SetTotal(int64(total), false)
	c.bar.SetCurrent(int64(done))
}

// etaWindow is how far back eta looks for the current rate: long enough
// to smooth a run's jitter, short enough to follow a run that slows down.
const etaWindow = 10 * time.Second

// eta estimates the time left from the recent rate of progress, not the
// average since the start: a simulation slows when a storm multiplies its
// events, and a sweep when its expensive points come last.
type eta struct {
	times []time.Time
	done  []int64
}

// estimate records done of total at now and returns the time left, rounded
// to the second ("-" while the rate is unknown).
func (e *eta) estimate(now time.Time, done, total int64) string {
	if done >= total && total > 0 {
		return "0s"
	}
	if n := len(e.times); n == 0 || done != e.done[n-1] || now.Sub(e.times[n-1]) >= time.Second {
		e.times, e.done = append(e.times, now), append(e.done, done)
	}
	// Keep one point at or before the window's start, to span all of it.
	for len(e.times) > 2 && now.Sub(e.times[1]) >= etaWindow {
		e.times, e.done = e.times[1:], e.done[1:]
	}
	dt, dn := now.Sub(e.times[0]), done-e.done[0]
	if dt <= 0 || dn <= 0 {
		return "-"
	}
	left := time.Duration(float64(total-done) * float64(dt) / float64(dn))
	return left.Round(time.Second).String()
}

// etaDecorator shows e's estimate after "ETA ".
func etaDecorator(e *eta) decor.Decorator {
	return decor.Any(func(s decor.Statistics) string {
		return "ETA " + e.estimate(time.Now(), s.Current, s.Total)
	})
}
