package model

import (
	"time"

	"github.com/stormsim/stormsim/metrics"
)

// ReconcilePolicy is a reconciliation job resolved (topology.Reconciliation).
type ReconcilePolicy struct {
	Interval, OlderThan, CostPerItem time.Duration
	Batch, MaxTries                  int
}

// Reconciler is the committing service's reconciliation job, clock-free:
// the driver tells it which records may need it (Watch), runs a Scan every
// Interval, sends one fact query per key the scan returns, CostPerItem
// apart, and reports each answer (Resolve). A record is settled at most
// once: Resolve counts a second repair of a key as Rerepaired, which the
// store's own rule (Settle refuses a completed record) keeps at 0.
//
// Its memory is one item per record watched and not yet settled, plus the
// keys it repaired. A Reconciler is not safe for concurrent use.
type Reconciler struct {
	p        ReconcilePolicy
	items    []*reconItem
	byKey    map[string]*reconItem
	repaired map[string]bool
	batch    []string
	dropped  []string
	stats    metrics.Reconciliation
	manual   int64
}

type reconItem struct {
	key   string
	since time.Duration
	tries int
	busy  bool // its fact query is out
	gone  bool // settled or sent to the manual queue: the next Scan drops it
}

// NewReconciler returns an idle job.
func NewReconciler(p ReconcilePolicy) *Reconciler {
	return &Reconciler{p: p, byKey: map[string]*reconItem{}, repaired: map[string]bool{}}
}

// Policy returns the job's policy.
func (r *Reconciler) Policy() ReconcilePolicy { return r.p }

// Watch registers the record of key, begun at since, as one a scan may
// have to settle (its owner crashed, or it was held as UNKNOWN). Watching
// a key twice is one item.
func (r *Reconciler) Watch(key string, since time.Duration) {
	if _, ok := r.byKey[key]; ok {
		return
	}
	it := &reconItem{key: key, since: since}
	r.byKey[key] = it
	r.items = append(r.items, it)
}

// Scan runs one scan at now: it drops the items settled meanwhile by
// others (lookup says not settleable and terminal or gone), and returns up
// to Batch keys, oldest watched first, older than OlderThan and settleable
// now, whose fact queries the driver sends. The slice is reused by the
// next Scan.
func (r *Reconciler) Scan(now time.Duration, lookup func(key string) (st RecordState, settleable bool)) []string {
	r.stats.Runs++
	r.batch, r.dropped = r.batch[:0], r.dropped[:0]
	kept := r.items[:0]
	for _, it := range r.items {
		if it.gone {
			continue
		}
		if it.busy {
			kept = append(kept, it)
			continue
		}
		st, ok := lookup(it.key)
		if !ok && (st.Terminal() || st == NotFound) {
			delete(r.byKey, it.key) // settled by recovery, a commit, or gone
			r.dropped = append(r.dropped, it.key)
			continue
		}
		kept = append(kept, it)
		if ok && now-it.since >= r.p.OlderThan && len(r.batch) < r.p.Batch {
			it.busy = true
			r.stats.Items++
			r.batch = append(r.batch, it.key)
		}
	}
	clear(r.items[len(kept):])
	r.items = kept
	return r.batch
}

// Dropped lists the keys the last Scan stopped watching because they were
// settled by others or are gone (reused by the next Scan).
func (r *Reconciler) Dropped() []string { return r.dropped }

// Resolve reports the fact query's answer f for key, which a Scan
// returned: found and absent decide SUCCEEDED and FAILED_FINAL, which
// settle applies (false: the record was no longer the job's to settle);
// unknown counts a failure, and after MaxTries failures sends the record
// to the manual queue. It returns the decision applied (RecoverUnknown
// when none) and whether the record went to the manual queue.
func (r *Reconciler) Resolve(key string, f Fact, settle func(Recovery) bool) (applied Recovery, manual bool) {
	it := r.byKey[key]
	if it == nil {
		return RecoverUnknown, false
	}
	it.busy = false
	d := Recover(f, false)
	if d == RecoverUnknown {
		r.stats.Failed++
		it.tries++
		if it.tries < r.p.MaxTries {
			return RecoverUnknown, false
		}
		r.stats.ToManual++
		r.manual++
		r.drop(it)
		return RecoverUnknown, true
	}
	if !settle(d) {
		r.drop(it)
		return RecoverUnknown, false
	}
	if r.repaired[key] {
		r.stats.Rerepaired++
	} else {
		r.repaired[key] = true
		r.stats.Repaired++
	}
	r.drop(it)
	return d, false
}

// drop forgets item it (the next Scan compacts the list).
func (r *Reconciler) drop(it *reconItem) {
	delete(r.byKey, it.key)
	it.busy, it.gone = false, true
}

// Watching reports whether the job still follows key.
func (r *Reconciler) Watching(key string) bool { return r.byKey[key] != nil }

// Pending is the number of records the job still watches.
func (r *Reconciler) Pending() int { return len(r.byKey) }

// Manual is the manual queue's length: records the job could not prove.
func (r *Reconciler) Manual() int64 { return r.manual }

// Stats returns the job's counters.
func (r *Reconciler) Stats() metrics.Reconciliation { return r.stats }
