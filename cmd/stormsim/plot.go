package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/pflag"

	"github.com/stormsim/stormsim/analysis"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/plots"
)

func init() {
	register(&command{
		name:    "plot",
		summary: "redraw the plots of a saved result, sweep or comparison directory",
		usage:   "DIR [--out DIR]",
		example: `  stormsim run retry-storm --out out/storm && stormsim plot out/storm
  stormsim sweep retry-storm --param workload.rate --range 100:600:100 --out out/sweep && stormsim plot out/sweep`,
		new: func() subcommand { return new(plotCommand) },
	})
}

// plotCommand is `stormsim plot`: its flags, and the run that uses them.
type plotCommand struct {
	out string
}

// flags declares the command's flags on fs.
func (c *plotCommand) flags(fs *pflag.FlagSet) {
	fs.StringVar(&c.out, "out", "", "write the plots to `DIR` (default: the directory read)")
}

// run runs the command with the arguments left after the flags.
func (c *plotCommand) run(_ context.Context, args []string, w io.Writer) error {
	if len(args) != 1 {
		return &exitError{exitUsage, fmt.Errorf("want one directory, got %d arguments", len(args))}
	}
	dir := c.out
	if dir == "" {
		dir = args[0]
	}
	files, err := plotDir(args[0], dir)
	for _, f := range files {
		fmt.Fprintln(w, f)
	}
	return err
}

// plotDir redraws what src holds into dst: a result (summary.json) its
// plots and report; a sweep (sweep.csv) its curves; a comparison (one
// result per variant subdirectory) each variant's plots and report, and
// the overlays. It returns the files written.
func plotDir(src, dst string) ([]string, error) {
	has := func(name string) bool {
		_, err := os.Stat(filepath.Join(src, name))
		return err == nil
	}
	switch {
	case has(metrics.SummaryFile):
		return plotResult(src, dst)
	case has("sweep.csv"):
		return plotSweep(src, dst)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		return nil, err
	}
	var variants []string
	for _, e := range ents {
		if e.IsDir() && has(filepath.Join(e.Name(), metrics.SummaryFile)) {
			variants = append(variants, e.Name())
		}
	}
	if len(variants) == 0 {
		return nil, fmt.Errorf("%s: nothing to plot: no result (summary.json), sweep (sweep.csv) or comparison (VARIANT/summary.json)", src)
	}
	// The baseline first, as compare writes it.
	slices.SortStableFunc(variants, func(a, b string) int {
		switch {
		case a == b:
			return 0
		case a == analysis.Baseline:
			return -1
		case b == analysis.Baseline:
			return 1
		}
		return 0
	})
	results := map[string]*metrics.Result{}
	var files []string
	for _, v := range variants {
		res, err := metrics.Load(filepath.Join(src, v))
		if err != nil {
			return files, err
		}
		results[v] = res
		out, err := plotResultTo(res, filepath.Join(dst, v))
		files = append(files, out...)
		if err != nil {
			return files, fmt.Errorf("variant %s: %w", v, err)
		}
	}
	out, err := writeOverlays(dst, results[variants[0]].Summary.Scenario, results, variants)
	return append(files, out...), err
}

// plotResult redraws a result directory's plots and report.
func plotResult(src, dst string) ([]string, error) {
	res, err := metrics.Load(src)
	if err != nil {
		return nil, err
	}
	return plotResultTo(res, dst)
}

func plotResultTo(res *metrics.Result, dst string) ([]string, error) {
	files, err := plots.WriteAll(dst, res)
	if err != nil {
		return files, err
	}
	if err := plots.WriteReport(dst, res, files); err != nil {
		return files, err
	}
	return append(files, filepath.Join(dst, plots.ReportFile)), nil
}

// plotSweep redraws a sweep directory's curves from its sweep.csv.
func plotSweep(src, dst string) ([]string, error) {
	name := filepath.Join(src, "sweep.csv")
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rows, err := analysis.ReadRows(name, f)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s: no units to plot", name)
	}
	if _, err := os.Stat(filepath.Join(src, partialFile)); !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: a partial sweep (see %s): merge or finish it first", src, partialFile)
	}
	var values []string
	for _, r := range rows {
		for len(values) <= r.Point {
			values = append(values, "")
		}
		values[r.Point] = r.Value
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return nil, err
	}
	return writeSweepPlots(dst, analysis.AggregateRows(rows), values)
}
