package model

import (
	"fmt"
	"math"
	"time"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/topology"
)

// Effect is what one execution of an external effect came to at its
// channel.
type Effect uint8

const (
	// EffectDelivered: the intent's first execution, delivered.
	EffectDelivered Effect = iota
	// EffectRepeated: a repeat the channel delivered again (a second
	// e-mail): a duplicate outside the system.
	EffectRepeated
	// EffectAbsorbed: a repeat the channel deduplicated by the intent's key.
	EffectAbsorbed
)

// String returns the delivery's name.
func (d Effect) String() string {
	switch d {
	case EffectDelivered:
		return "delivered"
	case EffectRepeated:
		return "delivered_again"
	case EffectAbsorbed:
		return "absorbed"
	}
	return fmt.Sprintf("delivery(%d)", d)
}

// Channel is the clock-free rule of an external effect's channel
// (topology.ExternalEffect): given whether the intent's effect already
// executed at it, what a new execution comes to. The driver remembers per
// intent whether its effect executed (the simulator a bit of its request
// record); the channel decides, and Count adds the decision to the
// service's counts, so the accounting is written once.
//
// The zero Channel delivers every execution. It holds no state and is
// safe for concurrent use.
type Channel struct {
	dedupe bool
}

// NewChannel returns the channel of external effect e.
func NewChannel(e *topology.ExternalEffect) Channel {
	return Channel{dedupe: e.DedupesByKey()}
}

// Execute decides one execution of the effect; repeat says the intent's
// effect already executed at this channel.
func (c Channel) Execute(repeat bool) Effect {
	switch {
	case !repeat:
		return EffectDelivered
	case c.dedupe:
		return EffectAbsorbed
	}
	return EffectRepeated
}

// Count adds delivery d to counts.
func (d Effect) Count(counts *metrics.Effects) {
	counts.Sent++
	switch d {
	case EffectDelivered:
		counts.Delivered++
	case EffectRepeated:
		counts.Delivered++
		counts.Duplicates++
	case EffectAbsorbed:
		counts.Absorbed++
	}
}

// WriteFate is what a versioned write came to (Versions.Write).
type WriteFate uint8

const (
	// WriteCommitted: the version was unchanged since the read; the write
	// applied and moved the version on.
	WriteCommitted WriteFate = iota
	// WriteLost: the version had changed and only the write was retried
	// (retry: step), with the value computed from the stale read: it
	// applied over the other writer's update, which is lost.
	WriteLost
	// WriteRedo: the version had changed; the whole read-modify-write is done
	// again (retry: operation): read again, work again, write again.
	WriteRedo
	// WriteAborted: the version had changed on the last read-modify-write
	// allowed (versioned_write.attempts): the attempt answers conflict.
	WriteAborted
)

// String returns the write's name.
func (w WriteFate) String() string {
	switch w {
	case WriteCommitted:
		return "committed"
	case WriteLost:
		return "lost_update"
	case WriteRedo:
		return "redo"
	case WriteAborted:
		return "aborted"
	}
	return fmt.Sprintf("write(%d)", w)
}

// Count adds write w to counts; ConflictRate is left to Finish.
func (w WriteFate) Count(counts *metrics.VersionedWrites) {
	counts.Writes++
	switch w {
	case WriteLost:
		counts.Conflicts++
		counts.LostUpdates++
	case WriteRedo:
		counts.Conflicts++
		counts.Redone++
	case WriteAborted:
		counts.Conflicts++
		counts.Aborted++
	}
}

// Versions is the clock-free machine of a service's versioned write
// (topology.VersionedWrite): one version per entity, read when an
// attempt's work starts and checked when it writes. A write whose read
// version is still current commits and moves the version on; otherwise it
// conflicts, and the configured retry decides: retry: step writes anyway
// over the newer value (a lost update, since its value came from the stale
// read), retry: operation redoes the whole read-modify-write — the rule for
// the layer that read — until its attempts run out.
//
// Under Poisson writers at rate λ, each choosing one of K entities
// uniformly, and a constant time w between read and write, the writes that
// commit on one entity form a Poisson process of rate λ/K, so a write
// conflicts with probability 1 − exp(−λw/K) (ConflictProbability).
//
// Replicas of a service share one Versions: the entities are the data, not
// the process. The zero value is not usable: it comes from NewVersions.
// Not safe for concurrent use.
type Versions struct {
	v        []uint64
	salt     uint64
	redo     bool
	attempts int
}

// NewVersions returns the versions of cfg's entities, all at 0; the
// entity of each intent is drawn from the run's seed and the service's name.
func NewVersions(cfg *topology.VersionedWrite, seed uint64, service string) *Versions {
	if cfg.Entities < 1 {
		panic("model: NewVersions with no entity") // topology validated it
	}
	return &Versions{
		v: make([]uint64, cfg.Entities), salt: Stream(seed, "versions/"+service).Uint64(),
		redo: cfg.RedoesOperation(), attempts: cfg.Attempts,
	}
}

// Entity returns the entity intent writes: uniform over the entities, the
// same for every attempt of the intent.
func (vs *Versions) Entity(intent uint64) int {
	return int(mix64(intent^vs.salt) % uint64(len(vs.v)))
}

// Read returns the entity's current version.
func (vs *Versions) Read(entity int) uint64 { return vs.v[entity] }

// Redo is what an attempt does after its write came back WriteRedo: the
// layer that read does the whole read-modify-write again, a new read of e
// and the work computed from it, whose duration work draws (the service's
// next service time). It returns the new read version and that duration;
// the simulator schedules the work, serve sleeps it.
func (vs *Versions) Redo(e int, work func() time.Duration) (read uint64, took time.Duration) {
	return vs.v[e], work()
}

// Write decides the write of entity e by an attempt that read version read,
// on its try-th read-modify-write (from 1), and applies it if it commits.
func (vs *Versions) Write(e int, read uint64, try int) WriteFate {
	switch {
	case vs.v[e] == read:
		vs.v[e]++
		return WriteCommitted
	case !vs.redo:
		vs.v[e]++
		return WriteLost
	case try < vs.attempts:
		return WriteRedo
	}
	return WriteAborted
}

// mix64 is SplitMix64's finaliser: a bijection of the 64-bit integers
// whose outputs look uniform for consecutive inputs.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// ConflictProbability is the closed form of Versions' conflicts: the
// probability that a write conflicts when writers arrive as a Poisson
// process of rate per second, each on one of entities chosen uniformly,
// and window passes between each read and its write.
func ConflictProbability(rate float64, window time.Duration, entities int) float64 {
	return 1 - math.Exp(-rate*window.Seconds()/float64(entities))
}
