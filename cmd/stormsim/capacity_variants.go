package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/stormsim/stormsim/analysis"
	"github.com/stormsim/stormsim/capacity"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/topology"
)

// capacityVariant is one variant's capacity study.
type capacityVariant struct {
	variant analysis.Variant
	changes string
	report  *capacity.Report // nil: not run (a signal stopped the runs first)
}

// runVariants runs the capacity study once per variant (the baseline, then
// each --variant, all with the baseline's seed, as compare does), prints
// each report under its variant's name and a table of their capacities,
// and writes each variant's files under --out/VARIANT.
func (c *capacityCommand) runVariants(ctx context.Context, base *topology.Scenario, s capacity.SLO, w io.Writer) error {
	if spec, err := c.sh.Spec(os.LookupEnv); err != nil || spec.Sharded() {
		return &exitError{exitUsage, errors.New("--variant and --shard: shard one variant's search at a time")}
	}
	var flags []analysis.Variant
	for _, a := range c.variantArgs {
		v, err := analysis.ParseVariant(a)
		if err != nil {
			return &exitError{exitUsage, fmt.Errorf("--variant: %w", err)}
		}
		flags = append(flags, v)
	}
	variants, err := analysis.Variants(nil, flags)
	if err != nil {
		return &exitError{exitUsage, err}
	}
	global := c.sf.overrides()
	build := analysis.ScenarioBuilder(base, func(path string, sets []string) (*topology.Scenario, error) {
		return loadScenario(path, append(append([]string(nil), global...), sets...))
	})
	cmp := &analysis.Comparison{Scenario: base.Name, Seed: base.Seed}
	var studies []capacityVariant
	var plans []*capacity.Plan
	for _, v := range variants {
		sc, err := build(v, nil)
		if err != nil {
			return fmt.Errorf("variant %s: %w", v.Name, err)
		}
		sc.Seed = base.Seed
		if err := s.Check(sc); err != nil {
			return &exitError{exitUsage, fmt.Errorf("variant %s: %w", v.Name, err)}
		}
		plan, err := c.plan(sc, s)
		if err != nil {
			return &exitError{exitUsage, fmt.Errorf("variant %s: %w", v.Name, err)}
		}
		plans = append(plans, plan)
		studies = append(studies, capacityVariant{variant: v, changes: cmp.Changes(v)})
	}
	reps, runErr := c.runPlans(ctx, base.Name, plans)
	var usage *exitError
	if errors.As(runErr, &usage) && usage.code == exitUsage {
		return runErr
	}
	for i, rep := range reps {
		studies[i].report = rep
	}
	if err := c.emitVariants(w, studies); err != nil {
		return err
	}
	interrupted := ctx.Err() != nil
	for _, st := range studies {
		interrupted = interrupted || (st.report != nil && st.report.Interrupted)
	}
	if interrupted {
		return fmt.Errorf("%w: partial capacity reports written (%v)", errInterrupted, runErr)
	}
	return runErr
}

// emitVariants prints the variants' reports (text or one JSON document)
// and writes each under --out/VARIANT, with capacity-variants.txt.
func (c *capacityCommand) emitVariants(w io.Writer, studies []capacityVariant) error {
	var table bytes.Buffer
	writeCapacityTable(&table, studies)
	if c.format == "json" {
		doc := struct {
			Variants []capacityVariantJSON `json:"variants"`
		}{}
		for _, st := range studies {
			j := capacityVariantJSON{Name: st.variant.Name, Changes: st.changes, NotRun: st.report == nil}
			if st.report != nil {
				var b bytes.Buffer
				if err := st.report.WriteJSON(&b); err != nil {
					return err
				}
				j.Report = json.RawMessage(bytes.TrimSpace(b.Bytes()))
			}
			doc.Variants = append(doc.Variants, j)
		}
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(doc); err != nil {
			return err
		}
	} else {
		for _, st := range studies {
			fmt.Fprintf(w, "== variant %s: %s\n", st.variant.Name, st.changes)
			if st.report == nil {
				fmt.Fprintf(w, "not run (interrupted before it started)\n\n")
				continue
			}
			if err := st.report.WriteText(w); err != nil {
				return err
			}
			fmt.Fprintln(w)
		}
		if _, err := w.Write(table.Bytes()); err != nil {
			return err
		}
	}
	if c.out == "" {
		return nil
	}
	var files []string
	for _, st := range studies {
		if st.report == nil {
			continue
		}
		out, err := writeCapacity(filepath.Join(c.out, metrics.PathComponent(st.variant.Name)), st.report)
		files = append(files, out...)
		if err != nil {
			return err
		}
	}
	path := filepath.Join(c.out, "capacity-variants.txt")
	if err := metrics.WriteFileAtomic(path, func(f io.Writer) error { _, err := f.Write(table.Bytes()); return err }); err != nil {
		return err
	}
	if c.format == "text" {
		fmt.Fprintf(w, "\nwrote %s\n", joinPaths(append(files, path)))
	}
	return nil
}

// capacityVariantJSON is one variant in `capacity --variant --format json`:
// its name, what it changes, and its capacity report (absent when not run).
type capacityVariantJSON struct {
	Name    string          `json:"name"`
	Changes string          `json:"changes"`
	NotRun  bool            `json:"not_run,omitempty"`
	Report  json.RawMessage `json:"report,omitempty"`
}

// writeCapacityTable prints one line per variant: its capacity and what
// bound it.
func writeCapacityTable(w io.Writer, studies []capacityVariant) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "variant\tcapacity\tnot shown to hold at\tbound by")
	for _, st := range studies {
		if st.report == nil || st.report.Capacity == nil {
			fmt.Fprintf(tw, "%s\tnot run\t-\t-\n", st.variant.Name)
			continue
		}
		o := st.report.Capacity
		a := o.Answer()
		bound := o.Bound()
		if bound == "" {
			bound = "-"
		}
		f := o.Search.FormatValue
		fmt.Fprintf(tw, "%s\t%s (%s)\t%s\t%s\n", st.variant.Name, f(a.HoldsAt), a.Status, f(a.NotShownAt), bound)
	}
	tw.Flush()
}
