package model_test

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/stormsim/stormsim/model"
	"github.com/stormsim/stormsim/policies"
	"github.com/stormsim/stormsim/topology"
)

// ExampleCallee drives the callee machine by hand, as the simulator does
// from events and serve from HTTP handlers: one worker, a waiting room of
// one, three attempts arriving at once.
func ExampleCallee() {
	queue := 1
	cfg := topology.Service{Name: "db", Workers: 1, Queue: &queue,
		ServiceTime: topology.Dist{Dist: "constant", Value: 10 * time.Millisecond}}
	c, err := model.NewCallee[string](&cfg, model.Stream(1, model.ServiceStream("db")), false, false)
	if err != nil {
		panic(err)
	}
	for _, id := range []string{"a", "b", "c"} {
		adm, ans := c.Arrive(0, id, false)
		fmt.Println(id, adm == model.Started, adm == model.Queued, ans.Outcome)
	}
	d, _, _ := c.Begin(0, false, "", 0)
	fmt.Println("a works for", d)
	c.Finish(d, policies.OK, true, false, "", 0)
	c.Release()
	next, _ := c.Next(d, nil)
	fmt.Println("then", next)
	// Output:
	// a true false ok
	// b false true ok
	// c false false unavailable
	// a works for 10ms
	// then b
}

// ExampleArrivals lists a constant workload's arrivals across a rate step.
func ExampleArrivals() {
	w := &topology.Workload{Arrival: "constant", Rate: 2, Schedule: []topology.RateStep{{At: time.Second, Rate: 4}}}
	a := model.NewArrivals(w, 2*time.Second, rand.New(rand.NewPCG(1, 1)))
	for {
		at, _, ok := a.Next()
		if !ok {
			break
		}
		fmt.Print(at, " ")
	}
	fmt.Println()
	// Output: 0s 500ms 1s 1.25s 1.5s 1.75s
}

// A consumer that applies the effect and then acks applies it twice when
// it crashes in between: the broker redelivers after the ack deadline.
func ExampleGroup() {
	g, err := model.NewGroup(&topology.Consume{Topic: "order-created", Concurrency: 1, MaxDeliveries: 5, Ack: "after_effect"}, 0)
	if err != nil {
		panic(err)
	}
	in := model.NewIntent(-1, 1, true) // the producer's commit
	g.Publish(in)
	g.Release(in)
	d, _, _ := g.Next()
	g.Finish(d, true) // effect applied, crashed before the ack
	g.Expire(d)       // the ack deadline passes: redelivered
	d, _, _ = g.Next()
	g.Finish(d, false)
	fmt.Printf("effects %d, duplicates %d, lost %d\n", g.Stats.Effects, g.Stats.DuplicateEffects, g.Stats.LostEffects)
	// Output: effects 2, duplicates 1, lost 0
}

// ExampleBalancer spreads attempts over three replicas with p2c, ejects
// the one that fails twice in a row, and sends a retry elsewhere
// (retry.other_host): what the simulator does per attempt, and serve's
// callers per HTTP request.
func ExampleBalancer() {
	od := &topology.OutlierDetection{ConsecutiveFailures: 2, Interval: time.Second,
		BaseEjectionTime: 10 * time.Second, MaxEjectionTime: time.Minute, MaxEjectionPercent: 50}
	b, err := model.NewBalancer(topology.BalanceP2C, 3, od, model.Stream(1, model.BalanceStream("edge/api->db")))
	if err != nil {
		panic(err)
	}
	// Replica 1 refuses twice in a row: ejected until the 11 s tick.
	for range 2 {
		i := b.Pick(0, []int{0, 2}) // avoid 0 and 2 while another remains
		b.Done(0, i, policies.Unavailable, true)
	}
	fmt.Println("ejected:", b.Ejected(time.Second, 1), "ejections:", b.Ejections())
	// A call that tried replica 0 retries on the only one left in service.
	first := b.Pick(time.Second, []int{2})
	retry := b.Pick(time.Second, []int{first})
	fmt.Println("first:", first, "retry:", retry)
	fmt.Println("back at 11s:", !b.Ejected(11*time.Second, 1))
	// Output:
	// ejected: true ejections: 1
	// first: 0 retry: 2
	// back at 11s: true
}

// A balancer following HAProxy's retries: they stay on the server of the
// attempt before, and with option redispatch the last one goes elsewhere.
func ExampleBalancer_FollowRetry() {
	b, _ := model.NewBalancer(topology.BalanceRoundRobin, 3, nil, rand.New(rand.NewPCG(1, 1)))
	_ = b.FollowRetry(policies.RetryConfig{MaxAttempts: 4, SameServer: true, Redispatch: -1})
	var tried []int
	for range 4 {
		b.PickNext(0, false, &tried)
	}
	fmt.Println(tried[0] == tried[1] && tried[1] == tried[2], tried[3] != tried[2])
	// Output:
	// true true
}
