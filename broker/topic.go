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
	"github.com/stormsim/stormsim/topology"
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
	g  *peerGuard
}

// Connect connects to the NATS server at url. It dials only the servers
// url names (never those a server advertises), and bounds what a server
// can make it hold (MaxPeerPayload, MaxPeerLine): a server breaching a
// bound ends the connection, and Err reports why.
func Connect(url string) (*Conn, error) {
	if strings.Contains(strings.ToLower(url), "tls://") {
		return nil, fmt.Errorf("broker: connect %s: TLS is not supported: the client bounds what a server sends by reading its protocol, which TLS hides", Redact(url))
	}
	g := newPeerGuard(url)
	nc, err := nats.Connect(url, nats.SetCustomDialer(g), nats.IgnoreDiscoveredServers())
	if err != nil {
		return nil, fmt.Errorf("broker: connect %s: %w", Redact(url), redactErr(url, g.explain(err)))
	}
	g.attach(nc)
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("broker: %w", err)
	}
	return &Conn{nc: nc, js: js, g: g}, nil
}

// redactErr is err with every credential of urls in its message replaced,
// for errors of nats.go that quote the URL.
func redactErr(urls string, err error) error {
	msg, red := err.Error(), err.Error()
	for _, s := range strings.Split(urls, ",") {
		if at := strings.LastIndexByte(s, '@'); at >= 0 {
			start := strings.Index(s, "://") + 3
			if start < 3 || start > at {
				start = 0
			}
			if cred := s[start:at]; cred != "" {
				red = strings.ReplaceAll(red, cred, "***")
			}
		}
	}
	if red == msg {
		return err
	}
	return errors.New(red)
}

// Err is the bound the server breached, which ended the connection, or
// nil.
func (c *Conn) Err() error { return c.g.failed() }

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
// accounting of its intents: model.Effects, the simulator's rules (lost,
// duplicate and out-of-order effects per intent, version checks, the ack
// modes), applied to what the real broker delivers. An intent is followed
// while its committer, an outbox row, an unsettled message (neither acked
// nor dead-lettered) or a delivery in process refers to it, then folded.
// Safe for concurrent use.
type Topic struct {
	name    string
	stream  string
	subject string // messages go to subject.k<key>, or subject.u unkeyed
	conn    *Conn
	// keys is the number of ordering keys; ordered, that the consumer
	// keeps one message per key in process (a consumer per key).
	keys    int
	ordered bool

	// mu guards what follows. Publish holds it across the round trip to
	// the server, so that a message is known by its stream sequence
	// before its ack (or dead letter) can settle it.
	mu            sync.Mutex
	seq           uint64
	fx            *model.Effects
	intents       map[uint64]*model.Intent // not yet folded, by Seq
	msgs          map[uint64]*model.Intent // unsettled messages by stream sequence
	backlog       int64
	publishErrors int64
	folded        chan struct{} // signalled when an intent folds
}

// RawCounts are a topic's counts of every delivery, warm-up included, for
// per-interval series.
type RawCounts struct {
	Deliveries, Redeliveries int64
	// Backlog is the number of messages published and not yet settled.
	Backlog int64
}

// NewTopic creates the stream of the scenario topic name, in memory, under
// a name of its own (the topic's, and a number unique to this run), with
// the effect rules of its consumer c; keys is the number of ordering keys
// its publishers spread events over (0: unkeyed).
func (c *Conn) NewTopic(ctx context.Context, name string, consume *topology.Consume, keys int) (*Topic, error) {
	fx, err := model.NewEffects(consume, keys)
	if err != nil {
		return nil, fmt.Errorf("broker: topic %s: %w", name, err)
	}
	stream := fmt.Sprintf("stormsim_%s_%d_%d", natsName(name), time.Now().UnixNano(), runs.Add(1))
	t := &Topic{name: name, stream: stream, subject: "stormsim.topic." + stream, conn: c, fx: fx, keys: keys, ordered: consume.Ordered && keys > 0,
		intents: map[uint64]*model.Intent{}, msgs: map[uint64]*model.Intent{}, folded: make(chan struct{}, 1)}
	if _, err := c.js.CreateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{t.subject + ".>"}, Storage: jetstream.MemoryStorage}); err != nil {
		return nil, fmt.Errorf("broker: topic %s: create stream %s: %w", name, stream, c.g.explain(err))
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
	in := model.NewIntent(key, t.seq, counted)
	t.intents[t.seq] = in
	return in
}

// release drops a reference to in (its committer's, or its outbox row's
// once marked sent).
func (t *Topic) release(in *model.Intent) {
	t.mu.Lock()
	t.releaseLocked(in)
	t.mu.Unlock()
}

