package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/model"
)

// Message headers of a published event: the intent it carries (its id is
// its commit's order in the topic, the event's version) and its key.
const (
	headerIntent = "Stormsim-Intent"
	headerKey    = "Stormsim-Key"
)

// Conn is a client connection to a NATS server with JetStream.
type Conn struct {
	nc *nats.Conn
	js jetstream.JetStream
}

// Connect connects to the NATS server at url.
func Connect(url string) (*Conn, error) {
	nc, err := nats.Connect(url)
	if err != nil {
		return nil, fmt.Errorf("broker: connect %s: %w", url, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("broker: %w", err)
	}
	return &Conn{nc: nc, js: js}, nil
}

// Close closes the connection.
func (c *Conn) Close() { c.nc.Close() }

// runs numbers the streams this process creates, so that two runs on one
// server (an external one, or two clusters in a test) never share one.
var runs atomic.Uint64

// natsName maps s to a name JetStream accepts for a stream or a durable
// consumer: letters, digits and underscores.
func natsName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, s)
}

// Topic is one scenario topic as a JetStream stream, with the effect
// accounting of its intents: model.Group's rules (lost, duplicate and
// out-of-order effects per intent, version checks) applied to what the
// real broker delivers. An intent is followed while its committer, an
// outbox row, an unsettled message (neither acked nor dead-lettered) or a
// delivery in process refers to it, then folded into the summary. Safe
// for concurrent use.
type Topic struct {
	name    string
	stream  string
	subject string
	conn    *Conn

	// mu guards what follows. Publish holds it across the round trip to
	// the server, so that a message is known by its stream sequence
	// before its ack (or dead letter) can settle it.
	mu      sync.Mutex
	seq     uint64
	intents map[uint64]*intent // not yet folded
	msgs    map[uint64]*intent // unsettled messages by stream sequence
	last    map[int]uint64     // per key: the highest version applied
	check   bool               // the consumer's version_check
	sum     metrics.ConsumerSummary
	raw     RawCounts
	folded  chan struct{} // signalled when an intent folds
}

// RawCounts are a topic's counts of every delivery, warm-up included, for
// per-interval series.
type RawCounts struct {
	Deliveries, Redeliveries int64
	// Backlog is the number of messages published and not yet settled.
	Backlog int64
}

// intent is what a Topic follows of one logical intent.
type intent struct {
	id      uint64
	key     int
	counted bool
	refs    int
	effects int
	stale   bool // rejected by a version check at least once
	done    bool // its processed-event record exists (transactional_dedup)
}

// NewTopic creates the stream of the scenario topic name, in memory, under
// a name of its own (the topic's, and a number unique to this run).
func (c *Conn) NewTopic(ctx context.Context, name string) (*Topic, error) {
	stream := fmt.Sprintf("stormsim_%s_%d_%d", natsName(name), time.Now().UnixNano(), runs.Add(1))
	t := &Topic{name: name, stream: stream, subject: "stormsim.topic." + stream, conn: c,
		intents: map[uint64]*intent{}, msgs: map[uint64]*intent{}, last: map[int]uint64{}, folded: make(chan struct{}, 1)}
	t.sum.Topic = name
	if _, err := c.js.CreateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{t.subject}, Storage: jetstream.MemoryStorage}); err != nil {
		return nil, fmt.Errorf("broker: topic %s: create stream %s: %w", name, stream, err)
	}
	return t, nil
}

// Name is the topic's name in the scenario.
func (t *Topic) Name() string { return t.name }

// Close deletes the topic's stream (and with it its consumer).
func (t *Topic) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := t.conn.js.DeleteStream(ctx, t.stream); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
		return fmt.Errorf("broker: topic %s: delete stream: %w", t.name, err)
	}
	return nil
}

// commit follows a new intent of key, counted when committed after the
// warm-up, held by its committer (one reference) until release.
func (t *Topic) commit(key int, counted bool) *model.Intent {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.seq++
	t.intents[t.seq] = &intent{id: t.seq, key: key, counted: counted, refs: 1}
	return model.NewIntent(key, t.seq, counted)
}

// hold adds a reference to in (an outbox row's).
func (t *Topic) hold(in *model.Intent) {
	t.mu.Lock()
	t.intents[in.Seq].refs++
	t.mu.Unlock()
}

// release drops a reference to in (its committer's, or its outbox row's
// once marked sent).
func (t *Topic) release(in *model.Intent) {
	t.mu.Lock()
	t.releaseLocked(t.intents[in.Seq])
	t.mu.Unlock()
}

// releaseLocked drops one reference to it, folding it when none is left.
func (t *Topic) releaseLocked(it *intent) {
	if it == nil {
		return
	}
	it.refs--
	if it.refs > 0 {
		return
	}
	delete(t.intents, it.id)
	if it.counted {
		t.sum.Intents++
		if it.effects == 0 && !it.stale {
			t.sum.LostEffects++
		}
		t.sum.DuplicateEffects += int64(max(it.effects-1, 0))
	}
	select {
	case t.folded <- struct{}{}:
	default:
	}
}

