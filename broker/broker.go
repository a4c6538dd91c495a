package broker

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/stormsim/stormsim/dist"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/model"
	"github.com/stormsim/stormsim/topology"
)

// Server is an embedded NATS server with JetStream.
type Server struct {
	s   *server.Server
	dir string
}

// Embedded starts a NATS server with JetStream in this process, listening
// on 127.0.0.1 on a free port, its store in a temporary directory.
func Embedded() (*Server, error) {
	dir, err := os.MkdirTemp("", "stormsim-jetstream-")
	if err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true})
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("broker: embedded NATS server: %w", err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		os.RemoveAll(dir)
		return nil, errors.New("broker: embedded NATS server not ready after 10s")
	}
	return &Server{s: s, dir: dir}, nil
}

// URL is the client URL of the server.
func (s *Server) URL() string { return s.s.ClientURL() }

// Close stops the server and removes its store.
func (s *Server) Close() {
	s.s.Shutdown()
	s.s.WaitForShutdown()
	os.RemoveAll(s.dir)
}

// hop is one topic's producer and consumer, resolved from a scenario.
type hop struct {
	pub      *topology.Publish
	prodF    []*topology.Fault
	cons     *topology.Consume
	consF    []*topology.Fault
	st       dist.Sampler
	ack      model.AckMode
	consName string
}

func resolveHop(sc *topology.Scenario, topic string) (*hop, error) {
	h := &hop{}
	for i := range sc.Services {
		s := &sc.Services[i]
		for j := range s.Calls {
			if p := s.Calls[j].Publish; p != nil && p.Topic == topic && h.pub == nil {
				h.pub, h.prodF = p, faultsOf(sc, s.Name)
			}
		}
		if c := s.Consumes; c != nil && c.Topic == topic {
			h.cons, h.consF, h.consName = c, faultsOf(sc, s.Name), s.Name
			var err error
			if h.st, _, err = model.Delay(&s.ServiceTime, fmt.Sprintf("services[%d].service_time", i)); err != nil {
				return nil, err
			}
		}
	}
	if h.pub == nil || h.cons == nil {
		return nil, fmt.Errorf("broker: topic %q needs a publish step and a consumer", topic)
	}
	if h.cons.Ordered {
		return nil, fmt.Errorf("broker: topic %q: ordered consumers are simulator-only for now", topic)
	}
	var err error
	if h.ack, err = model.ParseAckMode(h.cons.Ack); err != nil {
		return nil, err
	}
	return h, nil
}

func faultsOf(sc *topology.Scenario, name string) []*topology.Fault {
	var fs []*topology.Fault
	for i := range sc.Faults {
		if sc.Faults[i].Service == name {
			fs = append(fs, &sc.Faults[i])
		}
	}
	return fs
}

// tally is the consumer side's effect accounting, per intent id.
type tally struct {
	mu           sync.Mutex
	sum          metrics.ConsumerSummary
	effects      map[uint64]int
	done         map[uint64]bool // dedup records
	stale        map[uint64]bool
	last         map[int]uint64 // per key: highest seq applied
	settled      int64          // messages acked or dead-lettered
	versionCheck bool
}

// apply applies intent id's effect (key, seq) unless stale.
func (t *tally) apply(id uint64, key int, seq uint64) {
	if key >= 0 && t.versionCheck && seq < t.last[key] {
		t.stale[id] = true
		t.sum.StaleRejected++
		return
	}
	t.effects[id]++
	t.sum.Effects++
	if key >= 0 {
		if seq < t.last[key] {
			t.sum.OutOfOrderEffects++
		} else {
			t.last[key] = seq
		}
	}
}

