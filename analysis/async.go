package analysis

import (
	"fmt"
	"io"
	"strconv"

	"github.com/stormsim/stormsim/metrics"
)

// asyncRows are the comparison lines of the topics' effect accounting,
// summed over the consuming services; printed only when a column has one.
var asyncRows = []tableRow[metrics.ConsumerSummary]{
	{"lost effects", func(c *metrics.ConsumerSummary) string { return itoa(c.LostEffects) }},
	{"duplicate effects", func(c *metrics.ConsumerSummary) string { return itoa(c.DuplicateEffects) }},
	{"out-of-order effects", func(c *metrics.ConsumerSummary) string { return itoa(c.OutOfOrderEffects) }},
	{"redeliveries", func(c *metrics.ConsumerSummary) string { return itoa(c.Redeliveries) }},
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// consumerTotal sums a result's consumer summaries, nil when it has none
// (or no result: a failed variant).
func consumerTotal(r *metrics.Result) *metrics.ConsumerSummary {
	if r == nil {
		return nil
	}
	var sum *metrics.ConsumerSummary
	for _, s := range r.Summary.Services {
		if s.Consumer != nil {
			c := *s.Consumer
			sum = sum.Add(&c)
		}
	}
	return sum
}

// asyncTotals are the columns' consumer totals, or nil when no column has
// a topic.
func asyncTotals(cols []Column) []*metrics.ConsumerSummary {
	totals := make([]*metrics.ConsumerSummary, len(cols))
	found := false
	for i := range cols {
		totals[i] = consumerTotal(cols[i].Result)
		found = found || totals[i] != nil
	}
	if !found {
		return nil
	}
	return totals
}

// tableRow is one line of the comparison table read from a part of each
// column's result (its consumers' total, its certainty).
type tableRow[T any] struct {
	label string
	cell  func(*T) string
}

// writeTableRows adds rows to the table, labels padded to width, one cell
// per column: "-" for a column without a T; nothing when vals is nil (no
// column has one).
func writeTableRows[T any](w io.Writer, width int, vals []*T, rows []tableRow[T]) {
	if vals == nil {
		return
	}
	for _, r := range rows {
		fmt.Fprintf(w, "%*s\t", -width, r.label)
		for _, v := range vals {
			cell := "-"
			if v != nil {
				cell = r.cell(v)
			}
			fmt.Fprintf(w, "%s\t", cell)
		}
		fmt.Fprintln(w)
	}
}
