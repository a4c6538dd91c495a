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
		new:     func() subcommand { return new(plotCommand) },
	})
}

// plotCommand is `stormsim plot`: its flags, and the run that uses them.
type plotCommand struct {
	out string
}

// flags declares the command's flags on fs.
func (c *plotCommand) flags(fs *pflag.FlagSet) {
	fs.StringVar(&c.out, "out", "", "write the plots to `DIR` (default: RESULT_DIR)")
}

// run runs the command with the arguments left after the flags.
func (c *plotCommand) run(_ context.Context, args []string, w io.Writer) error {
	if len(args) != 1 {
		return &exitError{exitUsage, fmt.Errorf("want one result directory, got %d arguments", len(args))}
	}
	res, err := metrics.Load(args[0])
	if err != nil {
		return err
	}
	dir := c.out
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
