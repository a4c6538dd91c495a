package sim

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/stormsim/stormsim/dist"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/model"
	"github.com/stormsim/stormsim/topology"
)

// asyncRun drives the scenario's topics (issue 23): each consuming
// service's model.Group, with its deliveries' processing and ack
// deadlines as engine events, and each publish step's producer.
type asyncRun struct {
	m         *run
	consumers []*consumer
	byTopic   map[string]*consumer
	prev      []model.GroupStats // as of the last series row
}

// consumer is one service's consumer group of a topic: its replicas are
// the group's members, each with the service's concurrency.
type consumer struct {
	svc      *service
	topic    string
	g        *model.Group
	st       dist.Sampler
	slow     time.Duration
	deadline time.Duration
	members  []member
	// idle is a ring of tokens, one per free consumer naming its
	// member, in the order they became free (n of them from head): the
	// next delivery goes to the consumer free the longest, as a broker
	// serves its waiting pulls in order.
	idle    []int
	head, n int
	seq     uint64 // commits published to the topic so far
	keys    int
	hDone   Handler
	hExpire Handler
}

// member is one replica of a consuming service: the faults that hit it,
// its stream (consumer/NAME, then #r1, #r2 for further replicas) and its
// deliveries in process.
type member struct {
	faults []*topology.Fault
	rng    *rand.Rand
	busy   int
}

// publisher is one publish step of a producing service.
type publisher struct {
	c        *consumer
	outbox   bool
	interval time.Duration
	keys     int
	faults   []*topology.Fault
	rng      *rand.Rand
	ob       model.Outbox
	armed    bool
	hPass    Handler
	crashFn  func() bool
}

type delivery struct {
	d   model.Delivery
	mem int // the member processing it
}

// buildAsync binds the plan's topics: a consumer group per consuming
// service, its replicas its members, and a publisher per replica of each
// publish step; the run has none when no service consumes.
func (b *builder) buildAsync() error {
	m := b.m
	if !m.sc.HasTopics() {
		return nil
	}
	ar := &asyncRun{m: m, byTopic: map[string]*consumer{}}
	keys := b.plan.TopicKeys
	for i, sp := range b.plan.Services {
		cc := sp.Config.Consumes
		if cc == nil {
			continue
		}
		s := b.reps[i][0]
		// The group's consumers are every member's.
		gc := *cc
		gc.Concurrency *= len(s.reps)
		g, err := model.NewGroup(&gc, keys[cc.Topic])
		if err != nil {
			return fmt.Errorf("services[%d].consumes.%w", i, err)
		}
		c := &consumer{svc: s, topic: cc.Topic, g: g, slow: s.cfg.SlowdownPerInflight, deadline: cc.AckDeadline,
			keys: keys[cc.Topic]}
		for k, rp := range sp.Replicas {
			c.members = append(c.members, member{faults: rp.Faults, rng: m.stream(rp.ConsumerStream)})
			for range cc.Concurrency {
				c.idle = append(c.idle, k)
			}
		}
		c.n = len(c.idle)
		if c.st, _, err = model.Delay(&s.cfg.ServiceTime, fmt.Sprintf("services[%d].service_time", i)); err != nil {
			return err
		}
		c.hDone = func(_ *Engine, a any) { ar.done(c, a.(*delivery)) }
		c.hExpire = func(_ *Engine, a any) { ar.expire(c, a.(*delivery)) }
		ar.consumers = append(ar.consumers, c)
		ar.byTopic[cc.Topic] = c
	}
	ar.prev = make([]model.GroupStats, len(ar.consumers))
	for i, sp := range b.plan.Services {
		// Each replica publishes through its own outbox and loop.
		for r, rp := range sp.Replicas {
			for j, st := range rp.Steps {
				pb := st.Publish
				if pb == nil {
					continue
				}
				p := &publisher{c: ar.byTopic[pb.Topic], outbox: pb.Via == "outbox", interval: pb.OutboxInterval, keys: pb.Keys,
					faults: rp.Faults, rng: m.stream(st.PublishStream)}
				p.hPass = func(*Engine, any) { ar.pass(p) }
				p.crashFn = func() bool { return ar.crash(p.rng, p.faults, model.CrashPublishMark) }
				b.reps[i][r].steps[j].pub = p
			}
		}
	}
	m.async = ar
	return nil
}

// crash draws whether a crash fault hits boundary b now; without an
// active crash fault it draws nothing, so streams stay as they were.
func (ar *asyncRun) crash(rng *rand.Rand, faults []*topology.Fault, b model.CrashBoundary) bool {
	return model.Crashes(rng, faults, b, ar.m.eng.Now())
}

