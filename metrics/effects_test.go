package metrics

import "testing"

// Merging shards sums the effect counts exactly and recomputes the rate;
// nil parts leave the sum nil, so summaries without effects stay so.
func TestEffectsAdd(t *testing.T) {
	var e *Effects
	if e = e.Add(nil); e != nil {
		t.Errorf("nil + nil = %+v, want nil", e)
	}
	e = e.Add(&Effects{Sent: 2, Delivered: 2, Duplicates: 1}).Add(&Effects{Sent: 3, Delivered: 1, Absorbed: 2})
	if want := (Effects{Sent: 5, Delivered: 3, Duplicates: 1, Absorbed: 2}); *e != want {
		t.Errorf("effects sum = %+v, want %+v", *e, want)
	}

	var w *VersionedWrites
	w = w.Add(&VersionedWrites{Writes: 10, Conflicts: 2, LostUpdates: 2, ConflictRate: 0.2}).
		Add(&VersionedWrites{Writes: 30, Conflicts: 6, Redone: 5, Aborted: 1, ConflictRate: 0.2})
	if want := (VersionedWrites{Writes: 40, Conflicts: 8, Redone: 5, LostUpdates: 2, Aborted: 1, ConflictRate: 0.2}); *w != want {
		t.Errorf("versioned writes sum = %+v, want %+v", *w, want)
	}

	var ir *Irrevocable
	ir = ir.Add(&Irrevocable{Sent: 3, Unknown: 1}).Add(nil).Add(&Irrevocable{Sent: 1})
	if want := (Irrevocable{Sent: 4, Unknown: 1}); *ir != want {
		t.Errorf("irrevocable sum = %+v, want %+v", *ir, want)
	}
}
