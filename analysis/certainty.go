package analysis

import (
	"fmt"
	"io"
	"strconv"

	"github.com/stormsim/stormsim/metrics"
)

// certaintyRows are the comparison lines of the writes' convergence after
// UNKNOWN; printed only when a column has a Certainty.
var certaintyRows = []tableRow[metrics.Certainty]{
	{"p50 to certainty (ms)", func(c *metrics.Certainty) string { return certainMs(c, c.P50Ms) }},
	{"p99 to certainty (ms)", func(c *metrics.Certainty) string { return certainMs(c, c.P99Ms) }},
	{"max to certainty (ms)", func(c *metrics.Certainty) string { return certainMs(c, c.MaxMs) }},
	{"resolved by query", func(c *metrics.Certainty) string { return itoa(c.ResolvedBy.Query) }},
	{"unresolved, manual or never", func(c *metrics.Certainty) string {
		if c.Intents == 0 {
			return "-"
		}
		return fmt.Sprintf("%d (%.1f%%)", c.Unresolved(), 100*float64(c.Unresolved())/float64(c.Intents))
	}},
	{"alerts", func(c *metrics.Certainty) string { return itoa(c.Alerts) }},
	{"status queries", func(c *metrics.Certainty) string { return itoa(c.Queries) }},
	{"queries per querying intent", func(c *metrics.Certainty) string { return strconv.FormatFloat(c.QueriesPerIntent, 'f', 2, 64) }},
}

// certainMs formats a time to certainty, "-" when no intent became
// certain (a 0 would read as instant).
func certainMs(c *metrics.Certainty, ms float64) string {
	if c.Certain() == 0 {
		return "-"
	}
	return strconv.FormatFloat(ms, 'f', 1, 64)
}

// certainties are the columns' Certainty, or nil when no column has one.
func certainties(cols []Column) []*metrics.Certainty {
	out := make([]*metrics.Certainty, len(cols))
	found := false
	for i := range cols {
		if r := cols[i].Result; r != nil && r.Summary.Certainty != nil && !cols[i].Measures.NotRun {
			out[i] = r.Summary.Certainty
			found = true
		}
	}
	if !found {
		return nil
	}
	return out
}

// writeCertaintyVerdicts prints, per variant, how its convergence differs
// from the baseline's (metrics.CertaintyVersus), when it notably does.
func writeCertaintyVerdicts(w io.Writer, cols []Column, cs []*metrics.Certainty) bool {
	if cs == nil || cs[0] == nil {
		return false
	}
	wrote := false
	for i := 1; i < len(cols); i++ {
		if s := metrics.CertaintyVersus(cs[0], cs[i]); s != "" {
			fmt.Fprintf(w, "%s certainty vs %s: %s\n", cols[i].Variant.Name, cols[0].Variant.Name, s)
			wrote = true
		}
	}
	return wrote
}
