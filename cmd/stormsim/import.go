package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/spf13/pflag"

	"github.com/stormsim/stormsim/traces"
)

func init() {
	register(&command{
		name:    "import",
		summary: "build a scenario from OpenTelemetry (OTLP JSON) or Jaeger JSON traces",
		usage:   "traces FILE... [--out scenario.yaml]",
		example: `  stormsim load experiments/retry-storm.yaml --traces storm.otlp.json
  stormsim import traces storm.otlp.json --out imported.yaml
  stormsim import traces jaeger-export.json          # scenario on stdout, summary on stderr`,
		new: func() subcommand { return new(importCommand) },
	})
}

// importCommand is `stormsim import traces`.
type importCommand struct {
	out  string
	name string
}

// flags declares the command's flags on fs.
func (c *importCommand) flags(fs *pflag.FlagSet) {
	fs.StringVar(&c.out, "out", "", "write the scenario to `FILE` (and own-time samples beside it); default: stdout, summary on stderr")
	fs.StringVar(&c.name, "name", "imported", "the scenario's name")
}

// run imports the files and writes the scenario and the summary.
func (c *importCommand) run(ctx context.Context, args []string, w io.Writer) error {
	if len(args) == 0 || args[0] != "traces" {
		return &exitError{exitUsage, errors.New("want: import traces FILE [FILE]")}
	}
	if len(args) == 1 {
		return &exitError{exitUsage, errors.New("import traces: want at least one trace file")}
	}
	defer debug.SetGCPercent(debug.SetGCPercent(traces.ImportGCPercent))
	o, err := traces.ImportContext(ctx, args[1:], c.out, c.name)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%w: nothing written (%v)", errInterrupted, err)
		}
		return err
	}
	if c.out == "" {
		if _, err := o.WriteTo(w); err != nil {
			return err
		}
		_, err = io.WriteString(os.Stderr, o.Summary)
		return err
	}
	if err := o.Write(c.out); err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "wrote %s\n%s", c.out, o.Summary)
	return err
}
