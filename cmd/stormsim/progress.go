package main

import (
	"io"
	"os"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
)

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
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
	return &simProgress{progressBar: newProgressBar(w, force, 40, 150*time.Millisecond,
		mpb.PrependDecorators(decor.Name(name+" ", decor.WCSyncSpaceR), decor.Percentage(decor.WCSyncSpace)),
		mpb.AppendDecorators(decor.Name("sim time "), decor.Current(0, "%ds"), decor.Name(" ETA "), decor.AverageETA(decor.ET_STYLE_GO)),
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
		mpb.AppendDecorators(decor.Percentage(decor.WCSyncSpace), decor.Name(" ETA "), decor.AverageETA(decor.ET_STYLE_GO)),
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
