package serve

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stormsim/stormsim/broker"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/model"
	"github.com/stormsim/stormsim/topology"
)

// asyncCluster is a cluster's real broker: NATS JetStream, embedded on
// 127.0.0.1 (its store in a temporary directory removed at Close) unless
// the cluster was given a URL, and one stream per topic.
type asyncCluster struct {
	srv    *broker.Server // nil with an external server
	url    string
	conn   *broker.Conn
	topics map[string]*broker.Topic
}

// startAsync connects sc's topics to the NATS server at url, or to one it
// embeds when url is empty; nil when sc has no topic.
func startAsync(sc *topology.Scenario, url string) (*asyncCluster, error) {
	if !sc.HasTopics() {
		return nil, nil
	}
	if err := broker.Check(sc); err != nil {
		return nil, err
	}
	a := &asyncCluster{topics: map[string]*broker.Topic{}}
	if url == "" {
		srv, err := broker.Embedded()
		if err != nil {
			return nil, err
		}
		a.srv, url = srv, srv.URL()
	}
	conn, err := broker.Connect(url)
	if err != nil {
		a.close()
		return nil, err
	}
	a.conn, a.url = conn, url
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	keys := broker.Keys(sc)
	for i := range sc.Services {
		c := sc.Services[i].Consumes
		if c == nil {
			continue
		}
		t, err := conn.NewTopic(ctx, c.Topic, c, keys[c.Topic])
		if err != nil {
			a.close()
			return nil, err
		}
		a.topics[c.Topic] = t
	}
	return a, nil
}

// close deletes the streams and stops the embedded server (after the
// services stopped their producers and consumers).
func (a *asyncCluster) close() error {
	if a == nil {
		return nil
	}
	var errs []error
	for _, t := range a.topics {
		errs = append(errs, t.Close())
	}
	if a.conn != nil {
		a.conn.Close()
	}
	if a.srv != nil {
		a.srv.Close()
	}
	return errors.Join(errs...)
}

// drainBound is how long the topics may go without an intent folding
// once the schedule ended: the slowest outbox's interval twice, then
// every delivery of a message up to max_deliveries running into its ack
// deadline, plus a second for the round trips.
func drainBound(sc *topology.Scenario) time.Duration {
	var pass, deliveries time.Duration
	for i := range sc.Services {
		s := &sc.Services[i]
		for _, c := range s.Calls {
			if c.Publish != nil {
				pass = max(pass, 2*c.Publish.OutboxInterval)
			}
		}
		if c := s.Consumes; c != nil {
			deliveries = max(deliveries, time.Duration(c.MaxDeliveries)*c.AckDeadline)
		}
	}
	return pass + deliveries + time.Second
}

// wait waits until every topic's intents have folded, as long as some
// intent folds within each d (an ordered topic settles its keys' backlogs
// one message at a time) and ctx lasts; those left are reported as in
// flight.
func (a *asyncCluster) wait(ctx context.Context, d time.Duration) {
	if a == nil {
		return
	}
	for {
		before := a.inFlight()
		if before == 0 {
			return
		}
		wctx, cancel := context.WithTimeout(ctx, d)
		for _, t := range a.topics {
			if t.Wait(wctx) != nil {
				break
			}
		}
		cancel()
		if ctx.Err() != nil || a.inFlight() >= before {
			return
		}
	}
}

// inFlight is the number of intents of all topics not folded yet.
func (a *asyncCluster) inFlight() int {
	n := 0
	for _, t := range a.topics {
		n += t.InFlight()
	}
	return n
}

