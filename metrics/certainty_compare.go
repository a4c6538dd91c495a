package metrics

import (
	"fmt"
	"strings"
)

// notable is the factor by which a variant's figure must differ from the
// baseline's for CertaintyVersus to mention it: smaller changes would
// crowd the line with noise.
const notable = 1.25

// CertaintyVersus says in words how a variant's convergence differs from
// the baseline's: its p99 time to certainty, its share of intents left
// unresolved (manual queue or never), its alerts and the status-query
// load it adds, each mentioned only when it changed by a factor of at
// least 1.25 (or from zero). It returns "" when nothing changed that much
// or either side has no Certainty. Compare's table and its report.html
// both print it, so the two say the same.
func CertaintyVersus(base, v *Certainty) string {
	if base == nil || v == nil {
		return ""
	}
	var out []string
	if base.Certain() > 0 && v.Certain() > 0 {
		if s, ok := factor(base.P99Ms, v.P99Ms, "lower", "higher"); ok {
			out = append(out, fmt.Sprintf("p99 to certainty%s (%s → %s ms)", s, num(base.P99Ms), num(v.P99Ms)))
		}
	}
	bs, vs := fraction(base.Unresolved(), base.Intents), fraction(v.Unresolved(), v.Intents)
	if s, ok := factor(bs, vs, "lower", "higher"); ok {
		out = append(out, fmt.Sprintf("unresolved (manual or never)%s (%s → %s)", s, pct(base.Unresolved(), base.Intents), pct(v.Unresolved(), v.Intents)))
	}
	if s, ok := factor(float64(base.Alerts), float64(v.Alerts), "fewer", "more"); ok {
		out = append(out, fmt.Sprintf("alerts%s (%d → %d)", s, base.Alerts, v.Alerts))
	}
	if s, ok := factor(float64(base.Queries), float64(v.Queries), "fewer", "more"); ok {
		out = append(out, fmt.Sprintf("status queries%s (%d → %d)", s, base.Queries, v.Queries))
	}
	return strings.Join(out, "; ")
}

// factor reports whether the change from a to b is notable and describes
// it as " 3.00× lower" (down) or " 2.50× higher" (up); a change from or to
// zero is notable and has no factor.
func factor(a, b float64, down, up string) (string, bool) {
	switch {
	case a == b, a < 0, b < 0:
		return "", false
	case a == 0, b == 0:
		return "", true
	case b >= a*notable:
		return " " + num(b/a) + "× " + up, true
	case a >= b*notable:
		return " " + num(a/b) + "× " + down, true
	}
	return "", false
}

// fraction is n / of, 0 when of is not positive.
func fraction(n, of int64) float64 {
	if of <= 0 {
		return 0
	}
	return float64(n) / float64(of)
}
