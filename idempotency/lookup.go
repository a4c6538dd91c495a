package idempotency

import (
	"errors"
	"fmt"
	"time"
)

// This file holds what convergence after an unknown outcome needs of the
// store: a query by key (Lookup), an owner or a recovery task handing a
// record to reconciliation (Hold), and a recovery or reconciliation task
// settling a record whose owner is gone (Settle).

// State is a key's record as a query by key sees it.
type State uint8

const (
	// Absent: the store holds nothing for the key (never begun, aborted,
	// or forgotten after its tombstone).
	Absent State = iota
	// Processing: an owner holds the key; Record.LeaseLive says whether
	// its lease still runs.
	Processing
	// Completed: the key's result is saved (Record.Result).
	Completed
	// Held: the record's outcome is unknown and handed to reconciliation:
	// it has no owner, and no arrival takes it over.
	Held
	// Gone: the record outlived its retention; only its tombstone is left.
	Gone
	numStates
)

var stateNames = [...]string{"absent", "processing", "completed", "held", "gone"}

// String returns the state's lower-case name.
func (s State) String() string {
	if s < numStates {
		return stateNames[s]
	}
	return fmt.Sprintf("state(%d)", s)
}

// Record is what Lookup finds for a key.
type Record struct {
	State State
	// Result is the saved result of a Completed record.
	Result Result
	// Began is when the record's current owner began (Processing, Held,
	// Completed).
	Began time.Duration
	// LeaseLive: a Processing record's owner may still commit.
	LeaseLive bool
}

// ErrLeased is returned by Hold (without a fence) and Settle for a record
// whose owner's lease still runs: the owner may yet commit.
var ErrLeased = errors.New("idempotency: the owner's lease still runs")

// Lookup answers a query by key at now without changing the record: the
// status endpoint of a committing service.
func (s *Store) Lookup(now time.Duration, scope, key string) Record {
	now = s.advance(now)
	i, ok := s.idx[recKey{scope, key}]
	if !ok {
		return Record{}
	}
	r := &s.recs[i]
	began := r.expires - s.cfg.Retention
	switch r.st {
	case tombstone:
		return Record{State: Gone}
	case completed:
		return Record{State: Completed, Result: r.result, Began: began}
	case held:
		return Record{State: Held, Began: began}
	}
	return Record{State: Processing, Began: began, LeaseLive: now < r.leaseUntil}
}

// Hold hands the PROCESSING record of key to reconciliation: its outcome
// is unknown (the owner's downstream call timed out, or recovery could not
// tell). With fence > 0 the owner holding fence hands it over (errors as
// Commit's); with fence 0 a recovery task does, once the lease ended
// (ErrLeased before). A held record answers InProgress to every arrival
// until Settle.
func (s *Store) Hold(now time.Duration, scope, key string, fence uint64) error {
	r, err := s.unowned(now, scope, key, fence)
	if err != nil {
		return err
	}
	r.st, r.fence = held, 0
	s.stats.Holds++
	return nil
}

// Settle completes the record of key with result on behalf of a recovery
// or reconciliation task: the record is PROCESSING past its lease (its
// owner is gone) or held. It fails with ErrLeased while the lease runs,
// ErrCompleted for a completed record (a second repair), ErrExpired after
// retention and ErrNoRecord without a record; the owner's late commit is
// refused afterwards (ErrFenced), so the key completes once.
func (s *Store) Settle(now time.Duration, scope, key string, result Result) error {
	r, err := s.unowned(now, scope, key, 0)
	if err != nil {
		return err
	}
	r.st, r.fence, r.result = completed, 0, result
	s.stats.Settles++
	return nil
}

// unowned returns key's record for a task acting without the owner
// (fence 0: the lease must be over, or the record held) or as the owner
// holding fence.
func (s *Store) unowned(now time.Duration, scope, key string, fence uint64) (*record, error) {
	now = s.advance(now)
	i, ok := s.idx[recKey{scope, key}]
	if !ok {
		return nil, ErrNoRecord
	}
	r := &s.recs[i]
	switch {
	case r.st == tombstone:
		return nil, ErrExpired
	case r.st == completed:
		return nil, ErrCompleted
	case r.st == held:
		if fence != 0 {
			return nil, ErrFenced
		}
		return r, nil
	case fence != 0 && r.fence != fence:
		s.stats.Fenced++
		return nil, ErrFenced
	case fence == 0 && now < r.leaseUntil:
		return nil, ErrLeased
	}
	return r, nil
}
