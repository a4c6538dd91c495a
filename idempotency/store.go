package idempotency

import (
	"errors"
	"fmt"
	"time"
)

// Decision tells the caller of Begin what to do with an arriving request.
type Decision uint8

const (
	// Execute: the caller is now the key's owner. It performs the effect and
	// then calls Commit with the returned fence (or Abort if it failed before
	// the effect).
	Execute Decision = iota
	// Replay: the key is completed; return the saved result without
	// executing again.
	Replay
	// InProgress: another owner holds a live lease on the key. Answer
	// "in progress"; the caller may retry after InProgressRetryAfter.
	InProgress
	// Conflict: the key was used with a different payload digest. Answer
	// with an error that is never retried.
	Conflict
	// Expired: the key's record outlived its retention and only a tombstone
	// is left. The request is a late replay: report it, do not execute it.
	Expired
	// Full: the key is new but every record slot holds a live record.
	// Refuse the request (retryable later); no live record is ever evicted.
	Full
	numDecisions
)

var decisionNames = [...]string{"execute", "replay", "in_progress", "conflict", "expired", "full"}

// String returns the decision's lower-case name.
func (d Decision) String() string {
	if d < numDecisions {
		return decisionNames[d]
	}
	return fmt.Sprintf("decision(%d)", d)
}

// Result is the saved response of a completed key, replayed to duplicates.
// Status is the caller's code (an HTTP status, or an outcome class in the
// simulator); Body is an optional payload.
type Result struct {
	Status int
	Body   string
}

// Errors returned by Commit and Abort. They are returned unwrapped, so the
// simulator's hot path does not allocate; compare with errors.Is.
var (
	// ErrFenced: the fence is not the key's current owner's: a newer owner
	// took the key over after this one's lease expired.
	ErrFenced = errors.New("idempotency: fenced: a newer owner holds the key")
	// ErrCompleted: the key was already committed by this owner.
	ErrCompleted = errors.New("idempotency: key already committed")
	// ErrExpired: the key's retention passed; only its tombstone is left, so
	// the result can no longer be recorded.
	ErrExpired = errors.New("idempotency: key expired before commit")
	// ErrNoRecord: the store holds nothing for the key: it was aborted,
	// forgotten after its tombstone period, or never begun.
	ErrNoRecord = errors.New("idempotency: no record for key")
)

// Stats counts a store's decisions and commits since it was created, and
// the records it holds now.
type Stats struct {
	// Executes counts Execute decisions; Takeovers counts the subset that
	// took a key over from an owner whose lease had expired.
	Executes, Takeovers int64
	Replays, InProgress int64
	Conflicts, Expired  int64
	Full                int64
	// Commits counts successful commits; Fenced counts commits and aborts
	// refused with ErrFenced; Aborts counts successful aborts.
	Commits, Fenced, Aborts int64
	// Holds counts records handed to reconciliation (Hold); Settles
	// records completed by a recovery or reconciliation task (Settle).
	Holds, Settles int64
	// Live and Tombstones are the records held now.
	Live, Tombstones int
}

type recKey struct{ scope, key string }

type recState uint8

const (
	processing recState = iota + 1
	completed
	tombstone
	held // unknown, handed to reconciliation (Hold): no owner, no takeover
)

// record is one key's state. Records live in a slab and are linked, by
// index, into the live list or the tombstone list, each ordered by expiry.
type record struct {
	k          recKey
	digest     uint64
	fence      uint64
	leaseUntil time.Duration
	// expires is when a live record becomes a tombstone, and when a
	// tombstone is forgotten.
	expires    time.Duration
	result     Result
	st         recState
	prev, next int32
}

// list is an intrusive doubly linked list of slab indices.
type list struct {
	head, tail int32
	n          int
}

const none = -1

// Store is an idempotency store: one record per (scope, key), created when
// the first arrival becomes the owner. Every method takes the current time
// as an argument; the store never reads a clock. Time passed to a store must
// not go backwards: an earlier now is treated as the latest seen.
//
// The zero Store is ready to use with the default Config. A Store is not
// safe for concurrent use.
type Store struct {
	cfg       Config
	idx       map[recKey]int32
	recs      []record
	free      int32 // head of the free slots, chained through next
	live      list
	tomb      list
	now       time.Duration
	lastFence uint64
	stats     Stats
}

// NewStore returns an empty store. Zero fields of c take their defaults.
func NewStore(c Config) (*Store, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	s := &Store{cfg: c}
	s.init()
	return s, nil
}

// init readies a zero or new Store: defaults, index and empty lists.
func (s *Store) init() {
	s.cfg = s.cfg.WithDefaults()
	s.idx = make(map[recKey]int32)
	s.free = none
	s.live = list{head: none, tail: none}
	s.tomb = list{head: none, tail: none}
}

// Config returns the store's configuration with defaults applied.
func (s *Store) Config() Config { return s.cfg.WithDefaults() }

// Stats returns the store's counters and current sizes.
func (s *Store) Stats() Stats {
	st := s.stats
	st.Live, st.Tombstones = s.live.n, s.tomb.n
	return st
}

// Len returns the number of records held, live and tombstones.
func (s *Store) Len() int { return s.live.n + s.tomb.n }

