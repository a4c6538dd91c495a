package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/tune"
)

// phaseTuneFlags are tune's per-phase mode: phase timeouts from the
// phases a load run measured, instead of one attempt timeout per hop.
type phaseTuneFlags struct {
	dir    string
	margin float64
}

func (f *phaseTuneFlags) declare(fs *pflag.FlagSet) {
	fs.StringVar(&f.dir, "phases", "", "recommend per-phase timeouts (pool, connect, TLS, first byte) and split cold from warm connections, from the load results in `DIR` (no --hops needed)")
	fs.Float64Var(&f.margin, "phase-margin", tune.DefaultPhaseMargin, "with --phases, each phase timeout is this multiple of the phase's p99")
}

func (f *phaseTuneFlags) run(w io.Writer, format string) error {
	if format != "text" && format != "json" {
		return &exitError{exitUsage, fmt.Errorf("--format: want text or json, got %q", format)}
	}
	if f.margin <= 0 {
		return &exitError{exitUsage, fmt.Errorf("--phase-margin: must be > 0, got %v", f.margin)}
	}
	res, err := metrics.Load(f.dir)
	if err != nil {
		return err
	}
	plans, err := tune.RecommendPhases(res.Summary.Edges, f.margin)
	if err != nil {
		return fmt.Errorf("--phases %s: %w", f.dir, err)
	}
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(plans)
	}
	return tune.WritePhasePlans(w, plans)
}
