package model

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/stormsim/stormsim/topology"
)

// AckMode is when a consumer acks a delivery relative to its effect.
type AckMode uint8

const (
	// AckAfterEffect applies the effect, then acks: a crash between the
	// two leaves the message unacked, so it is redelivered and applied again.
	AckAfterEffect AckMode = iota
	// AckBeforeEffect acks on receipt, then applies the effect: a crash
	// between the two loses the effect.
	AckBeforeEffect
	// AckTransactionalDedup applies the effect and records the event as
	// processed in one transaction, then acks: a redelivery finds the
	// record and only acks.
	AckTransactionalDedup
)

// ParseAckMode maps a consumes.ack value to its mode.
func ParseAckMode(s string) (AckMode, error) {
	switch s {
	case "", "after_effect":
		return AckAfterEffect, nil
	case "before_effect":
		return AckBeforeEffect, nil
	case "transactional_dedup":
		return AckTransactionalDedup, nil
	}
	return 0, fmt.Errorf("ack: must be after_effect, before_effect or transactional_dedup, got %q", s)
}

// Intent is one logical intent carried by an event: one commit of a
// publish step. It is followed while any copy of its event is waiting,
// in process or in an outbox, so its effects can be counted exactly, and
// then folded into its group's totals.
type Intent struct {
	Key     int    // ordering key, -1 when unkeyed
	Seq     uint64 // its commit's order in the topic (the event's version)
	Counted bool   // committed after warm-up
	refs    int
	effects int
	stale   bool // rejected by a version check at least once
	done    bool // the dedup record exists (transactional_dedup)
}

// NewIntent returns the intent of a commit, held by its committer (one
// reference) until Release.
func NewIntent(key int, seq uint64, counted bool) *Intent {
	return &Intent{Key: key, Seq: seq, Counted: counted, refs: 1}
}

// Hold adds a reference to in: a copy of its event on a real broker, or a
// delivery of it in process (Group keeps its own).
func (in *Intent) Hold() { in.refs++ }

// Folded reports whether nothing refers to in any more: its effects are
// counted in its consumer's Stats.
func (in *Intent) Folded() bool { return in.refs <= 0 }

// message states
const (
	msgReady uint8 = iota
	msgInflight
	msgDone
)

// Message is one copy of an event in a topic: an outbox publishing twice
// makes two messages of one intent.
type Message struct {
	in         *Intent
	deliveries int
	state      uint8
}

// Delivery is one delivery of a message, the handle its processing and its
// ack deadline report with: a report about an earlier delivery of a
// message since redelivered is stale and ignored.
type Delivery struct {
	msg *Message
	n   int
}

// Intent returns the intent the delivery carries.
func (d Delivery) Intent() *Intent { return d.msg.in }

// GroupStats are a consumer group's counters. All but the Raw ones cover
// intents committed after warm-up (Intents and the lost and duplicate
// effects counted when the intent folds); RawDeliveries and
// RawRedeliveries count every delivery, for the time series.
type GroupStats struct {
	Published, Deliveries, Redeliveries, DeadLettered int64
	Intents, Effects, LostEffects, DuplicateEffects   int64
	OutOfOrderEffects, StaleRejected                  int64
	RawDeliveries, RawRedeliveries                    int64
}

// Effects is a consumer's effect rules and accounting: its ack mode's
// effect at the end of a delivery, version checks, order per key, and each
// intent folded into Stats once nothing refers to it. Group applies it to
// the deliveries it models; package broker to a real broker's.
//
// Effects is not safe for concurrent use.
type Effects struct {
	ack          AckMode
	versionCheck bool
	last         []uint64 // per key: highest Seq applied, 0 = none (Seq starts at 1)
	Stats        GroupStats
}

// NewEffects returns the effect rules of consumer c; keys is the number
// of ordering keys its publishers spread events over (0: unkeyed).
func NewEffects(c *topology.Consume, keys int) (*Effects, error) {
	ack, err := ParseAckMode(c.Ack)
	if err != nil {
		return nil, err
	}
	return &Effects{ack: ack, versionCheck: c.VersionCheck, last: make([]uint64, keys)}, nil
}

// Ack is the consumer's ack mode.
func (e *Effects) Ack() AckMode { return e.ack }

// Group is the clock-free state machine of one topic and its consumer
// group: at-least-once delivery to Concurrency consumers, ack deadlines,
// max deliveries then a dead-letter count, optional per-key order, and the
// effect accounting per intent (Effects). The driver owns time: it
// schedules the processing's end (Finish) and the ack deadline (Expire) of
// each delivery Next hands out.
//
// A Group is not safe for concurrent use.
type Group struct {
	Effects
	concurrency   int
	maxDeliveries int
	ordered       bool
	busy          int
	ready         []*Message // FIFO; redeliveries of ordered groups go first
	locked        []bool     // ordered: the key has a message in flight
	nlocked       int
}

