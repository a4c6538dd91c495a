package main

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/spf13/pflag"

	"github.com/stormsim/stormsim/metrics"
)

// starterScenario is what `stormsim init` writes: a complete, commented
// scenario, also the example at the top of docs/scenario.md (a test keeps
// the two the same and checks that it validates and runs).
//
//go:embed starter.yaml
var starterScenario string

// defaultInitFile is where `stormsim init` writes without an argument.
const defaultInitFile = "scenario.yaml"

func init() {
	register(&command{
		name:    "init",
		summary: "write a starter scenario to FILE (default " + defaultInitFile + "; - prints it), refusing to overwrite",
		usage:   "[FILE]",
		example: `  stormsim init
  stormsim init chain.yaml && stormsim run chain.yaml
  stormsim init - | less`,
		new: func() subcommand { return initCommand{} },
	})
}

// initCommand is `stormsim init`, which has no flags.
type initCommand struct{}

func (initCommand) flags(*pflag.FlagSet) {}

func (initCommand) run(_ context.Context, args []string, w io.Writer) error {
	if len(args) > 1 {
		return &exitError{exitUsage, fmt.Errorf("want at most one FILE, got %d arguments", len(args))}
	}
	path := defaultInitFile
	if len(args) == 1 {
		path = args[0]
	}
	if path == "-" {
		_, err := io.WriteString(w, starterScenario)
		return err
	}
	err := metrics.WriteNewFileAtomic(path, func(f io.Writer) error {
		_, err := io.WriteString(f, starterScenario)
		return err
	})
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s already exists: not overwritten (name another FILE, or remove it)", path)
	}
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "wrote %s; next: stormsim validate %s, stormsim run %s, stormsim compare %s\n", path, path, path, path)
	return err
}
