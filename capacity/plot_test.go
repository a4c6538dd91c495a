package capacity

import (
	"context"
	"errors"
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"

	"github.com/stormsim/stormsim/analysis"
)

func TestWritePlots(t *testing.T) {
	s := Search{Param: "workload.rate", Lo: 100, Hi: 900, Resolution: 20, Replicas: 2, SLO: fakeSLO(), Orientation: HoldsBelow,
		Detector: analysis.DetectorConfig{RecoveryBound: 5 * time.Second}}
	for _, faults := range []bool{false, true} {
		out, err := Run(context.Background(), fakeRunner(0.05, nil), fakeBuilder(faults, 300), s, Options{})
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		files, err := out.WritePlots(dir)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{PlotSLO, PlotUtilization}
		if faults {
			want = append(want, PlotRecovery)
		}
		if len(files) != len(want) {
			t.Fatalf("faults %v: wrote %v, want %v", faults, files, want)
		}
		for i, name := range want {
			if files[i] != filepath.Join(dir, name+".png") {
				t.Errorf("file %d: %s, want %s.png", i, files[i], name)
			}
			f, err := os.Open(files[i])
			if err != nil {
				t.Fatal(err)
			}
			img, err := png.Decode(f)
			f.Close()
			if err != nil {
				t.Fatalf("%s: %v", files[i], err)
			}
			// 960 pixels wide; the SLO plot has one 403-pixel panel per term.
			b := img.Bounds()
			if b.Dx() != 960 || (name == PlotSLO && b.Dy() != 2*int(math.Round(4.2*96))) {
				t.Errorf("%s: %v", name, b)
			}
		}
		if !faults {
			if _, err := out.RecoveryPlot(); !errors.Is(err, ErrNoRecovery) {
				t.Errorf("RecoveryPlot without faults: %v, want ErrNoRecovery", err)
			}
		}
	}
}

// A lower-bound term whose worst point lies far below the zoomed axis is
// drawn at the bottom edge, labelled with its value, never dropped.
func TestZoomMarksClippedPoints(t *testing.T) {
	p := plot.New()
	xys := plotter.XYs{{X: 100, Y: 100}, {X: 200, Y: 99.5}, {X: 800, Y: 40}}
	if err := zoom(p, xys, 99, false, func(v float64) string { return fmt.Sprintf("%g%%", v) }); err != nil {
		t.Fatal(err)
	}
	if p.Y.Min <= 40 {
		t.Fatalf("axis min %g: the test needs the 40%% point outside the zoomed axis", p.Y.Min)
	}
	c := clipped(p, xys, func(v float64) string { return fmt.Sprintf("%g%%", v) })
	if len(c.Labels) != 1 || c.Labels[0] != "40% (clipped)" || c.XYs[0] != (plotter.XY{X: 800, Y: p.Y.Min}) {
		t.Errorf("clipped = %v %q, want (800, %g) \"40%% (clipped)\"", c.XYs, c.Labels, p.Y.Min)
	}
}

// TestPlaceLegend (issue 36 item 14): the legend goes to the first corner,
// top right first, that no line, vertical line or label crosses; when every
// corner is crossed, to the one crossed least.
func TestPlaceLegend(t *testing.T) {
	type corner struct{ top, left bool }
	for _, tc := range []struct {
		name string
		ob   obstacles
		want corner
	}{
		{"nothing drawn", obstacles{}, corner{true, false}},
		{"a line through the top right", obstacles{lines: []plotter.XYs{{{X: 0, Y: 0}, {X: 100, Y: 100}}}}, corner{true, true}},
		{"rising at the right, capacity at the left", obstacles{lines: []plotter.XYs{{{X: 0, Y: 5}, {X: 60, Y: 5}, {X: 100, Y: 100}}}, vx: []float64{10}},
			corner{false, false}},
		{"a label in the top right", obstacles{boxes: []box{{x0: 0.9, y0: 0.9, x1: 1, y1: 1}}}, corner{true, true}},
		{"a segment crossing a corner with both ends outside it", obstacles{lines: []plotter.XYs{{{X: 80, Y: 100}, {X: 100, Y: 80}}, {{X: 0, Y: 80}, {X: 20, Y: 100}}, {{X: 80, Y: 0}, {X: 100, Y: 20}}}},
			corner{false, true}},
	} {
		p := plot.New()
		p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 100, 0, 100
		placeLegend(p, []string{"a legend entry"}, tc.ob)
		if got := (corner{p.Legend.Top, p.Legend.Left}); got != tc.want {
			t.Errorf("%s: legend top %v left %v, want %+v", tc.name, got.top, got.left, tc.want)
		}
	}
}

// A vertical line's label near the right edge is written left of it, so
// "recovery bound" at the end of a run is not cut off.
func TestVlineLabelStaysInside(t *testing.T) {
	p := plot.New()
	p.X.Min, p.X.Max = 0, 60
	for _, x := range []float64{10, 59} {
		b := vline{X: x, Label: "recovery bound"}.labelBox(p)
		if b.x0 < 0 || b.x1 > 1 {
			t.Errorf("line at %g: label box %+v leaves the data area", x, b)
		}
	}
}