// Walk publishes n intents of topic as sc's producer does and consumes
// them as its consumer does, through the JetStream server at url, and
// returns the consumer's summary once every published message is acked
// or dead-lettered (or ctx ends: then an error). Crash draws come from a
// stream derived from seed, and fault windows are measured from Walk's
// start in real time.
func Walk(ctx context.Context, url string, sc *topology.Scenario, topic string, n int, seed uint64) (*metrics.ConsumerSummary, error) {
	h, err := resolveHop(sc, topic)
	if err != nil {
		return nil, err
	}
	nc, err := nats.Connect(url)
	if err != nil {
		return nil, fmt.Errorf("broker: connect %s: %w", url, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	name := "stormsim_" + strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, topic) + "_" + strconv.FormatUint(seed, 10)
	subject := "stormsim.topic." + name
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{subject}, Storage: jetstream.MemoryStorage}); err != nil {
		return nil, fmt.Errorf("broker: create stream %s: %w", name, err)
	}
	defer js.DeleteStream(context.Background(), name)
	cons, err := js.CreateOrUpdateConsumer(ctx, name, jetstream.ConsumerConfig{Durable: h.consName, AckPolicy: jetstream.AckExplicitPolicy,
		AckWait: h.cons.AckDeadline, MaxDeliver: h.cons.MaxDeliveries, MaxAckPending: -1})
	if err != nil {
		return nil, fmt.Errorf("broker: create consumer: %w", err)
	}

	start := time.Now()
	t := &tally{effects: map[uint64]int{}, done: map[uint64]bool{}, stale: map[uint64]bool{}, last: map[int]uint64{},
		versionCheck: h.cons.VersionCheck}
	t.sum.Topic = topic
	settledCh := make(chan struct{}, 1)
	settle := func() {
		t.settled++
		select {
		case settledCh <- struct{}{}:
		default:
		}
	}
	// Dead letters: JetStream's advisory when a message reaches max_deliver.
	adv, err := nc.Subscribe("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES."+name+"."+h.consName, func(*nats.Msg) {
		t.mu.Lock()
		t.sum.DeadLettered++
		settle()
		t.mu.Unlock()
	})
	if err != nil {
		return nil, fmt.Errorf("broker: subscribe to advisories: %w", err)
	}
	defer adv.Unsubscribe()

	var crashMu sync.Mutex
	crng := model.Stream(seed, "consumer/"+h.consName)
	crash := func(rng *rand.Rand, fs []*topology.Fault, b model.CrashBoundary) bool {
		p := model.CrashProb(fs, b, time.Since(start))
		crashMu.Lock()
		defer crashMu.Unlock()
		return p > 0 && rng.Float64() < p
	}
	sem := make(chan struct{}, h.cons.Concurrency)
	var work sync.WaitGroup
	handle := func(msg jetstream.Msg) {
		md, err := msg.Metadata()
		if err != nil {
			return
		}
		hd := msg.Headers()
		id, _ := strconv.ParseUint(hd.Get("Stormsim-Intent"), 10, 64)
		key, _ := strconv.Atoi(hd.Get("Stormsim-Key"))
		seq, _ := strconv.ParseUint(hd.Get("Stormsim-Seq"), 10, 64)
		t.mu.Lock()
		t.sum.Deliveries++
		if md.NumDelivered > 1 {
			t.sum.Redeliveries++
		}
		t.mu.Unlock()
		if h.ack == model.AckBeforeEffect {
			if msg.DoubleAck(ctx) == nil {
				t.mu.Lock()
				settle()
				t.mu.Unlock()
			}
		}
		crashMu.Lock()
		d := h.st.Sample(crng)
		crashMu.Unlock()
		time.Sleep(d + model.LatencyAdd(h.consF, time.Since(start)))
		crashed := crash(crng, h.consF, model.CrashEffectAck)
		t.mu.Lock()
		switch h.ack {
		case model.AckBeforeEffect:
			if !crashed {
				t.apply(id, key, seq)
			}
		case model.AckAfterEffect:
			t.apply(id, key, seq)
		case model.AckTransactionalDedup:
			if !t.done[id] {
				t.done[id] = true
				t.apply(id, key, seq)
			}
		}
		t.mu.Unlock()
		if crashed || h.ack == model.AckBeforeEffect {
			return // a crash before the ack: JetStream redelivers after ack_wait
		}
		if msg.DoubleAck(ctx) == nil {
			t.mu.Lock()
			settle()
			t.mu.Unlock()
		}
	}
	cc, err := cons.Consume(func(msg jetstream.Msg) {
		sem <- struct{}{}
		work.Add(1)
		go func() {
			defer func() { <-sem; work.Done() }()
			handle(msg)
		}()
	})
	if err != nil {
		return nil, fmt.Errorf("broker: consume: %w", err)
	}
	defer func() { cc.Stop(); work.Wait() }()

	// The producer: n commits, each published by dual write or through
	// the outbox, whose publisher loop runs every outbox_interval.
	prng := model.Stream(seed, "publish/"+topic)
	var published int64
	var pubErr error
	publish := func(in *model.Intent) {
		if pubErr != nil {
			return
		}
		m := &nats.Msg{Subject: subject, Header: nats.Header{}}
		m.Header.Set("Stormsim-Intent", strconv.FormatUint(in.Seq, 10))
		m.Header.Set("Stormsim-Key", strconv.Itoa(in.Key))
		m.Header.Set("Stormsim-Seq", strconv.FormatUint(in.Seq, 10))
		if _, err := js.PublishMsg(ctx, m); err != nil {
			pubErr = fmt.Errorf("broker: publish: %w", err)
			return
		}
		published++
	}
	var ob model.Outbox
	for i := 1; i <= n; i++ {
		key := -1
		if h.pub.Keys > 0 {
			key = prng.IntN(h.pub.Keys)
		}
		in := model.NewIntent(key, uint64(i), true)
		if h.pub.Via == "outbox" {
			ob.Add(in)
		} else if !crash(prng, h.prodF, model.CrashCommitPublish) {
			publish(in)
		}
	}
	for ob.Len() > 0 && pubErr == nil {
		ob.PassTo(publish, func() bool { return crash(prng, h.prodF, model.CrashPublishMark) }, func(*model.Intent) {})
		if ob.Len() > 0 {
			select {
			case <-time.After(h.pub.OutboxInterval):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
	if pubErr != nil {
		return nil, pubErr
	}

	// Wait until every published message is settled.
	for {
		t.mu.Lock()
		done := t.settled >= published
		t.mu.Unlock()
		if done {
			break
		}
		select {
		case <-settledCh:
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			t.mu.Lock()
			settled := t.settled
			t.mu.Unlock()
			return nil, fmt.Errorf("broker: %d of %d messages settled: %w", settled, published, ctx.Err())
		}
	}
	cc.Stop()
	work.Wait()
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.sum
	s.Intents, s.Published = int64(n), published
	for i := 1; i <= n; i++ {
		e := t.effects[uint64(i)]
		if e == 0 && !t.stale[uint64(i)] {
			s.LostEffects++
		}
		if e > 1 {
			s.DuplicateEffects += int64(e - 1)
		}
	}
	return &s, nil
}
