package capacity

import (
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// dataArea is the size of a panel's data area as writeTiles draws it: the
// panel less the y axis, the title and the x axis (generous estimates, so
// the legend's box in data fractions errs large).
var dataArea = struct{ w, h vg.Length }{w: 10*vg.Inch - 1.0*vg.Inch, h: 4.2*vg.Inch - 1.1*vg.Inch}

// obstacles are what a panel draws that its legend must not cover: the
// data lines and the threshold, in data coordinates (their points beyond
// the axis drawn at its edge), vertical lines across the whole area, and
// the labels of those lines, as boxes in fractions of the data area.
type obstacles struct {
	lines []plotter.XYs
	vx    []float64
	boxes []box
}

// box is a rectangle in fractions of the data area, (0, 0) bottom left.
type box struct{ x0, y0, x1, y1 float64 }

func (b box) contains(x, y float64) bool { return x >= b.x0 && x <= b.x1 && y >= b.y0 && y <= b.y1 }

func (b box) overlaps(o box) bool {
	return b.x0 <= o.x1 && o.x0 <= b.x1 && b.y0 <= o.y1 && o.y0 <= b.y1
}

// placeLegend puts p's legend, whose entries are labels, in the corner of
// the data area where it covers the fewest of ob (sampled along each line),
// preferring top right, then top left, bottom right, bottom left: the
// corner gonum picks by default is wherever it was told, whatever is drawn
// there, which is how a legend ends up over the curve it explains. The
// axes must be final (zoomed) when it is called.
func placeLegend(p *plot.Plot, labels []string, ob obstacles) {
	if len(labels) == 0 {
		return
	}
	var textW, rowH vg.Length
	for _, l := range labels {
		r := p.Legend.TextStyle.Rectangle(" " + l)
		textW, rowH = max(textW, r.Max.X), max(rowH, r.Max.Y)
	}
	margin := 0.01
	bw := float64(p.Legend.ThumbnailWidth+textW)/float64(dataArea.w) + margin
	bh := float64(rowH+p.Legend.Padding)*float64(len(labels))/float64(dataArea.h) + margin
	fx := func(x float64) float64 { return (x - p.X.Min) / (p.X.Max - p.X.Min) }
	fy := func(y float64) float64 { return min(1, max(0, (y-p.Y.Min)/(p.Y.Max-p.Y.Min))) }
	type corner struct{ top, left bool }
	best, bestHits := corner{true, false}, math.MaxInt
	for _, c := range []corner{{true, false}, {true, true}, {false, false}, {false, true}} {
		b := box{x0: 1 - bw, y0: 1 - bh, x1: 1, y1: 1}
		if c.left {
			b.x0, b.x1 = 0, bw
		}
		if !c.top {
			b.y0, b.y1 = 0, bh
		}
		hits := 0
		for _, x := range ob.vx {
			if f := fx(x); f >= b.x0 && f <= b.x1 {
				hits += 100 // a line across the whole legend
			}
		}
		for _, o := range ob.boxes {
			if b.overlaps(o) {
				hits += 100
			}
		}
		for _, l := range ob.lines {
			for i := range l {
				if b.contains(fx(l[i].X), fy(l[i].Y)) {
					hits++
				}
				if i == 0 {
					continue
				}
				// Between the points too: a segment can cross the box
				// with both ends outside it.
				const steps = 32
				for k := 1; k < steps; k++ {
					t := float64(k) / steps
					x, y := l[i-1].X+t*(l[i].X-l[i-1].X), l[i-1].Y+t*(l[i].Y-l[i-1].Y)
					if b.contains(fx(x), fy(y)) {
						hits++
					}
				}
			}
		}
		if hits < bestHits {
			best, bestHits = c, hits
		}
		if hits == 0 {
			break
		}
	}
	p.Legend.Top, p.Legend.Left = best.top, best.left
}
