package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"

	"github.com/stormsim/stormsim/audit"
	"github.com/stormsim/stormsim/inputfile"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/topology"
)

func init() {
	register(&command{
		name:    "audit",
		summary: "check that a real service's POST is safe to retry: lost replies, concurrent keys, payload reuse, tenants, amplification",
		usage:   "SPEC.yaml [--format text|json] [--out FILE] [--log FILE]",
		example: `  stormsim audit examples/orders/audit.yaml
  stormsim audit audit.yaml --format json --out audit.json --log proxy.jsonl
Exit status: 0 every check held, 5 a check was violated, 6 a target did not answer or a check could not finish, 2 a bad spec or flag.`,
		new: func() subcommand { return new(auditCommand) },
	})
}

// auditCommand is `stormsim audit`: its flags, and the run that uses them.
type auditCommand struct {
	format string
	out    string
	log    string
}

func (c *auditCommand) flags(fs *pflag.FlagSet) {
	fs.StringVar(&c.format, "format", "text", "output: text (a verdict table, then the evidence of each violation) or json")
	fs.StringVar(&c.out, "out", "", "also write the JSON report to `FILE` (atomically)")
	fs.StringVar(&c.log, "log", "", "write the proxies' records, one JSON line per request, to `FILE` (atomically, when the audit ends)")
}

func (c *auditCommand) run(ctx context.Context, args []string, w io.Writer) (err error) {
	if len(args) != 1 {
		return &exitError{exitUsage, fmt.Errorf("want one spec file, got %d arguments", len(args))}
	}
	if c.format != "text" && c.format != "json" {
		return &exitError{exitUsage, fmt.Errorf("--format: want text or json, got %q", c.format)}
	}
	data, err := inputfile.Read(args[0], topology.MaxFileSize)
	if err != nil {
		return &exitError{exitUsage, err}
	}
	spec, err := topology.ParseAuditSpec(args[0], data)
	if err != nil {
		return &exitError{exitUsage, err}
	}
	lg, err := openProxyLog(c.log, w)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, lg.close(w)) }()
	rep, err := audit.Run(ctx, audit.Options{Spec: spec, Log: lg.w, Progress: func(name string) {
		fmt.Fprintf(os.Stderr, "audit: %s\n", name)
	}})
	switch {
	case errors.Is(err, audit.ErrTarget):
		return &exitError{exitTarget, err}
	case rep == nil && err != nil:
		return err
	}
	if c.out != "" {
		if werr := metrics.WriteFileAtomic(c.out, rep.WriteJSON); werr != nil {
			return errors.Join(err, werr)
		}
	}
	if c.format == "json" {
		err = errors.Join(err, rep.WriteJSON(w))
	} else {
		err = errors.Join(err, rep.WriteText(w))
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%w: the checks done so far are reported", errInterrupted)
	}
	if err != nil {
		return err
	}
	switch rep.Status {
	case audit.StatusViolated:
		return &exitError{exitViolated, errors.New("a check was violated (exit 5)")}
	case audit.StatusIncomplete:
		return &exitError{exitTarget, errors.New("a check could not finish (exit 6)")}
	}
	return nil
}
