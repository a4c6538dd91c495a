package plots

import (
	"testing"

	"github.com/stormsim/stormsim/metrics"
)

func TestColorsConsistent(t *testing.T) {
	r := &metrics.Result{Summary: metrics.Summary{Services: []metrics.ServiceSummary{{Name: "gw"}, {Name: "orders"}, {Name: "db"}}}}
	a, b := NewColors(r), NewColors(r)
	seen := map[any]string{}
	for _, s := range []string{"gw", "orders", "db"} {
		if a.Of(s) != b.Of(s) {
			t.Errorf("%s has two colours", s)
		}
		if prev, ok := seen[a.Of(s)]; ok {
			t.Errorf("%s and %s share a colour", s, prev)
		}
		seen[a.Of(s)] = s
	}
	if a.Of("gw->db") != a.Of("db") {
		t.Error("an edge does not take its callee's colour")
	}
	// A name outside the summary gets a fresh colour, then keeps it.
	if c := a.Of("cache"); c != a.Of("cache") || seen[c] != "" {
		t.Error("unknown name: unstable or reused colour")
	}
}
