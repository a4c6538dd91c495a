package analysis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"strconv"
	"text/tabwriter"
	"unicode/utf8"

	"golang.org/x/sync/errgroup"

	"github.com/stormsim/stormsim/metrics"
)

// Comparison is one scenario run under several variants with the same seed.
type Comparison struct {
	// Scenario is the baseline scenario's name; Seed the seed every column ran.
	Scenario string
	Seed     uint64
	Columns  []Column
}

// Column is one variant's run.
type Column struct {
	Variant  Variant
	Result   *metrics.Result
	Measures Measures
}

// Compare runs each variant once with the baseline's seed, up to workers at
// a time (0: GOMAXPROCS), and returns the columns in the variants' order.
// variants[0] should be the baseline (see Variants). A run that diverged is
// kept, its status saying so; any other error stops the comparison.
func Compare(ctx context.Context, run Runner, b Builder, variants []Variant, workers int) (*Comparison, error) {
	if len(variants) == 0 {
		return nil, errors.New("compare: no variants")
	}
	base, err := b(variants[0], nil)
	if err != nil {
		return nil, fmt.Errorf("compare: variant %s: %w", variants[0].Name, err)
	}
	return CompareSeeded(ctx, run, b, variants, base.Name, base.Seed, workers)
}

// CompareSeeded is Compare with the comparison's scenario name and seed
// given rather than taken from the first variant: a shard of a comparison
// runs only some variants, each with the whole comparison's seed.
func CompareSeeded(ctx context.Context, run Runner, b Builder, variants []Variant, scenario string, seed uint64, workers int) (*Comparison, error) {
	if len(variants) == 0 {
		return nil, errors.New("compare: no variants")
	}
	c := &Comparison{Scenario: scenario, Seed: seed, Columns: make([]Column, len(variants))}
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	errs := make([]error, len(variants))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	for i, v := range variants {
		g.Go(func() error {
			if err := gctx.Err(); err != nil {
				errs[i] = err // stopped while this variant waited for a worker
				return err
			}
			res, err := runVariant(gctx, run, b, v, c.Seed)
			if err != nil && stoppedBySibling(ctx, gctx, err) {
				return nil // another variant's failure stopped it; that one is reported
			}
			if err != nil {
				errs[i] = fmt.Errorf("compare: variant %s: %w", v.Name, err)
				return errs[i]
			}
			c.Columns[i] = Column{Variant: v, Result: res, Measures: MeasuresOf(res)}
			return nil
		})
	}
	_ = g.Wait() // errs holds every failure, to report them in column order
	// Report the first failure in column order, not in finishing order.
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return nil, err
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return c, nil
}

// stoppedBySibling reports whether err is only the cancellation of the
// group's context gctx by another variant's failure, rather than a failure
// of its own or the caller's ctx ending.
func stoppedBySibling(ctx, gctx context.Context, err error) bool {
	if ctx.Err() != nil || gctx.Err() == nil {
		return false
	}
	return errors.Is(err, context.Canceled) || errors.Is(err, context.Cause(gctx))
}

func runVariant(ctx context.Context, run Runner, b Builder, v Variant, seed uint64) (*metrics.Result, error) {
	sc, err := b(v, nil)
	if err != nil {
		return nil, err
	}
	sc.Seed = seed
	res, err := run.Run(ctx, sc)
	if res == nil {
		if err == nil {
			err = errors.New("runner returned no result")
		}
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	return res, nil
}

// NoDataOr formats x with prec decimals, or "-" when it is NaN: a measure
// the run has no data for (the latency of a run in which nothing
// succeeded), which must not read as 0.
func NoDataOr(x float64, prec int) string {
	if math.IsNaN(x) {
		return "-"
	}
	return strconv.FormatFloat(x, 'f', prec, 64)
}

// tableRows are the lines of the comparison table.
var tableRows = []struct {
	label string
	cell  func(m *Measures) string
}{
	{"goodput (req/s)", func(m *Measures) string { return strconv.FormatFloat(m.GoodputRPS, 'f', 1, 64) }},
	{"offered", func(m *Measures) string { return strconv.FormatInt(m.Offered, 10) }},
	{"succeeded", func(m *Measures) string { return strconv.FormatInt(m.Succeeded, 10) }},
	{"failed", func(m *Measures) string { return strconv.FormatInt(m.Failed, 10) }},
	{"unknown", func(m *Measures) string { return strconv.FormatInt(m.Unknown, 10) }},
	{"p99 latency (ms)", func(m *Measures) string { return NoDataOr(m.P99Ms, 1) }},
	{"max amplification", func(m *Measures) string { return strconv.FormatFloat(m.Amplification, 'f', 2, 64) + "x" }},
	{"peak queue", func(m *Measures) string { return strconv.FormatInt(m.PeakQueue, 10) }},
	{"duplicates", func(m *Measures) string { return strconv.FormatInt(m.Duplicates, 10) }},
	{"status", func(m *Measures) string { return string(m.Status) }},
}

// WriteTable prints the comparison side by side: one column per variant,
// one line per measure, then what each variant changed.
func (c *Comparison) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "scenario %s, seed %d (all columns share the seed: same arrivals and service times)\n\n", c.Scenario, c.Seed)
	// Right-aligned numbers, left-aligned labels: pad the labels by hand.
	width := 0
	for _, r := range tableRows {
		width = max(width, utf8.RuneCountInString(r.label))
	}
	async := asyncTotals(c.Columns) // nil without topics: the table as before
	if async != nil {
		for _, r := range asyncRows {
			width = max(width, utf8.RuneCountInString(r.label))
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%*s\t", -width, "")
	for _, col := range c.Columns {
		fmt.Fprintf(tw, "%s\t", col.Variant.Name)
	}
	fmt.Fprintln(tw)
	for _, r := range tableRows {
		fmt.Fprintf(tw, "%*s\t", -width, r.label)
		for i := range c.Columns {
			fmt.Fprintf(tw, "%s\t", r.cell(&c.Columns[i].Measures))
		}
		fmt.Fprintln(tw)
	}
	writeAsyncRows(tw, width, async)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	for _, col := range c.Columns {
		v := col.Variant
		switch {
		case v.Name == Baseline:
			fmt.Fprintf(w, "%s: the scenario as written\n", v.Name)
		case v.File != "":
			fmt.Fprintf(w, "%s: %s (seed replaced by %d)", v.Name, v.File, c.Seed)
			for _, s := range v.Sets {
				fmt.Fprintf(w, " %s", s)
			}
			fmt.Fprintln(w)
		default:
			fmt.Fprintf(w, "%s:", v.Name)
			for _, s := range v.Sets {
				fmt.Fprintf(w, " %s", s)
			}
			_, err := fmt.Fprintln(w)
			if err != nil {
				return err
			}
		}
	}
	return nil
}
