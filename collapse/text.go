package collapse

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// WriteText writes the estimate for people, one figure per line: the
// probability with its 95 % interval first, then how it was obtained. The
// JSON (encoding/json of Estimate) holds the same figures.
func (e *Estimate) WriteText(w io.Writer) error {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	within := time.Duration(e.WithinS * float64(time.Second))
	p("collapse   %s: P(%s within %v) = %s, 95%% interval [%s, %s] (%s)\n",
		e.Scenario, e.Level, within, g(e.Probability), g(e.CI95[0]), g(e.CI95[1]), e.Method)
	if len(e.Levels) > 0 {
		lv := make([]string, len(e.Levels))
		for i, l := range e.Levels {
			lv[i] = g(l)
		}
		p("levels     %s\n", strings.Join(lv, ", "))
	}
	if len(e.Efforts) > 0 {
		ef := make([]string, len(e.Efforts))
		for i, n := range e.Efforts {
			ef[i] = strconv.Itoa(n)
		}
		p("efforts    %s runs a batch\n", strings.Join(ef, ", "))
	}
	if e.PrecisionTarget > 0 {
		p("precision  ±%s of the estimate at 95%%, target ±%s", g(e.PrecisionReached), g(e.PrecisionTarget))
		if e.PrecisionReached > e.PrecisionTarget {
			p(" (not reached: see the notes)")
		}
		p("\n")
	}
	if e.Runs > 0 || e.Events > 0 {
		p("spent      %d runs, %d events", e.Runs, e.Events)
		if e.Replayed > 0 {
			p(" (%d replayed)", e.Replayed)
		}
		if e.Batches > 0 {
			p(", %d batches", e.Batches)
		}
		p("\n")
	}
	if e.States > 0 {
		p("chain      %d states\n", e.States)
	}
	if e.HorizonS > 0 {
		p("horizon    %s s simulated: P %s within it; %s passages/s", g(e.HorizonS), g(e.HorizonProbability), g(e.RatePerS))
		if e.RateCI95 != nil {
			p(" [%s, %s]", g(e.RateCI95[0]), g(e.RateCI95[1]))
		}
		p(", extrapolated to %v\n", within)
	}
	if e.MeanTimeS != nil {
		p("mean time  %s s to reach the level", g(*e.MeanTimeS))
		if e.MeanTimeNote != "" {
			p(" (%s)", e.MeanTimeNote)
		}
		p("\n")
	}
	for _, n := range e.Notes {
		p("note:      %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// g prints a probability or rate with 3 significant digits.
func g(x float64) string { return strconv.FormatFloat(x, 'g', 3, 64) }
