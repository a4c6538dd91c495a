package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/stormsim/stormsim/capacity"
	"github.com/stormsim/stormsim/collapse"
)

// collapseCapacityFlags are the capacity command's flags for a collapse
// objective (--slo 'collapse(LEVEL, T)<BOUND'), which the collapse package
// searches instead of the run-summary SLO search.
type collapseCapacityFlags struct {
	method  string
	horizon time.Duration
	effort  int
	prec    float64
}

func (f *collapseCapacityFlags) declare(fs *pflag.FlagSet) {
	fs.StringVar(&f.method, "collapse-method", "", "collapse SLO: ctmc or splitting (default: ctmc where the scenario's chain is exact, else splitting)")
	fs.DurationVar(&f.horizon, "collapse-horizon", 0, "collapse SLO, splitting: simulate this long and extrapolate to the SLO's horizon (default: the whole horizon)")
	fs.IntVar(&f.effort, "collapse-effort", collapse.DefaultEffort, "collapse SLO, splitting: runs per level in each batch (cheap levels get up to 5x as many)")
	fs.Float64Var(&f.prec, "collapse-precision", collapse.DefaultPrecision, "collapse SLO, splitting: target relative half-width of each point's 95% interval")
}

// runCollapse searches the highest load at which the collapse objective
// holds and prints the report.
func (c *capacityCommand) runCollapse(ctx context.Context, scenario string, w io.Writer) error {
	slo, err := collapse.ParseSLO(c.slo)
	if err != nil {
		return &exitError{exitUsage, err}
	}
	if c.col.method != "" && c.col.method != "ctmc" && c.col.method != "splitting" {
		return &exitError{exitUsage, fmt.Errorf("--collapse-method: want ctmc or splitting, got %q", c.col.method)}
	}
	base, err := loadScenario(scenario, c.sf.overrides())
	if err != nil {
		return err
	}
	kind, current, _, err := capacity.PathOf(base, c.param)
	if err != nil {
		return &exitError{exitUsage, fmt.Errorf("--param: %w", err)}
	}
	s := collapse.Search{SLO: slo, Param: c.param, Resolution: c.resolution, Method: c.col.method,
		Split: collapse.Options{Horizon: c.col.horizon, Effort: c.col.effort, Precision: c.col.prec}}
	if c.rng != "" {
		s.Lo, s.Hi, err = capacity.ParseRange(kind, c.rng)
	} else {
		s.Lo, s.Hi, err = capacity.DefaultRange(c.param, kind, current)
	}
	if err != nil {
		return &exitError{exitUsage, fmt.Errorf("--range: %w", err)}
	}
	rep, err := s.Run(ctx, base)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%w: %v", errInterrupted, err)
		}
		return err
	}
	if c.format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(rep)
	}
	return rep.WriteText(w)
}