// NewGroup builds the group of consumer c; keys is the number of
// ordering keys its publishers spread events over (0: unkeyed).
func NewGroup(c *topology.Consume, keys int) (*Group, error) {
	e, err := NewEffects(c, keys)
	if err != nil {
		return nil, err
	}
	if c.Concurrency < 1 || c.MaxDeliveries < 1 {
		return nil, fmt.Errorf("concurrency and max_deliveries must be ≥ 1, got %d and %d", c.Concurrency, c.MaxDeliveries)
	}
	return &Group{Effects: *e, concurrency: c.Concurrency, maxDeliveries: c.MaxDeliveries, ordered: c.Ordered,
		locked: make([]bool, keys)}, nil
}

// Busy is the number of deliveries in process.
func (g *Group) Busy() int { return g.busy }

// Backlog is the number of messages waiting for a consumer.
func (g *Group) Backlog() int { return len(g.ready) }

// Publish adds a copy of in's event to the topic.
func (g *Group) Publish(in *Intent) {
	in.refs++
	if in.Counted {
		g.Stats.Published++
	}
	g.ready = append(g.ready, &Message{in: in})
}

// Release drops one reference to in (its committer's, an outbox row's, a
// message's or a delivery's), folding it when nothing refers to it any
// more: an intent never applied (and not rejected as stale) is a lost
// effect, every effect beyond the first a duplicate.
func (e *Effects) Release(in *Intent) {
	in.refs--
	if in.refs > 0 {
		return
	}
	if !in.Counted {
		return
	}
	s := &e.Stats
	s.Intents++
	if in.effects == 0 && !in.stale {
		s.LostEffects++
	}
	if in.effects > 1 {
		s.DuplicateEffects += int64(in.effects - 1)
	}
}

// Next hands a waiting message to a free consumer, or reports none. With
// ack: before_effect the message is acked at once and ack says so: the
// driver arms no ack deadline.
func (g *Group) Next() (d Delivery, acked, ok bool) {
	if g.busy >= g.concurrency || len(g.ready) == 0 {
		return Delivery{}, false, false
	}
	i := 0
	if g.ordered && len(g.locked) > 0 {
		if g.nlocked == len(g.locked) {
			return Delivery{}, false, false
		}
		for i < len(g.ready) && g.ready[i].in.Key >= 0 && g.locked[g.ready[i].in.Key] {
			i++
		}
		if i == len(g.ready) {
			return Delivery{}, false, false
		}
	}
	m := g.ready[i]
	g.ready = append(g.ready[:i], g.ready[i+1:]...)
	m.deliveries++
	m.state = msgInflight
	s := &g.Stats
	s.RawDeliveries++
	if m.in.Counted {
		s.Deliveries++
	}
	if m.deliveries > 1 {
		s.RawRedeliveries++
		if m.in.Counted {
			s.Redeliveries++
		}
	}
	g.busy++
	m.in.refs++ // the processing
	g.lock(m, true)
	d = Delivery{msg: m, n: m.deliveries}
	if g.ack == AckBeforeEffect {
		g.settle(m)
		return d, true, true
	}
	return d, false, true
}

func (g *Group) lock(m *Message, on bool) {
	if !g.ordered || m.in.Key < 0 || m.in.Key >= len(g.locked) || g.locked[m.in.Key] == on {
		return
	}
	g.locked[m.in.Key] = on
	if on {
		g.nlocked++
	} else {
		g.nlocked--
	}
}

// settle ends m: acked or dead-lettered.
func (g *Group) settle(m *Message) {
	m.state = msgDone
	g.lock(m, false)
	g.Release(m.in)
}

// current reports whether d is the delivery of its message still awaited.
func (d Delivery) current() bool { return d.msg.state == msgInflight && d.msg.deliveries == d.n }

// Finish ends the processing of d. crash says the consumer crashed at the
// boundary between effect and ack (a draw the driver made). It applies
// the effect per the ack mode and acks unless crashed or d is no longer
// awaited (its deadline passed: the broker already gave up on it). It
// reports whether the effect was applied.
func (g *Group) Finish(d Delivery, crash bool) (effect bool) {
	g.busy--
	m, in := d.msg, d.msg.in
	effect = g.Effect(in, crash)
	if !crash && g.ack != AckBeforeEffect && d.current() {
		g.settle(m)
	}
	g.Release(in) // the processing's reference
	return effect
}

// Effect is the effect of a delivery of in whose processing ended, per
// the ack mode: after_effect applies it; before_effect (acked on
// receipt) unless crash (at the boundary between effect and ack) lost it;
// transactional_dedup only if no earlier delivery recorded in as
// processed. It reports whether the effect was applied.
func (e *Effects) Effect(in *Intent, crash bool) (effect bool) {
	switch e.ack {
	case AckBeforeEffect:
		effect = !crash
	case AckAfterEffect:
		effect = true
	case AckTransactionalDedup:
		effect = !in.done
		in.done = true
	}
	if effect {
		effect = e.apply(in)
	}
	return effect
}

