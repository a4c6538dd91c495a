package analysis

import (
	"fmt"
	"strconv"

	"github.com/stormsim/stormsim/metrics"
)

// effectTotals is one column's irrevocable steps, external effects and
// versioned writes, summed over its services; a nil field is one the
// variant does not have.
type effectTotals struct {
	irrevocable *metrics.Irrevocable
	effects     *metrics.Effects
	writes      *metrics.VersionedWrites
}

// The comparison lines of what the writes did beyond the request's own
// outcome, one group per object: a group is printed only when a column
// has its object, "-" in a column without it.
var (
	irrevocableRows = []tableRow[effectTotals]{{"irrevocable, unknown of sent", func(t *effectTotals) string {
		if t.irrevocable == nil {
			return "-"
		}
		return fmt.Sprintf("%d of %d", t.irrevocable.Unknown, t.irrevocable.Sent)
	}}}
	externalRows = []tableRow[effectTotals]{{"effect duplicates", func(t *effectTotals) string {
		if t.effects == nil {
			return "-"
		}
		return itoa(t.effects.Duplicates)
	}},
		{"effects absorbed by key", func(t *effectTotals) string {
			if t.effects == nil {
				return "-"
			}
			return itoa(t.effects.Absorbed)
		}}}
	versionedRows = []tableRow[effectTotals]{{"lost updates", func(t *effectTotals) string {
		if t.writes == nil {
			return "-"
		}
		return itoa(t.writes.LostUpdates)
	}},
		{"write conflict rate", func(t *effectTotals) string {
			if t.writes == nil {
				return "-"
			}
			return strconv.FormatFloat(100*t.writes.ConflictRate, 'f', 1, 64) + "%"
		}},
		{"writes aborted", func(t *effectTotals) string {
			if t.writes == nil {
				return "-"
			}
			return itoa(t.writes.Aborted)
		}}}
)

// effectRowsOf returns the effect lines to print for ts: the groups whose
// object some column has (nil when ts is).
func effectRowsOf(ts []*effectTotals) []tableRow[effectTotals] {
	var ir, ex, vw bool
	for _, t := range ts {
		if t != nil {
			ir, ex, vw = ir || t.irrevocable != nil, ex || t.effects != nil, vw || t.writes != nil
		}
	}
	var rows []tableRow[effectTotals]
	for _, g := range []struct {
		has  bool
		rows []tableRow[effectTotals]
	}{{ir, irrevocableRows}, {ex, externalRows}, {vw, versionedRows}} {
		if g.has {
			rows = append(rows, g.rows...)
		}
	}
	return rows
}

// effectsOf returns each run column's effect totals, or nil when no
// column has effects, so comparisons without them read as before.
func effectsOf(cols []Column) []*effectTotals {
	out := make([]*effectTotals, len(cols))
	found := false
	for i := range cols {
		r := cols[i].Result
		if r == nil || cols[i].Measures.NotRun {
			continue
		}
		t := effectTotals{r.Summary.Irrevocable, r.Summary.TotalEffects(), r.Summary.TotalVersionedWrites()}
		if t.irrevocable != nil || t.effects != nil || t.writes != nil {
			out[i] = &t
			found = true
		}
	}
	if !found {
		return nil
	}
	return out
}
