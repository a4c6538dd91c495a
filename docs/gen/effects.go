package main

import (
	"fmt"

	"github.com/stormsim/stormsim/metrics"
)

// The experiments of effects and conflicts (issue 34, items 4 and 5),
// kept beside the docs map rather than in it.
func init() {
	docs["lost-update"] = expDoc{rows: lostUpdateRows}
}

// lostUpdateRows compares the three ways of meeting a version conflict.
func lostUpdateRows(r *results) [][3]string {
	vw := func(v string) (metrics.VersionedWrites, metrics.Requests) {
		x := r.first(v)
		w := svc(x, "accounts").VersionedWrites
		if w == nil {
			return metrics.VersionedWrites{}, x.Summary.Requests
		}
		return *w, x.Summary.Requests
	}
	step, sr := vw("baseline")
	redo, rr := vw("redo-operation")
	fail, fr := vw("fail-on-conflict")
	per := func(n int64, req metrics.Requests) string {
		return pct(float64(n) / float64(req.Offered))
	}
	return [][3]string{
		{"conflict rate, retrying the step", "1 − exp(−λw/K) ≈ 18.1 %", pct(step.ConflictRate)},
		{"lost updates, retrying the step", "every conflict", fmt.Sprintf("%d of %d transfers (%s), all answered OK", step.LostUpdates, sr.Offered, per(step.LostUpdates, sr))},
		{"lost updates, redoing the operation", "0", fmt.Sprint(redo.LostUpdates)},
		{"redos per transfer, redoing the operation", "p + p² ≈ 21 % or a little more", per(redo.Redone, rr)},
		{"failed after 3 tries, redoing the operation", "≈ p³ ≈ 0.6 %", fmt.Sprintf("%d (%s)", rr.Failed, per(rr.Failed, rr))},
		{"failing on conflict: lost / failed", "0 / nearly p", fmt.Sprintf("%d / %d (%s)", fail.LostUpdates, fr.Failed, per(fr.Failed, fr))},
	}
}