// apply applies in's effect, unless a version check finds it stale, and
// counts effects out of their key's order.
func (e *Effects) apply(in *Intent) bool {
	k := in.Key
	keyed := k >= 0 && k < len(e.last)
	if keyed && e.versionCheck && in.Seq < e.last[k] {
		in.stale = true
		if in.Counted {
			e.Stats.StaleRejected++
		}
		return false
	}
	in.effects++
	if in.Counted {
		e.Stats.Effects++
	}
	if keyed {
		if in.Seq < e.last[k] {
			if in.Counted {
				e.Stats.OutOfOrderEffects++
			}
		} else {
			e.last[k] = in.Seq
		}
	}
	return true
}

// Expire is d's ack deadline passing. If d is still awaited, the message
// is redelivered, or dead-lettered after max deliveries; redelivered
// reports the former.
func (g *Group) Expire(d Delivery) (redelivered bool) {
	if !d.current() {
		return false
	}
	m := d.msg
	if m.deliveries >= g.maxDeliveries {
		if m.in.Counted {
			g.Stats.DeadLettered++
		}
		g.settle(m)
		return false
	}
	m.state = msgReady
	g.lock(m, false)
	if g.ordered {
		g.ready = append(g.ready, nil)
		copy(g.ready[1:], g.ready)
		g.ready[0] = m
	} else {
		g.ready = append(g.ready, m)
	}
	return true
}

// Outbox is a producer's outbox table for one topic: rows committed with
// the producer's transaction, published in order by a publisher loop.
type Outbox struct {
	rows []outboxRow
}

type outboxRow struct {
	in      *Intent
	crashed bool
}

// Add writes a row for in (in the commit's transaction); the row holds a
// reference to in until it is marked sent.
func (o *Outbox) Add(in *Intent) {
	in.refs++
	o.rows = append(o.rows, outboxRow{in: in})
}

// Len is the number of rows not yet marked sent.
func (o *Outbox) Len() int { return len(o.rows) }

// Pass is one pass of the publisher loop: it publishes the rows in order
// to g and marks each sent, drawing crash (the probability of a crash
// between publish and mark) once per row, on its first publish. A crash
// ends the pass with the row published but unmarked: the next pass,
// after the restart, publishes it again.
func (o *Outbox) Pass(g *Group, crash func() bool) {
	o.PassTo(g.Publish, crash, g.Release)
}

// PassTo is Pass for any broker: publish puts a row's event on the topic
// (a real broker's driver retries its own failures), sent is told of each
// row marked sent.
func (o *Outbox) PassTo(publish func(*Intent), crash func() bool, sent func(*Intent)) {
	for len(o.rows) > 0 {
		r := &o.rows[0]
		publish(r.in)
		if !r.crashed && crash() {
			r.crashed = true
			return
		}
		in := r.in
		o.rows[0] = outboxRow{}
		o.rows = o.rows[1:]
		sent(in)
	}
}

// CrashBoundary names the boundary a crash fault hits.
type CrashBoundary uint8

const (
	CrashCommitPublish CrashBoundary = iota
	CrashPublishMark
	CrashEffectAck
	// CrashOwner: a write's owner at the committing service, after its
	// downstream steps and before it records the result (crash_owner).
	CrashOwner
)

// CrashProb is the probability of a crash at boundary b at time now, from
// the faults active then (independent faults combine: 1 - Π(1-p)).
func CrashProb(faults []*topology.Fault, b CrashBoundary, now time.Duration) float64 {
	q := 1.0
	for _, f := range faults {
		if now < f.At || now >= f.At+f.For {
			continue
		}
		var p float64
		switch b {
		case CrashCommitPublish:
			p = f.CrashBetweenCommitAndPublish
		case CrashPublishMark:
			p = f.CrashBetweenPublishAndMark
		case CrashEffectAck:
			p = f.CrashBetweenEffectAndAck
		case CrashOwner:
			p = f.CrashOwner
		}
		q *= 1 - p
	}
	return 1 - q
}

// Crashes draws from rng whether a crash hits boundary b at now. Without
// an active crash fault it draws nothing, so a run's streams stay as they
// were without crash faults: the simulator and serve draw alike.
func Crashes(rng *rand.Rand, faults []*topology.Fault, b CrashBoundary, now time.Duration) bool {
	p := CrashProb(faults, b, now)
	return p > 0 && rng.Float64() < p
}

// LatencyAdd is the latency the faults active at now add to a service time.
func LatencyAdd(faults []*topology.Fault, now time.Duration) time.Duration {
	var d time.Duration
	for _, f := range faults {
		if now >= f.At && now < f.At+f.For {
			d += f.LatencyAdd
		}
	}
	return d
}