// publish runs publish step p of an attempt: the commit's intent leaves
// by dual write (lost if the producer crashes before publishing) or
// through the outbox.
func (ar *asyncRun) publish(p *publisher) {
	now := ar.m.eng.Now()
	c := p.c
	c.seq++
	key := -1
	if p.keys > 0 {
		key = p.rng.IntN(p.keys)
	}
	in := model.NewIntent(key, c.seq, now >= ar.m.warmup)
	if p.outbox {
		p.ob.Add(in)
		if !p.armed {
			p.armed = true
			ar.m.eng.After(p.interval, p.hPass, nil)
		}
	} else if !ar.crash(p.rng, p.faults, model.CrashCommitPublish) {
		c.g.Publish(in)
	}
	c.g.Release(in)
	ar.dispatch(c)
}

// pass is one pass of p's outbox publisher loop; it re-arms while rows
// remain, so an idle outbox schedules nothing.
func (ar *asyncRun) pass(p *publisher) {
	p.ob.Pass(p.c.g, p.crashFn)
	ar.dispatch(p.c)
	p.armed = p.ob.Len() > 0
	if p.armed {
		ar.m.eng.After(p.interval, p.hPass, nil)
	}
}

// dispatch hands waiting messages to c's free consumers, the one free
// the longest first (the group has a free consumer only if idle has one).
func (ar *asyncRun) dispatch(c *consumer) {
	eng := ar.m.eng
	for {
		d, acked, ok := c.g.Next()
		if !ok {
			return
		}
		k := c.idle[c.head]
		c.head = (c.head + 1) % len(c.idle)
		c.n--
		mb := &c.members[k]
		mb.busy++
		now := eng.Now()
		st := c.st.Sample(mb.rng) + model.LatencyAdd(mb.faults, now) + time.Duration(mb.busy-1)*c.slow
		eng.After(st, c.hDone, &delivery{d, k})
		if !acked {
			eng.After(c.deadline, c.hExpire, &delivery{d, k})
		}
	}
}

// done ends a delivery's processing.
func (ar *asyncRun) done(c *consumer, dl *delivery) {
	mb := &c.members[dl.mem]
	mb.busy--
	c.idle[(c.head+c.n)%len(c.idle)] = dl.mem // free again: last in line
	c.n++
	c.g.Finish(dl.d, ar.crash(mb.rng, mb.faults, model.CrashEffectAck))
	ar.dispatch(c)
}

// expire is a delivery's ack deadline: a redelivery waits for a
// consumer, and a dead letter may free its key for the next message.
func (ar *asyncRun) expire(c *consumer, dl *delivery) {
	c.g.Expire(dl.d)
	ar.dispatch(c)
}

// columns are the time-series columns of the consumer groups.
func (ar *asyncRun) columns() []string {
	var cols []string
	for _, c := range ar.consumers {
		for _, k := range []string{metrics.MetricDeliveries, metrics.MetricRedeliveries, metrics.MetricBacklog,
			metrics.MetricEffects, metrics.MetricLostEffects, metrics.MetricDuplicateEffects, metrics.MetricOutOfOrderEffects} {
			cols = append(cols, metrics.Column(k, c.svc.name))
		}
	}
	return cols
}

// row appends the consumer groups' values for the interval ending now:
// counts in the interval (every delivery; the effects of intents after
// warm-up, lost and duplicate ones in the interval their intent folded
// in), and the backlog at its end.
func (ar *asyncRun) row(row []float64) []float64 {
	for i, c := range ar.consumers {
		s, p := c.g.Stats, ar.prev[i]
		row = append(row, float64(s.RawDeliveries-p.RawDeliveries), float64(s.RawRedeliveries-p.RawRedeliveries), float64(c.g.Backlog()),
			float64(s.Effects-p.Effects), float64(s.LostEffects-p.LostEffects), float64(s.DuplicateEffects-p.DuplicateEffects),
			float64(s.OutOfOrderEffects-p.OutOfOrderEffects))
		ar.prev[i] = s
	}
	return row
}

// summary is service s's consumer summary, or nil.
func (ar *asyncRun) summary(s *service) *metrics.ConsumerSummary {
	if ar == nil {
		return nil
	}
	for _, c := range ar.consumers {
		if c.svc != s {
			continue
		}
		st := c.g.Stats
		return &metrics.ConsumerSummary{Topic: c.topic, Intents: st.Intents, Published: st.Published,
			Deliveries: st.Deliveries, Redeliveries: st.Redeliveries, DeadLettered: st.DeadLettered, Effects: st.Effects,
			LostEffects: st.LostEffects, DuplicateEffects: st.DuplicateEffects, OutOfOrderEffects: st.OutOfOrderEffects,
			StaleRejected: st.StaleRejected}
	}
	return nil
}
