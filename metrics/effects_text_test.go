package metrics_test

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/stormsim/stormsim/internal/golden"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/metrics/metricstest"
)

// withEffects gives the storm's summary an irrevocable step, an external
// effect at orders and versioned writes at db, scaled by k so parts of a
// run can sum to its whole.
func withEffects(s *metrics.Summary, k int64) {
	s.Irrevocable = &metrics.Irrevocable{Sent: 900 * k, Unknown: 37 * k}
	for i := range s.Services {
		switch s.Services[i].Name {
		case "orders":
			s.Services[i].Effects = &metrics.Effects{Sent: 1000 * k, Delivered: 940 * k, Duplicates: 12 * k, Absorbed: 60 * k}
		case "db":
			w := &metrics.VersionedWrites{Writes: 500 * k, Conflicts: 40 * k, Redone: 30 * k, LostUpdates: 7 * k, Aborted: 3 * k}
			w.ConflictRate = float64(w.Conflicts) / float64(w.Writes)
			s.Services[i].VersionedWrites = w
		}
	}
}

// The effects block is printed exactly when the summary has effects, after
// the certainty block and before the service table.
func TestFormatTextEffects(t *testing.T) {
	r := metricstest.Storm()
	var plain bytes.Buffer
	if err := metrics.FormatText(&plain, &r.Summary); err != nil {
		t.Fatal(err)
	}
	for _, word := range []string{"irrevocable", "effect", "versioned", "lost updates"} {
		if strings.Contains(plain.String(), word) {
			t.Errorf("%q in a summary without effects:\n%s", word, plain.String())
		}
	}
	withEffects(&r.Summary, 1)
	var buf bytes.Buffer
	if err := metrics.FormatText(&buf, &r.Summary); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"\neffects    irrevocable step passed by 900 intents, 37 of them unknown to their caller (4.1%): only a confirmation settles those\n",
		"\n           orders external effect sent 1000  delivered 940  duplicates 12 (deliveries beyond an intent's first)  absorbed 60\n",
		"\n           db versioned writes 500  conflicts 40 (8.0%)  redone 30  lost updates 7  aborted 3\n\nservice",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("missing %q in:\n%s", want, buf.String())
		}
	}
	golden.Check(t, "testdata/summary-effects.golden.txt", buf.Bytes())

	// Only the object present is printed.
	r = metricstest.Storm()
	r.Summary.Irrevocable = &metrics.Irrevocable{Sent: 4}
	buf.Reset()
	if err := metrics.FormatText(&buf, &r.Summary); err != nil {
		t.Fatal(err)
	}
	if out := buf.String(); !strings.Contains(out, "\neffects    irrevocable step passed by 4 intents, 0 of them") || strings.Contains(out, "external effect") || strings.Contains(out, "versioned") {
		t.Errorf("irrevocable only:\n%s", out)
	}
}

// Merging shards carries the effects: parts that each did a share of the
// run sum to the whole's counts and conflict rate, and parts without
// effects leave the merged summary without them.
func TestMergeEffects(t *testing.T) {
	for _, n := range []int{1, 2, 4} {
		parts := metricstest.StormParts(n)
		for _, p := range parts {
			withEffects(&p.Summary, 1)
		}
		got, err := metrics.Merge(parts...)
		if err != nil {
			t.Fatal(err)
		}
		var want metrics.Summary
		want.Services = append(want.Services, got.Summary.Services...)
		for i := range want.Services {
			want.Services[i].Effects, want.Services[i].VersionedWrites = nil, nil
		}
		withEffects(&want, int64(n))
		if !reflect.DeepEqual(got.Summary.Irrevocable, want.Irrevocable) {
			t.Errorf("%d parts: irrevocable %+v, want %+v", n, got.Summary.Irrevocable, want.Irrevocable)
		}
		if g, w := got.Summary.TotalEffects(), want.TotalEffects(); !reflect.DeepEqual(g, w) || g == nil {
			t.Errorf("%d parts: effects %+v, want %+v", n, g, w)
		}
		if g, w := got.Summary.TotalVersionedWrites(), want.TotalVersionedWrites(); !reflect.DeepEqual(g, w) || g == nil {
			t.Errorf("%d parts: versioned writes %+v, want %+v", n, g, w)
		}
		for i, s := range got.Summary.Services {
			if !reflect.DeepEqual(s.Effects, want.Services[i].Effects) || !reflect.DeepEqual(s.VersionedWrites, want.Services[i].VersionedWrites) {
				t.Errorf("%d parts: service %s effects %+v %+v, want %+v %+v", n, s.Name, s.Effects, s.VersionedWrites,
					want.Services[i].Effects, want.Services[i].VersionedWrites)
			}
		}
		// The parts are left as they were.
		if e := parts[0].Summary.Irrevocable; e.Sent != 900 {
			t.Errorf("merge changed part 0: %+v", e)
		}
	}
	plain, err := metrics.Merge(metricstest.StormParts(2)...)
	if err != nil {
		t.Fatal(err)
	}
	if s := plain.Summary; s.Irrevocable != nil || s.TotalEffects() != nil || s.TotalVersionedWrites() != nil {
		t.Errorf("effects appeared in a merge of parts without them: %+v", s)
	}
}
