package plots

import (
	"image/color"
	"math"
	"strconv"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/stormsim/stormsim/metrics"
)

// LatencyCDF plots the cumulative distribution of latency from the HDR
// histograms on a log time axis: the end-to-end latency of succeeded
// requests as a thick black line, and each service's attempt latency in
// its colour. A point (x, y) reads "a fraction y took at most x ms". Needs
// a non-empty Latency or ServiceLatency histogram.
func LatencyCDF(r *metrics.Result) (*plot.Plot, error) { return drawn(latencyCDFFigure(r)) }

func latencyCDFFigure(r *metrics.Result) (*figure, error) {
	if r == nil {
		return nil, ErrNoData
	}
	f := newFigure("Latency distribution (CDF)", "latency (ms, log scale)", "cumulative fraction (≤ latency)")
	if err := f.line(cdfXYs(r.Latency), "end-to-end (succeeded)", color.Black, vg.Points(2.5), false); err != nil {
		return nil, err
	}
	colors := NewColors(r)
	for _, s := range r.Summary.Services {
		if err := f.line(cdfXYs(r.ServiceLatency[s.Name]), s.Name+" attempts", colors.Of(s.Name), vg.Points(1.5), false); err != nil {
			return nil, err
		}
	}
	if f.empty() {
		return nil, ErrNoData
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, h := range append([]*hdrhistogram.Histogram{r.Latency}, serviceHists(r)...) {
		if h != nil && h.TotalCount() > 0 {
			lo = min(lo, float64(h.Min())/1000)
			hi = max(hi, float64(h.Max())/1000)
		}
	}
	lo = max(lo, 1e-3)
	f.X.Scale = plot.LogScale{}
	f.X.Tick.Marker = plot.LogTicks{Prec: -1}
	f.X.Min, f.X.Max = lo/1.5, max(hi, lo*10)*1.5
	f.Y.Min, f.Y.Max = 0, 1
	f.Y.Tick.Marker = plot.ConstantTicks(fractionTicks())
	f.Legend.Top, f.Legend.Left = false, false
	f.Legend.YOffs = vg.Points(10)
	return f, nil
}

func serviceHists(r *metrics.Result) []*hdrhistogram.Histogram {
	var out []*hdrhistogram.Histogram
	for _, s := range r.Summary.Services {
		out = append(out, r.ServiceLatency[s.Name])
	}
	return out
}

// cdfXYs returns the points of h's CDF in milliseconds: at each occupied
// bucket's upper edge, the fraction of values at or below it, joined by
// straight lines.
func cdfXYs(h *hdrhistogram.Histogram) plotter.XYs { return cdfPoints(h, false) }

// stepCDFXYs is cdfXYs drawn as steps: each occupied bucket rises from the
// fraction below it at its lower edge to the fraction at or below it at
// its upper edge, and the line stays flat between buckets. Where values
// cluster apart (the answers of a query schedule, a recovery after a
// lease) the curve jumps rather than slanting across values no one took.
func stepCDFXYs(h *hdrhistogram.Histogram) plotter.XYs { return cdfPoints(h, true) }

// cdfPoints is cdfXYs, with each bucket's lower edge too when steps.
func cdfPoints(h *hdrhistogram.Histogram, steps bool) plotter.XYs {
	if h == nil || h.TotalCount() == 0 {
		return nil
	}
	total := float64(h.TotalCount())
	var xys plotter.XYs
	var cum int64
	for _, b := range h.Distribution() {
		if b.Count == 0 {
			continue
		}
		if steps || len(xys) == 0 {
			xys = append(xys, plotter.XY{X: math.Max(float64(b.From), 1) / 1000, Y: float64(cum) / total})
		}
		cum += b.Count
		xys = append(xys, plotter.XY{X: float64(b.To+1) / 1000, Y: float64(cum) / total})
	}
	return xys
}

func fractionTicks() []plot.Tick {
	var t []plot.Tick
	for _, v := range []float64{0, 0.25, 0.5, 0.75, 0.9, 1} {
		t = append(t, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', -1, 64)})
	}
	return t
}
