package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/stormsim/stormsim/experiments"
)

func init() {
	register(&command{
		name:    "validate",
		summary: "check a scenario and report every problem with its line",
		usage:   "SCENARIO... [--set path=value]...",
		example: `  stormsim validate experiments/retry-storm.yaml
  stormsim validate my.yaml --set services.db.workers=4`,
		new: func() subcommand { return new(validateCommand) },
	})
	register(&command{
		name:    "experiments",
		summary: "list the canned experiments (run one with 'stormsim run NAME')",
		new:     func() subcommand { return experimentsCommand{} },
	})
}

// validateCommand is `stormsim validate`: the overrides laid over every
// scenario it checks.
type validateCommand struct {
	sets []string
}

func (c *validateCommand) flags(fs *pflag.FlagSet) {
	fs.StringArrayVar(&c.sets, "set", nil, "override a scenario value: `path=value` (repeatable)")
}

// run loads each scenario and prints its problems or a one-line summary.
func (c *validateCommand) run(_ context.Context, args []string, w io.Writer) error {
	if len(args) == 0 {
		return &exitError{exitUsage, fmt.Errorf("want at least one scenario")}
	}
	bad := 0
	for _, a := range args {
		sc, err := loadScenario(a, c.sets)
		if err != nil {
			fmt.Fprintln(w, err)
			bad++
			continue
		}
		fmt.Fprintf(w, "%s: ok (%s: %s, %s)\n", a, sc.Name, plural(len(sc.Services), "service"), plural(len(sc.Faults), "fault"))
		for _, warn := range sc.Warnings() {
			if !strings.HasPrefix(warn, "hint: ") {
				warn = "warning: " + warn
			}
			fmt.Fprintf(w, "%s: %s\n", a, warn)
		}
	}
	if bad > 0 {
		return fmt.Errorf("%d of %d scenarios invalid", bad, len(args))
	}
	return nil
}

// experimentsCommand is `stormsim experiments`, which has no flags.
type experimentsCommand struct{}

func (experimentsCommand) flags(*pflag.FlagSet) {}

// run lists the canned experiments with their summaries.
func (experimentsCommand) run(_ context.Context, _ []string, w io.Writer) error {
	for _, n := range experiments.Names() {
		fmt.Fprintf(w, "  %-26s %s\n", n, experiments.Summary(n))
	}
	return nil
}

// plural is "1 fault", "0 faults", "3 faults".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
