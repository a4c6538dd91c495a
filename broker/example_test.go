package broker_test

import (
	"context"
	"fmt"
	"time"

	"github.com/stormsim/stormsim/broker"
	"github.com/stormsim/stormsim/experiments"
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
