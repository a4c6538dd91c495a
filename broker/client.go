package broker

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/stormsim/stormsim/dist"
	"github.com/stormsim/stormsim/model"
	"github.com/stormsim/stormsim/topology"
)

// Producer is one publish step of a producing service: each execution
// commits an intent and sends its event to the topic by dual write (a
// crash between commit and publish loses it) or through an outbox, whose
// publisher loop (Run) publishes the rows and marks them sent (a crash
// between the two publishes a row again on the next pass). Crash draws
// follow the simulator's (model.CrashProb at the producer's clock, one
// draw per commit or per row). Safe for concurrent use.
type Producer struct {
	t        *Topic
	outbox   bool
	interval time.Duration
	keys     int
	faults   []*topology.Fault
	now      func() time.Duration

	mu  sync.Mutex // guards rng and ob; a pass holds it
	rng *rand.Rand
	ob  model.Outbox
}

// NewProducer returns the producer of publish step pub on t: faults are
// those of the producing service, rng its step's stream, now its clock
// (the offset of the run's time 0, where fault windows start).
func (t *Topic) NewProducer(pub *topology.Publish, faults []*topology.Fault, rng *rand.Rand, now func() time.Duration) *Producer {
	return &Producer{t: t, outbox: pub.Via == "outbox", interval: pub.OutboxInterval, keys: pub.Keys, faults: faults, rng: rng, now: now}
}

// crash draws whether a crash hits boundary b now (under mu); without an
// active crash fault it draws nothing.
func (p *Producer) crash(b model.CrashBoundary) bool {
	return model.Crashes(p.rng, p.faults, b, p.now())
}

// Commit is one execution of the publish step: the commit of an intent,
// counted when committed after the warm-up, and its event's way out. It
// returns the broker's error when a dual write's publish failed.
func (p *Producer) Commit(ctx context.Context, counted bool) error {
	p.mu.Lock()
	key := -1
	if p.keys > 0 {
		key = p.rng.IntN(p.keys)
	}
	in := p.t.commit(key, counted)
	if p.outbox {
		p.ob.Add(in) // the row holds a reference until marked sent
		p.mu.Unlock()
		p.t.release(in)
		return nil
	}
	crashed := p.crash(model.CrashCommitPublish)
	p.mu.Unlock()
	var err error
	if !crashed {
		err = p.t.publish(ctx, in)
	}
	p.t.release(in)
	return err
}

// Pending is the number of outbox rows not yet marked sent.
func (p *Producer) Pending() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ob.Len()
}

// Pass is one pass of the outbox publisher loop (model.Outbox.PassTo). A
// publish the broker refuses ends the pass with its row unmarked, as a
// crash does, so the next pass tries it again; the error is returned.
func (p *Producer) Pass(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var err error
	p.ob.PassTo(func(in *model.Intent) { err = p.t.publish(ctx, in) },
		func() bool { return err != nil || p.crash(model.CrashPublishMark) }, p.t.release)
	return err
}

// Run is the outbox publisher loop: a pass every outbox_interval while
// rows wait, until ctx ends. A dual-write producer has no loop.
func (p *Producer) Run(ctx context.Context) {
	if !p.outbox {
		return
	}
	t := time.NewTicker(p.interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			if p.Pending() > 0 {
				_ = p.Pass(ctx) // counted in the summary's publish_errors
			}
		case <-ctx.Done():
			return
		}
	}
}

// ConsumerConfig is what a consumer group needs beyond its topic.
type ConsumerConfig struct {
	// Service is the consuming service's name: the durable consumer's.
	Service string
	// Consume is the service's consumes block.
	Consume *topology.Consume
	// ServiceTime and SlowdownPerInflight make each delivery's processing
	// time, with the active faults' latency_add, as the simulator's.
	ServiceTime         dist.Sampler
	SlowdownPerInflight time.Duration
	// Faults are the consuming service's (crash_between_effect_and_ack,
	// latency_add); Rand its consumer stream; Now its clock.
	Faults []*topology.Fault
	Rand   *rand.Rand
	Now    func() time.Duration
	// Members is how many consumers of the service (its replicas) share
	// the durable consumer, each with the concurrency (default 1): the
	// server must let all their pulls wait at once.
	Members int
}

// Consumer is a topic's consumer group on JetStream: a durable pull
// consumer (AckWait = ack_deadline, MaxDeliver = max_deliveries) and
// concurrency workers, each fetching one message when it is free, so the
// ack deadline runs from when a worker takes the message, as in the
// simulator. Each delivery is processed for the service time, then its
// effect applied and acked per the ack mode, with crash draws between
// effect and ack (a crash skips the ack, so JetStream redelivers after
// AckWait; acking first, it skips the effect). Messages JetStream gives up
// on are dead-lettered (its max-deliveries advisory).
type Consumer struct {
	t    *Topic
	cfg  ConsumerConfig
	ack  model.AckMode
	adv  *nats.Subscription
	stop context.CancelFunc
	wg   sync.WaitGroup
	busy atomic.Int64

	mu sync.Mutex // guards cfg.Rand
}

