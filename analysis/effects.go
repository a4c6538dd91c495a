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
	irrevocableRows = []tableRow[effectTotals]{
		{"irrevocable, unknown of sent", irrevocableCell(func(ir *metrics.Irrevocable) string { return fmt.Sprintf("%d of %d", ir.Unknown, ir.Sent) })},
	}
	externalRows = []tableRow[effectTotals]{
		{"effect duplicates", externalCell(func(e *metrics.Effects) string { return itoa(e.Duplicates) })},
		{"effects absorbed by key", externalCell(func(e *metrics.Effects) string { return itoa(e.Absorbed) })},
	}
	versionedRows = []tableRow[effectTotals]{
		{"lost updates", versionedCell(func(w *metrics.VersionedWrites) string { return itoa(w.LostUpdates) })},
		{"write conflict rate", versionedCell(func(w *metrics.VersionedWrites) string {
			return strconv.FormatFloat(100*w.ConflictRate, 'f', 1, 64) + "%"
		})},
		{"writes aborted", versionedCell(func(w *metrics.VersionedWrites) string { return itoa(w.Aborted) })},
	}
)

// cellOf reads a line's cell from the object get picks out of a column's
// totals, "-" when the column has none.
func cellOf[T any](get func(*effectTotals) *T, f func(*T) string) func(*effectTotals) string {
	return func(t *effectTotals) string {
		if o := get(t); o != nil {
			return f(o)
		}
		return "-"
	}
}

func irrevocableCell(f func(*metrics.Irrevocable) string) func(*effectTotals) string {
	return cellOf(func(t *effectTotals) *metrics.Irrevocable { return t.irrevocable }, f)
}

func externalCell(f func(*metrics.Effects) string) func(*effectTotals) string {
	return cellOf(func(t *effectTotals) *metrics.Effects { return t.effects }, f)
}

func versionedCell(f func(*metrics.VersionedWrites) string) func(*effectTotals) string {
	return cellOf(func(t *effectTotals) *metrics.VersionedWrites { return t.writes }, f)
}

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
