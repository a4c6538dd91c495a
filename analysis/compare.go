package analysis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"strconv"
	"strings"
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
	if res.Summary.Verdict == nil {
		res.Summary.Verdict = Assess(sc, res)
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

// allLatencyRow labels the p99 over every request, shown when a column
// has it.
const allLatencyRow = "p99 latency, all (ms)"

// tableRows are the lines of the comparison table. A latency row names
// its population: the succeeded requests, or all of them (failed and
// unknown at their time to their outcome).
var tableRows = []struct {
	label string
	cell  func(m *Measures) string
}{
	{"verdict", func(m *Measures) string { return m.Verdict }},
	{"goodput (req/s)", func(m *Measures) string { return strconv.FormatFloat(m.GoodputRPS, 'f', 1, 64) }},
	{"offered", func(m *Measures) string { return strconv.FormatInt(m.Offered, 10) }},
	{"succeeded", func(m *Measures) string { return strconv.FormatInt(m.Succeeded, 10) }},
	{"failed", func(m *Measures) string { return strconv.FormatInt(m.Failed, 10) }},
	{"unknown", func(m *Measures) string { return strconv.FormatInt(m.Unknown, 10) }},
	{"p99 latency, succeeded (ms)", func(m *Measures) string { return NoDataOr(m.P99Ms, 1) }},
	{allLatencyRow, func(m *Measures) string { return NoDataOr(m.P99AllMs, 1) }},
	{"amplification, whole run", func(m *Measures) string { return strconv.FormatFloat(m.Amplification, 'f', 2, 64) + "x" }},
	{"peak amplification, interval", func(m *Measures) string {
		if math.IsNaN(m.PeakAmplification) {
			return "-"
		}
		return strconv.FormatFloat(m.PeakAmplification, 'f', 2, 64) + "x"
	}},
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
	certain := certainties(c.Columns) // nil without convergence: the table as before
	if certain != nil {
		for _, r := range certaintyRows {
			width = max(width, utf8.RuneCountInString(r.label))
		}
	}
	effects := effectsOf(c.Columns) // nil without effects: the table as before
	effectRows := effectRowsOf(effects)
	if effects != nil {
		for _, r := range effectRows {
			width = max(width, utf8.RuneCountInString(r.label))
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%*s\t", -width, "")
	for _, col := range c.Columns {
		fmt.Fprintf(tw, "%s\t", col.Variant.Name)
	}
	fmt.Fprintln(tw)
	hasAll := false
	for _, col := range c.Columns {
		hasAll = hasAll || !math.IsNaN(col.Measures.P99AllMs)
	}
	for _, r := range tableRows {
		if r.label == allLatencyRow && !hasAll {
			continue // no result has it (load mode, older results)
		}
		fmt.Fprintf(tw, "%*s\t", -width, r.label)
		for i := range c.Columns {
			m := &c.Columns[i].Measures
			cell := r.cell(m)
			if m.NotRun && r.label != "verdict" && r.label != "status" {
				cell = "-" // no figure, which must not read as a collapse
			}
			fmt.Fprintf(tw, "%s\t", cell)
		}
		fmt.Fprintln(tw)
	}
	writeTableRows(tw, width, async, asyncRows)
	writeTableRows(tw, width, certain, certaintyRows)
	writeTableRows(tw, width, effects, effectRows)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "peak amplification: %s; whole run: the busiest service's attempts over the run per request offered in it\n", metrics.PeakBasis)
	reasons := false
	for _, col := range c.Columns {
		if col.Measures.Reason != "" {
			fmt.Fprintf(w, "%s %s: %s\n", col.Variant.Name, col.Measures.Verdict, col.Measures.Reason)
			reasons = true
		}
	}
	if writeCertaintyVerdicts(w, c.Columns, certain) || reasons {
		fmt.Fprintln(w)
	}
	for _, col := range c.Columns {
		if _, err := fmt.Fprintln(w, strings.TrimSpace(col.Variant.Name+": "+c.Changes(col.Variant))); err != nil {
			return err
		}
	}
	return nil
}

// Changes says what variant v changes: "the scenario as written" for the
// baseline, else its file (run with the comparison's seed) and overrides.
func (c *Comparison) Changes(v Variant) string {
	switch {
	case v.Name == Baseline:
		return "the scenario as written"
	case v.File != "":
		s := fmt.Sprintf("%s (seed replaced by %d)", v.File, c.Seed)
		for _, set := range v.Sets {
			s += " " + set
		}
		return s
	}
	return strings.Join(v.Sets, " ")
}

// ComparisonJSON is the JSON form of a Comparison (compare.json and
// `stormsim compare --format json`): a contract like the run summary's,
// extended and never renamed.
type ComparisonJSON struct {
	Scenario string       `json:"scenario"`
	Seed     uint64       `json:"seed"`
	Variants []ColumnJSON `json:"variants"`
}

// ColumnJSON is one variant of a ComparisonJSON: what it changed, its
// verdict and its measures. Latency quantiles are over the succeeded
// requests (null when none succeeded); a variant that was not run has
// not_run set and no figures to read.
type ColumnJSON struct {
	Name string   `json:"name"`
	File string   `json:"file,omitempty"`
	Sets []string `json:"sets,omitempty"`
	// Verdict is the table's verdict cell ("recovered in 3 s", "not
	// recovered", "diverged at 12.5 s", "interrupted at 20 s", "not run");
	// Outcome its metrics.Outcome constant; Reason its one-line why.
	Verdict string         `json:"verdict"`
	Outcome string         `json:"outcome,omitempty"`
	Reason  string         `json:"reason,omitempty"`
	NotRun  bool           `json:"not_run,omitempty"`
	Status  metrics.Status `json:"status"`
	// RecoveredAfterS is how long after the trigger the variant recovered.
	RecoveredAfterS *float64 `json:"recovered_after_s,omitempty"`
	GoodputRPS      float64  `json:"goodput_rps"`
	Offered         int64    `json:"offered"`
	Succeeded       int64    `json:"succeeded"`
	Failed          int64    `json:"failed"`
	Unknown         int64    `json:"unknown"`
	P50Ms           *float64 `json:"p50_ms_succeeded"`
	P99Ms           *float64 `json:"p99_ms_succeeded"`
	// P99AllMs is over every offered request (latency_all_ms), failed and
	// unknown ones at their time to their outcome.
	P99AllMs      *float64 `json:"p99_ms_all"`
	Amplification float64  `json:"amplification"`
	// PeakAmplification is the largest attempts per request offered in one
	// interval (metrics.PeakBasis), beside the whole run's Amplification.
	PeakAmplification float64 `json:"peak_amplification"`
	PeakQueue         int64   `json:"peak_queue"`
	Duplicates        int64   `json:"duplicates"`
	// SLO is the variant judged against --slo (absent without one).
	SLO *metrics.SLOReport `json:"slo,omitempty"`
	// Certainty is the variant's convergence after UNKNOWN, the run
	// summary's certainty object (absent without convergence); Versus says
	// how it differs from the baseline's (metrics.CertaintyVersus).
	Certainty       *metrics.Certainty `json:"certainty,omitempty"`
	CertaintyVersus string             `json:"certainty_vs_baseline,omitempty"`
	// Irrevocable, Effects and VersionedWrites are the variant's
	// irrevocable steps and its services' external effects and versioned
	// writes summed (each absent when the variant has none).
	Irrevocable     *metrics.Irrevocable     `json:"irrevocable,omitempty"`
	Effects         *metrics.Effects         `json:"effects,omitempty"`
	VersionedWrites *metrics.VersionedWrites `json:"versioned_writes,omitempty"`
}

// JSON returns the comparison's JSON form.
func (c *Comparison) JSON() ComparisonJSON {
	out := ComparisonJSON{Scenario: c.Scenario, Seed: c.Seed, Variants: []ColumnJSON{}}
	num := func(x float64) *float64 {
		if math.IsNaN(x) {
			return nil
		}
		return &x
	}
	for _, col := range c.Columns {
		m := col.Measures
		j := ColumnJSON{
			Name: col.Variant.Name, File: col.Variant.File, Sets: col.Variant.Sets,
			Verdict: m.Verdict, Reason: m.Reason, NotRun: m.NotRun, Status: m.Status,
			GoodputRPS: m.GoodputRPS, Offered: m.Offered, Succeeded: m.Succeeded, Failed: m.Failed, Unknown: m.Unknown,
			P50Ms: num(m.P50Ms), P99Ms: num(m.P99Ms), P99AllMs: num(m.P99AllMs), Amplification: m.Amplification, PeakQueue: m.PeakQueue, Duplicates: m.Duplicates,
		}
		if v := col.Result.Summary.Verdict; v != nil {
			j.Outcome, j.RecoveredAfterS, j.PeakAmplification = v.Outcome, v.RecoveredAfterS, v.PeakAmplification
		}
		j.SLO = col.Result.Summary.SLO
		if !m.NotRun {
			j.Certainty = col.Result.Summary.Certainty
			j.CertaintyVersus = metrics.CertaintyVersus(c.Columns[0].Result.Summary.Certainty, j.Certainty)
			s := &col.Result.Summary
			j.Irrevocable, j.Effects, j.VersionedWrites = s.Irrevocable, s.TotalEffects(), s.TotalVersionedWrites()
		}
		out.Variants = append(out.Variants, j)
	}
	return out
}

// WriteJSON writes the comparison's JSON form, indented.
func (c *Comparison) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(c.JSON())
}
