package metrics

// Effects counts what a service's external effect did (external_effect):
// each execution of its work sent the effect once, and the channel
// delivered it or, deduplicating by the intent's key, absorbed a repeat.
// Sent = Delivered + Absorbed; Duplicates are the deliveries beyond the
// first of an intent (a second e-mail): harm a retry did outside the system.
type Effects struct {
	Sent       int64 `json:"sent"`
	Delivered  int64 `json:"delivered"`
	Duplicates int64 `json:"duplicates"`
	Absorbed   int64 `json:"absorbed"`
}

// VersionedWrites counts a service's read-modify-writes under optimistic
// concurrency (versioned_write): writes tried, those that found the
// version changed since the read (Conflicts), and what came of them — a
// redo of the whole operation reading again (Redone), a blind write over
// the other writer's update (LostUpdates, with retry: step), or a
// conflict answered once the redos ran out (Aborted).
type VersionedWrites struct {
	Writes      int64 `json:"writes"`
	Conflicts   int64 `json:"conflicts"`
	Redone      int64 `json:"redone"`
	LostUpdates int64 `json:"lost_updates"`
	Aborted     int64 `json:"aborted"`
	// ConflictRate is Conflicts / Writes.
	ConflictRate float64 `json:"conflict_rate"`
}

// Irrevocable counts the logical requests that passed an irrevocable step
// (its first attempt sent: a payment handed to its channel), and those of
// them whose caller saw UNKNOWN: intents whose effect is under way or done
// but unconfirmed, which only a confirmation (a status query, a
// reconciliation) can settle.
type Irrevocable struct {
	Sent    int64 `json:"sent"`
	Unknown int64 `json:"unknown"`
}

// Add returns the sum of e and o, for merging the shards of a run (nil
// when both are nil): every field is a count, so the sum is exact.
func (e *Effects) Add(o *Effects) *Effects {
	if o == nil {
		return e
	}
	if e == nil {
		e = &Effects{}
	}
	e.Sent += o.Sent
	e.Delivered += o.Delivered
	e.Duplicates += o.Duplicates
	e.Absorbed += o.Absorbed
	return e
}

// Add returns the sum of w and o, for merging the shards of a run (nil
// when both are nil), with ConflictRate recomputed from the summed counts.
// Shards are independent runs, each with its own entities, so the sum is
// exact for what the shards did.
func (w *VersionedWrites) Add(o *VersionedWrites) *VersionedWrites {
	if o == nil {
		return w
	}
	if w == nil {
		w = &VersionedWrites{}
	}
	w.Writes += o.Writes
	w.Conflicts += o.Conflicts
	w.Redone += o.Redone
	w.LostUpdates += o.LostUpdates
	w.Aborted += o.Aborted
	w.ConflictRate = 0
	if w.Writes > 0 {
		w.ConflictRate = float64(w.Conflicts) / float64(w.Writes)
	}
	return w
}

// Add returns the sum of ir and o, for merging the shards of a run (nil
// when both are nil).
func (ir *Irrevocable) Add(o *Irrevocable) *Irrevocable {
	if o == nil {
		return ir
	}
	if ir == nil {
		ir = &Irrevocable{}
	}
	ir.Sent += o.Sent
	ir.Unknown += o.Unknown
	return ir
}