// wireAsync gives service s its publish steps' producers and, if it
// consumes a topic, its consumer group, on the cluster's topics. Each
// replica publishes through its own outbox and is one member of its
// service's consumer group (the durable consumer they share), with the
// faults that hit it and its own streams, as simulated.
func (s *Service) wireAsync(topics map[string]*broker.Topic) error {
	svc := &s.cfg
	hasPub := false
	for _, c := range svc.Calls {
		hasPub = hasPub || c.Publish != nil
	}
	if !hasPub && svc.Consumes == nil {
		return nil
	}
	if topics == nil {
		return fmt.Errorf("load: %s: the scenario has topics: run the services with StartCluster, which connects them to a NATS JetStream", s.name)
	}
	faults := s.node.Faults
	for j, st := range s.node.Steps {
		pb := st.Publish
		if pb == nil {
			continue
		}
		t := topics[pb.Topic]
		if t == nil {
			return fmt.Errorf("load: services.%s.calls[%d].publish.topic: no service consumes %q", s.name, j, pb.Topic)
		}
		p := t.NewProducer(pb, faults, model.Stream(s.plan.Seed, st.PublishStream), s.now)
		s.calls[j].pub = p
		go p.Run(s.stop)
	}
	if c := svc.Consumes; c != nil {
		t := topics[c.Topic]
		st, _, err := model.Delay(&svc.ServiceTime, fmt.Sprintf("services.%s.service_time", s.name))
		if err != nil {
			return fmt.Errorf("load: %w", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s.consumer, err = t.Consume(ctx, broker.ConsumerConfig{Service: s.name, Consume: c, ServiceTime: st,
			SlowdownPerInflight: svc.SlowdownPerInflight, Faults: faults, Rand: model.Stream(s.plan.Seed, s.node.ConsumerStream), Now: s.now, Members: svc.ReplicaCount()})
		if err != nil {
			return err
		}
		s.topic = t
	}
	return nil
}

// publish runs a publish step: the commit of an intent, counted when
// committed after the warm-up, as the simulator counts it. It takes no
// time of the attempt's and never fails it (a refused publish is counted
// in the consumer summary's publish_errors).
func (s *Service) publish(p *broker.Producer) {
	_ = p.Commit(s.stop, s.now() >= s.warmup)
}

// ConsumerSummary returns the summary of the topic s consumes (nil if
// none): what JetStream delivered and each intent's effects, intents
// still in flight apart.
func (s *Service) ConsumerSummary() *metrics.ConsumerSummary {
	if s.topic == nil {
		return nil
	}
	c := s.topic.Summary()
	return &c
}

// topicMap is the cluster's topics by name; nil without a broker.
func (a *asyncCluster) topicMap() map[string]*broker.Topic {
	if a == nil {
		return nil
	}
	return a.topics
}

// NATS returns the URL of the NATS server running the scenario's topics
// and whether the cluster embeds it; "" when the scenario has none.
func (c *Cluster) NATS() (url string, embedded bool) {
	if c.async == nil {
		return "", false
	}
	return c.async.url, c.async.srv != nil
}

// topicCounts are the counts of a topic the time series takes per
// interval: every delivery, and the effects of intents after warm-up.
type topicCounts struct {
	raw broker.RawCounts
	sum metrics.ConsumerSummary
}

// topic adds consuming service n's topic columns, under the simulator's
// names: deliveries and redeliveries in the interval (all of them),
// effects, lost, duplicate and out-of-order effects of the intents after
// warm-up (lost and duplicate ones in the interval their intent folded
// in), and the backlog at the sample: messages published and not yet
// settled (acked or dead-lettered), those in process included.
func (sm *sampler) topic(n string, t *broker.Topic) {
	now := topicCounts{raw: t.Raw(), sum: t.Summary()}
	p := sm.prevTopic[n]
	sm.prevTopic[n] = now
	sm.add(metrics.MetricDeliveries, n, float64(now.raw.Deliveries-p.raw.Deliveries))
	sm.add(metrics.MetricRedeliveries, n, float64(now.raw.Redeliveries-p.raw.Redeliveries))
	sm.add(metrics.MetricBacklog, n, float64(now.raw.Backlog))
	sm.add(metrics.MetricEffects, n, float64(now.sum.Effects-p.sum.Effects))
	sm.add(metrics.MetricLostEffects, n, float64(now.sum.LostEffects-p.sum.LostEffects))
	sm.add(metrics.MetricDuplicateEffects, n, float64(now.sum.DuplicateEffects-p.sum.DuplicateEffects))
	sm.add(metrics.MetricOutOfOrderEffects, n, float64(now.sum.OutOfOrderEffects-p.sum.OutOfOrderEffects))
}

// registerConsumer exposes the topic a service consumes for Prometheus,
// labelled by service and topic (by its first replica only: the topic's
// counts are the whole group's): every delivery and redelivery, the
// backlog, and the simulator's effect counts of the intents after warm-up.
func (s *Service) registerConsumer(reg *prometheus.Registry) {
	t := s.topic
	if t == nil || s.rep != 0 {
		return
	}
	labels := prometheus.Labels{"service": s.name, "topic": t.Name()}
	counter := func(name, help string, get func() int64) {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: "stormsim", Subsystem: "consumer", Name: name, Help: help, ConstLabels: labels,
		}, func() float64 { return float64(get()) }))
	}
	counter("deliveries_total", "Deliveries of the topic's messages, warm-up included.", func() int64 { return t.Raw().Deliveries })
	counter("redeliveries_total", "Deliveries after the first of a message, warm-up included.", func() int64 { return t.Raw().Redeliveries })
	counter("dead_lettered_total", "Messages dead-lettered after max_deliveries.", func() int64 { return t.Summary().DeadLettered })
	counter("effects_total", "Effects applied.", func() int64 { return t.Summary().Effects })
	counter("lost_effects_total", "Intents folded without an effect.", func() int64 { return t.Summary().LostEffects })
	counter("duplicate_effects_total", "Effects beyond the first of each intent.", func() int64 { return t.Summary().DuplicateEffects })
	counter("out_of_order_effects_total", "Effects applied after a later event of their key.", func() int64 { return t.Summary().OutOfOrderEffects })
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "stormsim", Subsystem: "consumer", Name: "backlog", Help: "Messages published and not yet acked or dead-lettered.", ConstLabels: labels,
	}, func() float64 { return float64(t.Raw().Backlog) }))
}
