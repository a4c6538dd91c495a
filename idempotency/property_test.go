package idempotency

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// modelRec is the reference model's view of one key, derived from the
// documented semantics rather than from the store's data structures.
type modelRec struct {
	exists    bool // a record was created and not aborted
	digest    uint64
	fence     uint64
	began     time.Duration // current owner's Begin
	committed bool
	result    Result
	fences    []uint64 // every fence ever issued for the key, for stale calls
	// lastCommit is the owner-begin time of the last successful commit.
	lastCommit time.Duration
	hasCommit  bool
}

// runRandom drives a store with a random interleaving of Begin, Commit and
// Abort on a few keys, from many owners (some stale), and checks every
// answer against the model. It returns the decisions seen.
func runRandom(t testing.TB, seed uint64, ops int) [numDecisions]int {
	c := Config{Retention: 10 * time.Second, Lease: 2 * time.Second, Tombstone: 5 * time.Second, MaxRecords: 5}
	s, err := NewStore(c)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(seed, 0x1de))
	const nkeys = 8
	model := make([]modelRec, nkeys)
	var now time.Duration
	var lastFence uint64
	var seen [numDecisions]int
	live := func(m *modelRec) bool { return m.exists && now < m.began+c.Retention }
	inTomb := func(m *modelRec) bool {
		return m.exists && now >= m.began+c.Retention && now < m.began+c.Retention+c.Tombstone
	}
	liveCount := func() int {
		n := 0
		for i := range model {
			if live(&model[i]) {
				n++
			}
		}
		return n
	}
	for op := range ops {
		if r.IntN(3) > 0 {
			now += time.Duration(r.IntN(1500)) * time.Millisecond
		}
		k := r.IntN(nkeys)
		key := fmt.Sprint("k", k)
		m := &model[k]
		where := func() string { return fmt.Sprintf("seed %d op %d at %v key %s", seed, op, now, key) }
		switch x := r.IntN(10); {
		case x < 6: // Begin
			digest := uint64(1)
			if r.IntN(10) == 0 {
				digest = 2
			}
			d, f, saved := s.Begin(now, "svc", key, digest)
			seen[d]++
			var ok bool
			switch {
			case live(m) && digest != m.digest:
				ok = d == Conflict
			case live(m) && m.committed:
				ok = d == Replay && saved == m.result
			case live(m) && now < m.began+c.Lease:
				ok = d == InProgress
			case live(m):
				ok = d == Execute // takeover, same record
			default:
				full := liveCount() >= c.MaxRecords
				ok = (full && d == Full) || (!full && d == Execute) || (inTomb(m) && d == Expired)
			}
			if !ok {
				t.Fatalf("%s: Begin(digest %d) = %v (saved %+v); model %+v, live records %d", where(), digest, d, saved, *m, liveCount())
			}
			if d == Execute {
				if f <= lastFence {
					t.Fatalf("%s: fence %d not above %d", where(), f, lastFence)
				}
				lastFence = f
				if !live(m) {
					m.exists, m.digest, m.committed, m.result = true, digest, false, Result{}
				}
				m.fence, m.began = f, now
				m.fences = append(m.fences, f)
			} else if f != 0 {
				t.Fatalf("%s: fence %d with %v", where(), f, d)
			}
		default: // Commit or Abort by a random owner of this key, often stale
			if len(m.fences) == 0 {
				continue
			}
			f := m.fences[len(m.fences)-1]
			if r.IntN(3) == 0 {
				f = m.fences[r.IntN(len(m.fences))]
			}
			commit := x < 9
			res := Result{Status: 200 + int(f%50)}
			if commit {
				err = s.Commit(now, "svc", key, f, res)
			} else {
				err = s.Abort(now, "svc", key, f)
			}
			var ok bool
			switch {
			case live(m) && m.fence != f:
				ok = errors.Is(err, ErrFenced)
			case live(m) && m.committed:
				ok = errors.Is(err, ErrCompleted)
			case live(m):
				ok = err == nil
			case inTomb(m):
				ok = errors.Is(err, ErrExpired) || errors.Is(err, ErrNoRecord)
			default:
				ok = errors.Is(err, ErrNoRecord)
			}
			if !ok {
				t.Fatalf("%s: commit=%v fence %d: err %v; model %+v", where(), commit, f, err, *m)
			}
			if err == nil && commit {
				// At most one successful commit per key per retention period:
				// a second one needs a record begun after the first expired.
				if m.hasCommit && m.began < m.lastCommit+c.Retention {
					t.Fatalf("%s: second commit of a record begun at %v, previous commit's record began at %v", where(), m.began, m.lastCommit)
				}
				m.committed, m.result = true, res
				m.hasCommit, m.lastCommit = true, m.began
			}
			if err == nil && !commit {
				m.exists = false
			}
		}
		// No live record is ever evicted: the store holds exactly the
		// records the model says are live.
		if st := s.Stats(); st.Live != liveCount() {
			t.Fatalf("%s: store holds %d live records, model %d", where(), st.Live, liveCount())
		}
		if s.Len() > c.MaxRecords {
			t.Fatalf("%s: %d records held, max %d", where(), s.Len(), c.MaxRecords)
		}
	}
	return seen
}

func TestRandomInterleavings(t *testing.T) {
	var total [numDecisions]int
	for seed := range uint64(20) {
		seen := runRandom(t, seed, 3000)
		for d, n := range seen {
			total[d] += n
		}
	}
	// The runs must reach every decision, or they prove little.
	for d, n := range total {
		if n == 0 {
			t.Errorf("decision %v never occurred in the random runs", Decision(d))
		}
	}
	t.Logf("decisions: %v", total)
}

func FuzzStore(f *testing.F) {
	f.Add(uint64(1), uint16(500))
	f.Add(uint64(42), uint16(2000))
	f.Fuzz(func(t *testing.T, seed uint64, ops uint16) {
		runRandom(t, seed, int(ops%4000))
	})
}
