package plots

import (
	"math"
	"strconv"

	"gonum.org/v1/plot"
)

// niceTicks labels a linear axis at round steps (1, 2, 2.5 or 5 × 10ⁿ)
// giving about six labels, with unlabelled minor ticks between them, and
// prints labels without trailing zeros: "250", not "250.00".
type niceTicks struct{}

// Ticks implements plot.Ticker.
func (niceTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) || math.IsInf(hi-lo, 0) {
		return []plot.Tick{{Value: lo, Label: formatTick(lo, 0)}}
	}
	step := niceStep((hi - lo) / 6)
	minor := step / 5
	if m := step / math.Pow(10, math.Floor(math.Log10(step))); m == 2.5 {
		minor = step / 5
	} else if m == 2 {
		minor = step / 4
	}
	var ticks []plot.Tick
	for i := math.Ceil(lo / minor); i*minor <= hi+minor*1e-9; i++ {
		v := i * minor
		if major := math.Round(v / step); math.Abs(v-major*step) < minor*1e-6 {
			v = major * step
			ticks = append(ticks, plot.Tick{Value: v, Label: formatTick(v, step)})
		} else {
			ticks = append(ticks, plot.Tick{Value: v})
		}
	}
	return ticks
}

// niceStep returns the round number ≥ x among 1, 2, 2.5, 5 × 10ⁿ.
func niceStep(x float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= x*(1-1e-9) {
			return m * p
		}
	}
	return 10 * p
}

// formatTick prints v with as many decimals as step needs.
func formatTick(v, step float64) string {
	if math.Abs(v) < step*1e-9 {
		v = 0
	}
	prec := 0
	if step > 0 && step < 1 {
		prec = int(math.Ceil(-math.Log10(step) - 1e-9))
		if s := strconv.FormatFloat(step, 'f', -1, 64); len(s) > 2+prec {
			prec = len(s) - 2
		}
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}