// Consume starts consumer group cfg on t; Stop ends it. cfg.Consume is
// the consumes block t was made with (its ack mode and version check are
// t's); the replicas of a consuming service each start one on the same
// durable consumer(s).
//
// An ordered group (with keys) is a durable consumer per key, filtered to
// the key's subject, with MaxAckPending 1: JetStream then has at most one
// message of a key unsettled, and redelivers it before the next, as
// model.Group's ordered group does; each gets one worker (Check requires
// concurrency × replicas ≥ keys, so the group's concurrency never binds,
// and refuses ack before_effect, which would let a key's next message
// start before the previous one ends).
func (t *Topic) Consume(ctx context.Context, cfg ConsumerConfig) (*Consumer, error) {
	c := cfg.Consume
	base := jetstream.ConsumerConfig{Durable: natsName(cfg.Service), AckPolicy: jetstream.AckExplicitPolicy,
		AckWait: c.AckDeadline, MaxDeliver: c.MaxDeliveries, MaxAckPending: -1, MaxWaiting: max(c.Concurrency*max(cfg.Members, 1), 512)}
	type pool struct {
		cc      jetstream.ConsumerConfig
		workers int
	}
	pools := []pool{{base, c.Concurrency}}
	if t.ordered {
		pools = pools[:0]
		for k := range t.keys {
			cc := base
			cc.Durable += "_k" + strconv.Itoa(k)
			cc.FilterSubject, cc.MaxAckPending = t.keySubject(k), 1
			pools = append(pools, pool{cc, 1})
		}
	}
	cs := &Consumer{t: t, cfg: cfg, ack: t.fx.Ack()}
	var jcs []jetstream.Consumer
	for _, p := range pools {
		jc, err := t.conn.js.CreateOrUpdateConsumer(ctx, t.stream, p.cc)
		if err != nil {
			return nil, fmt.Errorf("broker: topic %s: create consumer %s: %w", t.name, p.cc.Durable, t.conn.g.explain(err))
		}
		jcs = append(jcs, jc)
	}
	var err error
	if cs.adv, err = t.deadLetters(); err != nil {
		return nil, err
	}
	wctx, stop := context.WithCancel(context.Background())
	cs.stop = stop
	for i, p := range pools {
		for range p.workers {
			cs.wg.Add(1)
			go cs.work(wctx, jcs[i])
		}
	}
	return cs, nil
}

// work is one consumer: it fetches a message only when free.
func (c *Consumer) work(ctx context.Context, jc jetstream.Consumer) {
	defer c.wg.Done()
	for ctx.Err() == nil {
		msg, err := jc.Next(jetstream.FetchContext(ctx))
		if err != nil {
			if ctx.Err() == nil {
				time.Sleep(10 * time.Millisecond) // a timed-out pull: ask again
			}
			continue
		}
		c.handle(ctx, msg)
	}
}

// Stop ends the consumer's workers (a delivery in process is abandoned:
// its intent stays in flight) and its dead-letter subscription.
func (c *Consumer) Stop() {
	c.stop()
	c.wg.Wait()
	_ = c.adv.Unsubscribe()
}

// sample draws a delivery's service time from the consumer's stream.
func (c *Consumer) sample() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cfg.ServiceTime.Sample(c.cfg.Rand)
}

// crash draws whether a crash hits the boundary between effect and ack
// now; without an active crash fault it draws nothing.
func (c *Consumer) crash() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return model.Crashes(c.cfg.Rand, c.cfg.Faults, model.CrashEffectAck, c.cfg.Now())
}

// handle processes one delivery.
func (c *Consumer) handle(ctx context.Context, msg jetstream.Msg) {
	md, err := msg.Metadata()
	if err != nil {
		return
	}
	id, err := strconv.ParseUint(msg.Headers().Get(headerIntent), 10, 64)
	it := c.t.deliver(id, md.NumDelivered > 1)
	if err != nil || it == nil {
		_ = msg.Term() // not an event of this run: never deliver it again
		return
	}
	seq := md.Sequence.Stream
	if c.ack == model.AckBeforeEffect && msg.DoubleAck(ctx) == nil {
		c.t.settle(seq, false)
	}
	busy := c.busy.Add(1)
	d := c.sample() + model.LatencyAdd(c.cfg.Faults, c.cfg.Now()) + time.Duration(busy-1)*c.cfg.SlowdownPerInflight
	wait := time.NewTimer(max(d, 0))
	select {
	case <-wait.C:
		c.busy.Add(-1)
	case <-ctx.Done():
		wait.Stop()
		c.busy.Add(-1)
		return // stopped: the delivery stays in flight
	}
	crashed := c.crash()
	c.t.done(it, crashed)
	if crashed || c.ack == model.AckBeforeEffect {
		return // a crash before the ack: JetStream redelivers after AckWait
	}
	// A late ack (after AckWait, the message redelivered meanwhile) is
	// accepted by JetStream: the message settles (docs/model.md).
	if msg.DoubleAck(ctx) == nil {
		c.t.settle(seq, false)
	}
}
