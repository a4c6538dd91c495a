package analysis

import (
	"fmt"
	"io"
	"strconv"

	"github.com/stormsim/stormsim/metrics"
)

// asyncRows are the comparison lines of the topics' effect accounting,
// summed over the consuming services; printed only when a column has one.
var asyncRows = []struct {
	label string
	cell  func(c *metrics.ConsumerSummary) int64
}{
	{"lost effects", func(c *metrics.ConsumerSummary) int64 { return c.LostEffects }},
	{"duplicate effects", func(c *metrics.ConsumerSummary) int64 { return c.DuplicateEffects }},
	{"out-of-order effects", func(c *metrics.ConsumerSummary) int64 { return c.OutOfOrderEffects }},
	{"redeliveries", func(c *metrics.ConsumerSummary) int64 { return c.Redeliveries }},
}

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

// writeAsyncRows adds the async lines to the table, labels padded to
// width; nothing without totals.
func writeAsyncRows(w io.Writer, width int, totals []*metrics.ConsumerSummary) {
	if totals == nil {
		return
	}
	for _, r := range asyncRows {
		fmt.Fprintf(w, "%*s\t", -width, r.label)
		for _, t := range totals {
			cell := "-"
			if t != nil {
				cell = strconv.FormatInt(r.cell(t), 10)
			}
			fmt.Fprintf(w, "%s\t", cell)
		}
		fmt.Fprintln(w)
	}
}
