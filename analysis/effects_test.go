package analysis

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stormsim/stormsim/internal/golden"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/metrics/metricstest"
)

// effectsComparison is a baseline whose payments pass an irrevocable step,
// whose e-mails go out without a key and whose db writes blindly, against
// a variant that deduplicates and redoes on conflict, and one without
// effects at all.
func effectsComparison() *Comparison {
	base, keyed := metricstest.Storm(), metricstest.Storm()
	base.Summary.Irrevocable = &metrics.Irrevocable{Sent: 900, Unknown: 37}
	keyed.Summary.Irrevocable = &metrics.Irrevocable{Sent: 900, Unknown: 37}
	for i, v := range base.Summary.Services {
		switch v.Name {
		case "orders":
			base.Summary.Services[i].Effects = &metrics.Effects{Sent: 1000, Delivered: 1000, Duplicates: 64}
			keyed.Summary.Services[i].Effects = &metrics.Effects{Sent: 1000, Delivered: 936, Absorbed: 64}
		case "db":
			base.Summary.Services[i].VersionedWrites = &metrics.VersionedWrites{Writes: 500, Conflicts: 40, LostUpdates: 40, ConflictRate: 0.08}
			keyed.Summary.Services[i].VersionedWrites = &metrics.VersionedWrites{Writes: 530, Conflicts: 45, Redone: 42, Aborted: 3, ConflictRate: 45.0 / 530}
		}
	}
	cols := []Column{{Variant: Variant{Name: Baseline}, Result: base}, {Variant: Variant{Name: "keyed", Sets: []string{"services.orders.external_effect.dedupe=true"}}, Result: keyed},
		{Variant: Variant{Name: "plain", Sets: []string{"services.orders.external_effect=off"}}, Result: metricstest.Storm()}}
	return syntheticComparison(cols)
}

// Compare shows the effects when any variant has them, "-" where a
// variant has none, in the table and the JSON alike.
func TestCompareEffectsGolden(t *testing.T) {
	c := effectsComparison()
	var b bytes.Buffer
	if err := c.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"irrevocable, unknown of sent  37 of 900  37 of 900         -\n",
		"effect duplicates                    64          0         -\n",
		"lost updates                         40          0         -\n",
		"write conflict rate                8.0%       8.5%         -\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	golden.Check(t, "testdata/compare-effects.txt", b.Bytes())

	var js bytes.Buffer
	if err := c.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var got ComparisonJSON
	if err := json.Unmarshal(js.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if v := got.Variants; v[0].Effects == nil || v[0].Effects.Duplicates != 64 || v[1].VersionedWrites == nil || v[1].VersionedWrites.Redone != 42 ||
		v[0].Irrevocable == nil || v[0].Irrevocable.Unknown != 37 || v[2].Effects != nil || v[2].VersionedWrites != nil || v[2].Irrevocable != nil {
		t.Errorf("compare JSON effects: %+v", v)
	}

	// Without effects in any column, no effect line.
	plain := testCompare(t)
	b.Reset()
	if err := plain.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "effect") || strings.Contains(b.String(), "lost updates") {
		t.Errorf("effects in a comparison without them:\n%s", b.String())
	}
}

// A group of effect lines is printed only when some variant has its
// object: versioned writes alone bring no irrevocable or external-effect
// lines.
func TestCompareEffectsOnlyPresent(t *testing.T) {
	c := effectsComparison()
	for _, col := range c.Columns {
		col.Result.Summary.Irrevocable = nil
		for i := range col.Result.Summary.Services {
			col.Result.Summary.Services[i].Effects = nil
		}
	}
	var b bytes.Buffer
	if err := c.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, "lost updates") || strings.Contains(out, "irrevocable") || strings.Contains(out, "effect duplicates") {
		t.Errorf("want only the versioned-write lines:\n%s", out)
	}
}
