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

// simProgress shows a simulation's progress in simulated seconds. It is a
// no-op when the output is not a terminal (unless forced), so logs and
// pipes stay clean.
type simProgress struct {
	p    *mpb.Progress
	bar  *mpb.Bar
	last time.Duration
}

func newSimProgress(w io.Writer, force bool, name string) *simProgress {
	if !force && !isTerminal(w) {
		return &simProgress{}
	}
	// mpb draws nothing on a non-terminal unless told to refresh anyway.
	p := mpb.New(mpb.WithOutput(w), mpb.WithWidth(40), mpb.WithRefreshRate(150*time.Millisecond),
		mpb.ContainerOptional(mpb.WithAutoRefresh(), force))
	bar := p.AddBar(0,
		mpb.PrependDecorators(decor.Name(name+" ", decor.WCSyncSpaceR), decor.Percentage(decor.WCSyncSpace)),
		mpb.AppendDecorators(decor.Name("sim time "), decor.Current(0, "%ds"), decor.Name(" ETA "), decor.AverageETA(decor.ET_STYLE_GO)),
	)
	return &simProgress{p: p, bar: bar}
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

func (s *simProgress) finish() {
	if s.bar == nil {
		return
	}
	s.bar.SetTotal(-1, true)
	s.p.Wait()
}