// Begin registers the arrival at now of a request carrying key in scope,
// whose payload hashes to digest, and decides what the caller does with it.
// fence is nonzero only with Execute: it identifies this ownership and must
// be passed to Commit or Abort. saved is set only with Replay.
func (s *Store) Begin(now time.Duration, scope, key string, digest uint64) (d Decision, fence uint64, saved Result) {
	now = s.advance(now)
	k := recKey{scope: scope, key: key}
	i, ok := s.idx[k]
	if !ok {
		if s.Len() >= s.cfg.MaxRecords {
			if s.tomb.n == 0 {
				s.stats.Full++
				return Full, 0, Result{}
			}
			s.forget(s.tomb.head)
		}
		i = s.alloc()
		s.recs[i] = record{k: k, digest: digest, st: processing, prev: none, next: none}
		s.idx[k] = i
		s.own(i, now)
		s.stats.Executes++
		return Execute, s.recs[i].fence, Result{}
	}
	r := &s.recs[i]
	switch {
	case r.st == tombstone:
		s.stats.Expired++
		return Expired, 0, Result{}
	case r.digest != digest:
		s.stats.Conflicts++
		return Conflict, 0, Result{}
	case r.st == completed:
		s.stats.Replays++
		return Replay, 0, r.result
	case now < r.leaseUntil, r.st == held, s.cfg.HoldExpired:
		// A held record waits for reconciliation; with HoldExpired an
		// expired lease waits for recovery: neither is taken over.
		s.stats.InProgress++
		return InProgress, 0, Result{}
	}
	// The owner's lease expired without a commit: take the key over.
	s.unlink(&s.live, i)
	s.own(i, now)
	s.stats.Executes++
	s.stats.Takeovers++
	return Execute, s.recs[i].fence, Result{}
}

// Commit records result as the key's saved result on behalf of the owner
// holding fence, completing the key. It fails with ErrFenced if a newer
// owner took the key over, ErrCompleted if it is already completed,
// ErrExpired if its retention passed, and ErrNoRecord if the store holds
// nothing for it. A commit after the owner's lease ended is accepted as
// long as nobody took the key over.
func (s *Store) Commit(now time.Duration, scope, key string, fence uint64, result Result) error {
	r, err := s.owned(now, scope, key, fence)
	if err != nil {
		return err
	}
	r.st = completed
	r.result = result
	s.stats.Commits++
	return nil
}

// Abort releases the key on behalf of the owner holding fence, which failed
// before performing the effect: the record is deleted, so the next arrival
// with the key becomes its owner. Errors are those of Commit.
func (s *Store) Abort(now time.Duration, scope, key string, fence uint64) error {
	r, err := s.owned(now, scope, key, fence)
	if err != nil {
		return err
	}
	i := s.idx[r.k]
	s.unlink(&s.live, i)
	s.release(i)
	s.stats.Aborts++
	return nil
}

// owned returns the record of key if fence owns it in PROCESSING.
func (s *Store) owned(now time.Duration, scope, key string, fence uint64) (*record, error) {
	s.advance(now)
	i, ok := s.idx[recKey{scope, key}]
	if !ok {
		return nil, ErrNoRecord
	}
	r := &s.recs[i]
	switch {
	case r.st == tombstone:
		return nil, ErrExpired
	case r.fence != fence || r.st == held:
		s.stats.Fenced++
		return nil, ErrFenced
	case r.st == completed:
		return nil, ErrCompleted
	}
	return r, nil
}

// advance moves the store's time to now (never backwards) and applies every
// expiry due by then: live records become tombstones, old tombstones go.
func (s *Store) advance(now time.Duration) time.Duration {
	if s.idx == nil {
		s.init()
	}
	if now < s.now {
		now = s.now
	}
	s.now = now
	for s.live.head != none && s.recs[s.live.head].expires <= now {
		i := s.live.head
		s.unlink(&s.live, i)
		r := &s.recs[i]
		r.st = tombstone
		r.result = Result{}
		r.expires += s.cfg.Tombstone
		s.pushBack(&s.tomb, i)
	}
	for s.tomb.head != none && s.recs[s.tomb.head].expires <= now {
		s.forget(s.tomb.head)
	}
	return now
}

// own makes record i owned at now by a new fence and appends it to the live
// list. Because now never decreases, appending keeps the list in expiry order.
func (s *Store) own(i int32, now time.Duration) {
	s.lastFence++
	r := &s.recs[i]
	r.fence = s.lastFence
	r.leaseUntil = now + s.cfg.Lease
	r.expires = now + s.cfg.Retention
	s.pushBack(&s.live, i)
}

// forget drops tombstone i.
func (s *Store) forget(i int32) {
	s.unlink(&s.tomb, i)
	s.release(i)
}

// release deletes record i from the index and returns its slot.
func (s *Store) release(i int32) {
	delete(s.idx, s.recs[i].k)
	s.recs[i] = record{prev: none, next: s.free}
	s.free = i
}

func (s *Store) alloc() int32 {
	if s.free != none {
		i := s.free
		s.free = s.recs[i].next
		return i
	}
	s.recs = append(s.recs, record{})
	return int32(len(s.recs) - 1)
}

func (s *Store) pushBack(l *list, i int32) {
	r := &s.recs[i]
	r.prev, r.next = l.tail, none
	if l.tail != none {
		s.recs[l.tail].next = i
	} else {
		l.head = i
	}
	l.tail = i
	l.n++
}

func (s *Store) unlink(l *list, i int32) {
	r := &s.recs[i]
	if r.prev != none {
		s.recs[r.prev].next = r.next
	} else {
		l.head = r.next
	}
	if r.next != none {
		s.recs[r.next].prev = r.prev
	} else {
		l.tail = r.prev
	}
	r.prev, r.next = none, none
	l.n--
}