// releaseLocked drops one reference to in, which folds when none is left.
func (t *Topic) releaseLocked(in *model.Intent) {
	t.fx.Release(in)
	if !in.Folded() {
		return
	}
	delete(t.intents, in.Seq)
	select {
	case t.folded <- struct{}{}:
	default:
	}
}

// publish puts a copy of in's event on the stream; the message holds a
// reference to in until it is settled.
func (t *Topic) publish(ctx context.Context, in *model.Intent) error {
	m := &nats.Msg{Subject: t.keySubject(in.Key), Header: nats.Header{}}
	m.Header.Set(headerIntent, strconv.FormatUint(in.Seq, 10))
	m.Header.Set(headerKey, strconv.Itoa(in.Key))
	t.mu.Lock()
	defer t.mu.Unlock()
	ack, err := t.conn.js.PublishMsg(ctx, m)
	if err != nil {
		t.publishErrors++
		return fmt.Errorf("broker: topic %s: publish: %w", t.name, t.conn.g.explain(err))
	}
	in.Hold()
	t.msgs[ack.Sequence] = in
	t.backlog++
	if in.Counted {
		t.fx.Stats.Published++
	}
	return nil
}

// keySubject is the subject of the events of key (-1: unkeyed).
func (t *Topic) keySubject(key int) string {
	if key < 0 {
		return t.subject + ".u"
	}
	return t.subject + ".k" + strconv.Itoa(key)
}

// settle ends the message at stream sequence seq: acked, or dead-lettered.
// A message settles once; a second ack of it (a late one) changes nothing.
func (t *Topic) settle(seq uint64, deadLetter bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	in := t.msgs[seq]
	if in == nil {
		return
	}
	delete(t.msgs, seq)
	t.backlog--
	if deadLetter && in.Counted {
		t.fx.Stats.DeadLettered++
	}
	t.releaseLocked(in)
}

// deliver follows a delivery of intent id (the delivery's reference, until
// done) and counts it; nil when the intent is not this run's.
func (t *Topic) deliver(id uint64, redelivery bool) *model.Intent {
	t.mu.Lock()
	defer t.mu.Unlock()
	in := t.intents[id]
	if in == nil {
		return nil
	}
	in.Hold()
	st := &t.fx.Stats
	st.RawDeliveries++
	if redelivery {
		st.RawRedeliveries++
	}
	if in.Counted {
		st.Deliveries++
		if redelivery {
			st.Redeliveries++
		}
	}
	return in
}

// done ends a delivery of in: its effect per the consumer's ack mode
// (model.Effects.Effect; crashed: a crash between effect and ack), then
// the delivery's reference is dropped.
func (t *Topic) done(in *model.Intent, crashed bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.fx.Effect(in, crashed)
	t.releaseLocked(in)
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
	return RawCounts{Deliveries: t.fx.Stats.RawDeliveries, Redeliveries: t.fx.Stats.RawRedeliveries, Backlog: t.backlog}
}

// Summary is the consumer summary of the intents committed after warm-up:
// those folded, and, apart, those still in flight (InFlight: committed
// but still in an outbox, on the stream or in process when it was taken,
// so neither lost nor duplicate yet; their effects so far are in Effects).
func (t *Topic) Summary() metrics.ConsumerSummary {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.fx.Stats
	s := metrics.ConsumerSummary{Topic: t.name, Intents: st.Intents, Published: st.Published,
		Deliveries: st.Deliveries, Redeliveries: st.Redeliveries, DeadLettered: st.DeadLettered, Effects: st.Effects,
		LostEffects: st.LostEffects, DuplicateEffects: st.DuplicateEffects, OutOfOrderEffects: st.OutOfOrderEffects,
		StaleRejected: st.StaleRejected, PublishErrors: t.publishErrors}
	for _, in := range t.intents {
		if in.Counted {
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
// deliveries, from its advisories for the stream's consumers; the
// subscription ends with Unsubscribe.
func (t *Topic) deadLetters() (*nats.Subscription, error) {
	sub, err := t.conn.nc.Subscribe("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES."+t.stream+".*", func(m *nats.Msg) {
		var a advisory
		if json.Unmarshal(m.Data, &a) == nil && a.StreamSeq > 0 {
			t.settle(a.StreamSeq, true)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("broker: topic %s: subscribe to advisories: %w", t.name, t.conn.g.explain(err))
	}
	// The advisory must not be missed: make sure the server has the
	// subscription before the first delivery.
	if err := t.conn.nc.Flush(); err != nil {
		sub.Unsubscribe()
		return nil, fmt.Errorf("broker: topic %s: %w", t.name, t.conn.g.explain(err))
	}
	return sub, nil
}
