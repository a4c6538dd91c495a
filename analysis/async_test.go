package analysis

import (
	"strings"
	"testing"

	"github.com/stormsim/stormsim/metrics"
)

func TestCompareTableAsyncRows(t *testing.T) {
	plain := &metrics.Result{Summary: metrics.Summary{Services: []metrics.ServiceSummary{{Name: "a"}}}}
	withTopic := &metrics.Result{Summary: metrics.Summary{Services: []metrics.ServiceSummary{{Name: "a"},
		{Name: "b", Consumer: &metrics.ConsumerSummary{Topic: "t", LostEffects: 7, DuplicateEffects: 3, OutOfOrderEffects: 2, Redeliveries: 5}}}}}
	for _, tc := range []struct {
		name string
		cols []Column
		want []string // lines the table must hold; nil: no async line
	}{
		{"no topics", []Column{{Variant: Variant{Name: Baseline}, Result: plain}}, nil},
		{"topic in one column", []Column{{Variant: Variant{Name: Baseline}, Result: withTopic}, {Variant: Variant{Name: "v"}, Result: nil}},
			[]string{"lost effects 7 -", "duplicate effects 3 -", "out-of-order effects 2 -", "redeliveries 5 -"}},
	} {
		var b strings.Builder
		if err := (&Comparison{Scenario: "s", Columns: tc.cols}).WriteTable(&b); err != nil {
			t.Fatal(err)
		}
		lines := map[string]bool{} // each line's words, single-spaced
		for _, l := range strings.Split(b.String(), "\n") {
			lines[strings.Join(strings.Fields(l), " ")] = true
		}
		if tc.want == nil && strings.Contains(b.String(), "effects") {
			t.Errorf("%s: async lines in\n%s", tc.name, b.String())
		}
		for _, w := range tc.want {
			if !lines[w] {
				t.Errorf("%s: no line %q in\n%s", tc.name, w, b.String())
			}
		}
	}
}
