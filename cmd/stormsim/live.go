package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/stormsim/stormsim/analysis"
	"github.com/stormsim/stormsim/live"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/topology"
)

// liveFlags are --live and, where they apply, --live-speed and an
// --allow-remote of their own.
type liveFlags struct {
	addr   string
	speed  string
	wait   time.Duration
	remote bool
}

// declare declares --live; paced adds --live-speed (simulations), remote
// an --allow-remote for commands that have none.
func (f *liveFlags) declare(fs *pflag.FlagSet, paced, remote bool) {
	fs.StringVar(&f.addr, "live", "", "serve a live view of the run at `ADDR` (host:port, loopback unless --allow-remote): charts at /, server-sent events at /events")
	fs.DurationVar(&f.wait, "live-wait", 0, "with --live, wait up to this long for a first viewer before starting, to watch from the first interval")
	if paced {
		fs.StringVar(&f.speed, "live-speed", "", "with --live, pace the simulation at `SPEED` times the wall clock (e.g. 10x), to watch a storm form (default: unpaced)")
	}
	if remote {
		fs.BoolVar(&f.remote, "allow-remote", false, "allow a --live address off the loopback interface")
	}
}

// liveView is a started live view: the server and the simulation's pace.
// The zero liveView (no --live) publishes nothing and costs nothing.
type liveView struct {
	srv   *live.Server
	pacer *live.Pacer
}

// start starts the live view when --live was given, announcing its URL on
// stderr, and waits --live-wait for a viewer (less if ctx ends first);
// remote allows an address off the loopback interface.
func (f *liveFlags) start(ctx context.Context, title string, remote bool) (liveView, error) {
	if f.addr == "" {
		if f.speed != "" || f.wait != 0 {
			return liveView{}, &exitError{exitUsage, errors.New("--live-speed and --live-wait need --live ADDR")}
		}
		return liveView{}, nil
	}
	if f.wait < 0 {
		return liveView{}, &exitError{exitUsage, fmt.Errorf("--live-wait: want a duration ≥ 0, got %v", f.wait)}
	}
	var lv liveView
	if f.speed != "" {
		v, err := live.ParseSpeed(f.speed)
		if err != nil {
			return liveView{}, &exitError{exitUsage, fmt.Errorf("--live-speed: %w", err)}
		}
		lv.pacer = &live.Pacer{Speed: v}
	}
	srv, err := live.Start(live.Options{Addr: f.addr, AllowRemote: remote || f.remote, Title: title})
	if err != nil {
		return liveView{}, &exitError{exitUsage, fmt.Errorf("--live: %w", err)}
	}
	lv.srv = srv
	fmt.Fprintf(os.Stderr, "live view at %s\n", srv.URL())
	if f.wait > 0 {
		fmt.Fprintf(os.Stderr, "waiting up to %v for a viewer\n", f.wait)
		ctx, cancel := context.WithTimeout(ctx, f.wait)
		defer cancel()
		srv.WaitViewer(ctx)
	}
	return lv, nil
}

// close ends the viewers' streams, giving them a moment to receive the
// end, and stops the server.
func (lv liveView) close() {
	if lv.srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = lv.srv.Close(ctx)
}

// onRow returns the hook that publishes each interval of width iv (and
// paces the simulation to it); nil without --live, so the run pays nothing.
func (lv liveView) onRow(ctx context.Context, iv time.Duration) func(time.Duration, []string, []float64) {
	if lv.srv == nil {
		return nil
	}
	return rowHook(ctx, iv, lv.pacer, lv.srv.Row)
}

// rowHook publishes each interval of width iv, then waits for pace.
func rowHook(ctx context.Context, iv time.Duration, pace *live.Pacer, publish func(start, width time.Duration, cols []string, row []float64)) func(time.Duration, []string, []float64) {
	if iv <= 0 {
		iv = time.Second
	}
	return func(start time.Duration, cols []string, row []float64) {
		publish(start, iv, cols, row)
		pace.Wait(ctx, start+iv)
	}
}

// runRows returns, for each run of a comparison, the hook that publishes
// its intervals under its variant's name, each run paced on its own.
func (lv liveView) runRows(vn *variantNames) func(context.Context, *topology.Scenario) func(time.Duration, []string, []float64) {
	return func(ctx context.Context, sc *topology.Scenario) func(time.Duration, []string, []float64) {
		_, _, name := vn.where(sc)
		var pace *live.Pacer
		if lv.pacer != nil {
			pace = &live.Pacer{Speed: lv.pacer.Speed}
		}
		return rowHook(ctx, sc.Interval, pace, func(start, width time.Duration, cols []string, row []float64) {
			lv.srv.RunRow(name, start, width, cols, row)
		})
	}
}

// points wraps run so that every finished run is published as a point,
// placed by where (its x, the x axis' name and its line).
func (lv liveView) points(run analysis.Runner, where func(sc *topology.Scenario) (x float64, xLabel, series string)) analysis.Runner {
	if lv.srv == nil {
		return run
	}
	return analysis.RunnerFunc(func(ctx context.Context, sc *topology.Scenario) (*metrics.Result, error) {
		res, err := run.Run(ctx, sc)
		if err == nil && res != nil {
			x, label, series := where(sc)
			lv.srv.Point(live.PointOf(x, label, series, &res.Summary))
		}
		return res, err
	})
}

// variantNames wraps a builder to remember which variant built each
// scenario, so that a comparison's points are named by their variant.
type variantNames struct {
	mu    sync.Mutex
	names map[*topology.Scenario]string
	index map[string]int
}

func (vn *variantNames) wrap(b analysis.Builder, variants []analysis.Variant) analysis.Builder {
	vn.names, vn.index = map[*topology.Scenario]string{}, map[string]int{}
	for i, v := range variants {
		vn.index[v.Name] = i + 1
	}
	return func(v analysis.Variant, extra []string) (*topology.Scenario, error) {
		sc, err := b(v, extra)
		if err == nil {
			vn.mu.Lock()
			vn.names[sc] = v.Name
			vn.mu.Unlock()
		}
		return sc, err
	}
}

// where places a variant's run at its position in the list.
func (vn *variantNames) where(sc *topology.Scenario) (float64, string, string) {
	vn.mu.Lock()
	defer vn.mu.Unlock()
	name := vn.names[sc]
	return float64(vn.index[name]), "variant (as listed)", name
}
