package broker_test

import (
	"context"
	"fmt"
	"time"

	"github.com/stormsim/stormsim/broker"
	"github.com/stormsim/stormsim/dist"
	"github.com/stormsim/stormsim/experiments"
	"github.com/stormsim/stormsim/model"
	"github.com/stormsim/stormsim/topology"
)

// outbox-order's consumer crashing between every effect and its ack,
// through a real JetStream: each event is delivered max_deliveries (3)
// times, applied each time, then dead-lettered.
func ExampleWalk() {
	srv, err := broker.Embedded()
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	data, _ := experiments.Lookup("outbox-order")
	sc, err := topology.Parse("outbox-order.yaml", data, []string{"faults.1.crash_between_effect_and_ack=1",
		"faults.0.crash_between_commit_and_publish=0", "services.1.consumes.ack_deadline=300ms", "services.1.consumes.max_deliveries=3"})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := broker.Walk(ctx, srv.URL(), sc, "order-created", 5, 1)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%d intents: %d deliveries, %d effects, %d duplicate, %d dead-lettered\n",
		c.Intents, c.Deliveries, c.Effects, c.DuplicateEffects, c.DeadLettered)
	// Output: 5 intents: 15 deliveries, 15 effects, 10 duplicate, 5 dead-lettered
}

// A producer's outbox publisher crashing after every publish, and a
// consumer deduplicating in the effect's transaction, built from the
// pieces serve uses: each event is published twice and applied once.
func ExampleTopic() {
	srv, err := broker.Embedded()
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	conn, err := broker.Connect(srv.URL())
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	consume := &topology.Consume{Topic: "orders", Concurrency: 4, AckDeadline: time.Second, MaxDeliveries: 3, Ack: "transactional_dedup"}
	t, err := conn.NewTopic(ctx, "orders", consume, 0)
	if err != nil {
		panic(err)
	}
	defer t.Close()
	start := time.Now()
	now := func() time.Duration { return time.Since(start) }
	st, err := dist.New(topology.Dist{Dist: "constant", Value: time.Millisecond})
	if err != nil {
		panic(err)
	}
	crash := []*topology.Fault{{At: 0, For: time.Minute, CrashBetweenPublishAndMark: 1}}
	c, err := t.Consume(ctx, broker.ConsumerConfig{Service: "inventory", Now: now, Rand: model.Stream(1, "consumer/inventory"),
		Consume: consume, ServiceTime: st})
	if err != nil {
		panic(err)
	}
	defer c.Stop()
	p := t.NewProducer(&topology.Publish{Topic: "orders", Via: "outbox", OutboxInterval: 10 * time.Millisecond}, crash, model.Stream(1, "publish/order/0"), now)
	for range 5 {
		if err := p.Commit(ctx, true); err != nil {
			panic(err)
		}
	}
	go p.Run(ctx)
	if err := t.Wait(ctx); err != nil {
		panic(err)
	}
	s := t.Summary()
	fmt.Printf("%d intents: %d published, %d effects, %d duplicate, %d lost\n", s.Intents, s.Published, s.Effects, s.DuplicateEffects, s.LostEffects)
	// Output: 5 intents: 10 published, 5 effects, 0 duplicate, 0 lost
}