// publish puts a copy of in's event on the stream; the message holds a
// reference to in until it is settled.
func (t *Topic) publish(ctx context.Context, in *model.Intent) error {
	m := &nats.Msg{Subject: t.subject, Header: nats.Header{}}
	m.Header.Set(headerIntent, strconv.FormatUint(in.Seq, 10))
	m.Header.Set(headerKey, strconv.Itoa(in.Key))
	t.mu.Lock()
	defer t.mu.Unlock()
	ack, err := t.conn.js.PublishMsg(ctx, m)
	if err != nil {
		t.sum.PublishErrors++
		return fmt.Errorf("broker: topic %s: publish: %w", t.name, err)
	}
	it := t.intents[in.Seq]
	it.refs++
	t.msgs[ack.Sequence] = it
	t.raw.Backlog++
	if it.counted {
		t.sum.Published++
	}
	return nil
}

// settle ends the message at stream sequence seq: acked, or dead-lettered.
// A message settles once; a second ack of it (a late one) changes nothing.
func (t *Topic) settle(seq uint64, deadLetter bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	it := t.msgs[seq]
	if it == nil {
		return
	}
	delete(t.msgs, seq)
	t.raw.Backlog--
	if deadLetter && it.counted {
		t.sum.DeadLettered++
	}
	t.releaseLocked(it)
}

// deliver follows a delivery of intent id (the delivery's reference, until
// done) and counts it; nil when the intent is not this run's.
func (t *Topic) deliver(id uint64, redelivery bool) *intent {
	t.mu.Lock()
	defer t.mu.Unlock()
	it := t.intents[id]
	if it == nil {
		return nil
	}
	it.refs++
	t.raw.Deliveries++
	if redelivery {
		t.raw.Redeliveries++
	}
	if it.counted {
		t.sum.Deliveries++
		if redelivery {
			t.sum.Redeliveries++
		}
	}
	return it
}

// apply ends a delivery of it: its effect per the consumer's ack mode (a
// crash before the effect, with ack before_effect, applies none; with
// transactional dedup only the first applies), then the delivery's
// reference is dropped.
func (t *Topic) apply(it *intent, ack model.AckMode, crashed bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	effect := true
	switch ack {
	case model.AckBeforeEffect:
		effect = !crashed
	case model.AckTransactionalDedup:
		effect = !it.done
		it.done = true
	}
	if effect {
		t.effect(it)
	}
	t.releaseLocked(it)
}

// effect applies it's effect unless a version check finds it stale, and
// counts effects out of their key's order (model.Group's rule).
func (t *Topic) effect(it *intent) {
	last := t.last[it.key] // 0: none yet (ids start at 1)
	keyed := it.key >= 0
	if keyed && t.check && it.id < last {
		it.stale = true
		if it.counted {
			t.sum.StaleRejected++
		}
		return
	}
	it.effects++
	if it.counted {
		t.sum.Effects++
	}
	if !keyed {
		return
	}
	if it.id < last {
		if it.counted {
			t.sum.OutOfOrderEffects++
		}
		return
	}
	t.last[it.key] = it.id
}

// InFlight is the number of intents not folded yet: in an outbox, on the
// stream unsettled, or in process.
func (t *Topic) InFlight() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.intents)
}

// Wait returns once every intent committed so far has folded, or with
// ctx's error.
func (t *Topic) Wait(ctx context.Context) error {
	for t.InFlight() > 0 {
		select {
		case <-t.folded:
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Raw returns the topic's raw counts so far.
func (t *Topic) Raw() RawCounts {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.raw
}

// Summary is the consumer summary of the intents committed after warm-up:
// those folded, and, apart, those still in flight (InFlight: committed
// but still in an outbox, on the stream or in process when it was taken,
// so neither lost nor duplicate yet; their effects so far are in Effects).
func (t *Topic) Summary() metrics.ConsumerSummary {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.sum
	for _, it := range t.intents {
		if it.counted {
			s.InFlight++
		}
	}
	s.Intents += s.InFlight
	return s
}

// advisory is the part of JetStream's max-deliveries advisory read here.
type advisory struct {
	StreamSeq uint64 `json:"stream_seq"`
}

// deadLetters settles each message JetStream gives up on after max
// deliveries, from its advisory for consumer durable; the subscription
// ends with Unsubscribe.
func (t *Topic) deadLetters(durable string) (*nats.Subscription, error) {
	sub, err := t.conn.nc.Subscribe("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES."+t.stream+"."+durable, func(m *nats.Msg) {
		var a advisory
		if json.Unmarshal(m.Data, &a) == nil && a.StreamSeq > 0 {
			t.settle(a.StreamSeq, true)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("broker: topic %s: subscribe to advisories: %w", t.name, err)
	}
	// The advisory must not be missed: make sure the server has the
	// subscription before the first delivery.
	if err := t.conn.nc.Flush(); err != nil {
		sub.Unsubscribe()
		return nil, fmt.Errorf("broker: topic %s: %w", t.name, err)
	}
	return sub, nil
}
