// Command stormsim simulates retry storms in multi-hop call chains and
// drives real HTTP targets with the same policies. See README.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/stormsim/stormsim/topology"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// command is one subcommand as help lists it, with the constructor of
// its flags and run function.
type command struct {
	name    string
	summary string
	usage   string // after "stormsim NAME "
	example string
	// new returns the command's flag values, unset, for one invocation.
	new func() subcommand
}

// subcommand is one invocation of a command: the values of its flags and
// the function that runs it. Each command's file defines its type.
type subcommand interface {
	// flags declares the command's flags on fs, bound to the receiver.
	flags(fs *pflag.FlagSet)
	// run runs the command with the arguments left after the flags.
	run(ctx context.Context, args []string, out io.Writer) error
}

// commands is filled by each subcommand's file.
var commands = map[string]*command{}

func register(c *command) { commands[c.name] = c }

// errInterrupted marks a run stopped by a signal after writing partial results.
var errInterrupted = errors.New("interrupted")

// exitError carries a specific exit status.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// Exit statuses.
const (
	exitOK          = 0
	exitError1      = 1 // bad input or failure
	exitUsage       = 2
	exitDiverged    = 3 // the simulated system ran away and the run was stopped
	exitSLO         = 4 // the run completed and breached its --slo
	exitViolated    = 5 // stormsim audit: a check was violated
	exitTarget      = 6 // stormsim audit: a target did not answer, or a check could not finish
	exitInterrupted = 130
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// The first signal asks for a clean stop with partial results; it also
	// restores the default handling, so a second one ends a stuck process.
	context.AfterFunc(ctx, stop)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the single exit point: it maps errors to one line on stderr and a status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		if len(args) > 1 {
			if c, ok := commands[args[1]]; ok {
				printCommandHelp(stdout, c)
				return exitOK
			}
		}
		printHelp(stdout)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	if args[0] == "--version" {
		args = []string{"version"}
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "stormsim: unknown command %q%s (run 'stormsim help')\n", args[0], didYouMean(args[0]))
		return exitUsage
	}
	fs := pflag.NewFlagSet(c.name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	sub := c.new()
	sub.flags(fs)
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			printCommandHelp(stdout, c)
			return exitOK
		}
		fmt.Fprintf(stderr, "stormsim %s: %v (see 'stormsim help %s')\n", c.name, err, c.name)
		return exitUsage
	}
	err := sub.run(withRunID(ctx, runIDOf(c.name, fs)), fs.Args(), stdout)
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(stderr, "stormsim %s: %v\n", c.name, err)
	var ee *exitError
	switch {
	case errors.As(err, &ee):
		return ee.code
	case errors.Is(err, errInterrupted):
		return exitInterrupted
	}
	return exitError1
}

// didYouMean suggests the command a mistyped name was meant to be.
func didYouMean(name string) string {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	if s := topology.Suggest(name, names); s != "" {
		return fmt.Sprintf(" (did you mean %s?)", s)
	}
	return ""
}

func printHelp(w io.Writer) {
	fmt.Fprintf(w, "stormsim %s: simulate retry storms, and drive real services with the same policies.\n\nUsage: stormsim COMMAND [flags] [args]\n\nCommands:\n", version)
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-12s %s\n", n, commands[n].summary)
	}
	fmt.Fprintf(w, "\nRun 'stormsim help COMMAND' for a command's flags and examples.\n")
}

func printCommandHelp(w io.Writer, c *command) {
	fs := pflag.NewFlagSet(c.name, pflag.ContinueOnError)
	fs.SortFlags = false
	c.new().flags(fs)
	fmt.Fprintf(w, "Usage: stormsim %s %s\n\n%s\n", c.name, c.usage, c.summary)
	if u := fs.FlagUsages(); u != "" {
		fmt.Fprintf(w, "\nFlags:\n%s", u)
	}
	if c.example != "" {
		fmt.Fprintf(w, "\nExamples:\n%s\n", c.example)
	}
}

func init() {
	register(&command{
		name:    "version",
		summary: "print the version",
		new:     func() subcommand { return versionCommand{} },
	})
}

// versionCommand is `stormsim version`, which has no flags.
type versionCommand struct{}

func (versionCommand) flags(*pflag.FlagSet) {}

func (versionCommand) run(_ context.Context, _ []string, out io.Writer) error {
	_, err := fmt.Fprintf(out, "stormsim %s\n", version)
	return err
}
