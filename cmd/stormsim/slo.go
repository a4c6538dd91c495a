package main

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/stormsim/stormsim/capacity"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/topology"
)

// sloFlag is --slo on run, load and compare: an objective in capacity's
// syntax, judged against each result.
type sloFlag struct {
	expr string
	slo  capacity.SLO
}

func (f *sloFlag) declare(fs *pflag.FlagSet) {
	fs.StringVar(&f.expr, "slo", "", "judge the run against `EXPR`, e.g. 'p99<300ms,success>=99.9%' (capacity's syntax); a breach exits with status 4")
}

// parse reads the expression (a usage error when bad) and checks it names
// only services sc has.
func (f *sloFlag) parse(sc *topology.Scenario) error {
	if f.expr == "" {
		return nil
	}
	s, err := capacity.ParseSLO(f.expr)
	if err != nil {
		return &exitError{exitUsage, err}
	}
	if sc != nil {
		if err := s.Check(sc); err != nil {
			return err
		}
	}
	f.slo = s
	return nil
}

// judge sets res's slo block.
func (f *sloFlag) judge(res *metrics.Result) error {
	if f.slo == nil {
		return nil
	}
	rep, err := f.slo.Report(&res.Summary)
	if err != nil {
		return err
	}
	res.Summary.SLO = rep
	return nil
}

// sloOutcome turns a breached report into the exitSLO error, after the
// results were printed and written; err (a diverged or interrupted run)
// takes precedence.
func sloOutcome(err error, rep *metrics.SLOReport) error {
	if err != nil || rep == nil || rep.Met {
		return err
	}
	var names []string
	for _, t := range rep.Breached() {
		names = append(names, fmt.Sprintf("%s = %s", t.Term, t.ValueText))
	}
	return &exitError{exitSLO, fmt.Errorf("SLO breached: %s", strings.Join(names, ", "))}
}
