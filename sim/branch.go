package sim

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/stormsim/stormsim/topology"
)

// Trajectory is one simulation run driven an instant at a time, whose state
// can be observed between instants and branched: Snapshot names the state
// reached, Resume continues from it with fresh random streams. It serves
// rare-event estimators (multilevel splitting), which restart many runs from
// the states where earlier runs crossed a level.
//
// A snapshot is not a copy of the engine: it is the run's genealogy, the
// instants at which its random streams were reseeded and the seeds they
// got. Resume rebuilds the run from the scenario and replays that
// genealogy, which the simulator's determinism (same scenario, same seeds,
// same events) makes exact. So branching needs nothing from the engine or
// the model beyond the list of their stream sources, and stays correct
// whatever state they come to hold; its price is the replay, counted in
// Events. docs/model.md argues the choice.
//
// A Trajectory records no Result: no summary, series or histograms.
type Trajectory struct {
	m    *run
	path []branchPoint
	// replayed counts the events run to restore the start state, so that
	// Events reports the whole cost of the trajectory; inherited counts
	// those a forked trajectory's engine had run before the copy (Fork),
	// which cost it nothing.
	replayed, inherited uint64
	// forker copies the state reached for Fork, planned by the first fork
	// of it; Step forgets the plan.
	forkMu sync.Mutex
	forker *cloner
}

// branchPoint says that after every event at or before at had run, every
// stream of the run was reseeded as in a run of seed.
type branchPoint struct {
	at   time.Duration
	seed uint64
}

// Snapshot names a state a Trajectory reached: Resume rebuilds it.
type Snapshot struct {
	sc   *topology.Scenario
	path []branchPoint
	at   time.Duration
}

// At returns the simulated time of the snapshot.
func (s Snapshot) At() time.Duration { return s.at }

// Start begins a trajectory of sc, validated with defaults applied as for
// Run, at time 0 with the scenario's seed.
func Start(sc *topology.Scenario) (*Trajectory, error) {
	if sc == nil {
		return nil, errors.New("sim: nil scenario")
	}
	m, err := build(sc)
	if err != nil {
		return nil, err
	}
	m.eachCounts((*latencyCounts).useScratch) // nobody reads them
	m.startArrivals()
	return &Trajectory{m: m}, nil
}

// Resume rebuilds the state named by s and continues it with every random
// stream reseeded from seed. Two resumptions of one snapshot with the same
// seed run identically; with different seeds, independently from s on.
func Resume(s Snapshot, seed uint64) (*Trajectory, error) {
	t, err := Start(s.sc)
	if err != nil {
		return nil, err
	}
	for _, p := range s.path {
		t.m.eng.RunUntil(p.at)
		t.m.reseed(p.seed)
	}
	t.m.eng.RunUntil(s.at)
	t.m.reseed(seed)
	t.path = append(slices.Clip(s.path), branchPoint{at: s.at, seed: seed})
	t.replayed = t.m.eng.Events()
	return t, nil
}

// Snapshot names the state reached: every event at or before Now has run.
func (t *Trajectory) Snapshot() Snapshot {
	return Snapshot{sc: t.m.sc, path: slices.Clip(t.path), at: t.m.eng.Now()}
}

// Now returns the simulated time reached.
func (t *Trajectory) Now() time.Duration { return t.m.eng.Now() }

// Events returns the events run for this trajectory, its replay included
// and, for a forked one, the events before the fork excluded.
func (t *Trajectory) Events() uint64 { return t.m.eng.Events() - t.inherited }

// Past returns the events that made the state reached, since time 0:
// what resuming its snapshot would replay.
func (t *Trajectory) Past() uint64 { return t.m.eng.Events() }

// Replayed returns the events run to restore the state it resumed from.
func (t *Trajectory) Replayed() uint64 { return t.replayed }

// Step runs every event of the next instant with events, if that instant
// is at or before end, and reports whether it did. It returns false when
// nothing is left to run before end, or when the run diverged (Diverged).
func (t *Trajectory) Step(end time.Duration) bool {
	m := t.m
	if t.forker != nil && t.forker.planned {
		t.forker.reset() // the state changes: a fork must plan again
	}
	if m.halted {
		return false
	}
	if m.eng.Events() > m.maxEvents {
		m.diverge(fmt.Sprintf("more than %d events (limits.max_events)", m.maxEvents))
		return false
	}
	next, ok := m.eng.NextAt()
	if !ok || next > end {
		return false
	}
	m.eng.RunUntil(next)
	return true
}

// Close gives the trajectory's buffers back for reuse; t must not be used
// after.
func (t *Trajectory) Close() {
	t.m.releaseCounts()
	if t.forker != nil {
		t.forker.reset()
		cloners.Put(t.forker)
		t.forker = nil
	}
}

// Diverged returns why the run stopped on one of the scenario's limits, or
// "" while it has not.
func (t *Trajectory) Diverged() string {
	if t.m.diverged == nil {
		return ""
	}
	return t.m.diverged.reason
}

// Service returns the index of the named service, or -1.
func (t *Trajectory) Service(name string) int {
	for i, s := range t.m.services {
		if s.name == name {
			return i
		}
	}
	return -1
}

// System returns the attempts waiting or holding a worker at service i.
func (t *Trajectory) System(i int) int {
	c := &t.m.services[i].cm
	return c.QueueLen() + c.Busy()
}

// Queue returns the attempts waiting for a worker at service i.
func (t *Trajectory) Queue(i int) int { return t.m.services[i].cm.QueueLen() }

// Inflight returns the attempts arrived at some service and not yet
// answered or cancelled, over all services.
func (t *Trajectory) Inflight() int {
	n := 0
	for _, s := range t.m.services {
		n += s.cm.Inflight()
	}
	return n
}

// Attempts returns how many attempts have arrived at service i since time
// 0, warm-up included.
func (t *Trajectory) Attempts(i int) int64 { return t.m.services[i].ivAttempts }
