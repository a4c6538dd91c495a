package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/plots"
)

func init() {
	register(&command{
		name:    "plot",
		summary: "redraw the plots and report of a saved result directory",
		usage:   "RESULT_DIR [--out DIR]",
		example: `  stormsim run retry-storm --out out/storm && stormsim plot out/storm`,
		setup: func(fs *pflag.FlagSet) func(context.Context, []string, io.Writer) error {
			out := fs.String("out", "", "write the plots to `DIR` (default: RESULT_DIR)")
			return func(_ context.Context, args []string, w io.Writer) error {
				if len(args) != 1 {
					return &exitError{exitUsage, fmt.Errorf("want one result directory, got %d arguments", len(args))}
				}
				res, err := metrics.Load(args[0])
				if err != nil {
					return err
				}
				dir := *out
				if dir == "" {
					dir = args[0]
				}
				files, err := plots.WriteAll(dir, res)
				if err != nil {
					return err
				}
				if err := plots.WriteReport(dir, res, files); err != nil {
					return err
				}
				for _, f := range files {
					fmt.Fprintln(w, f)
				}
				return nil
			}
		},
	})
}
