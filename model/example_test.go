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
	c.Finish(d, model.Ending{Outcome: policies.OK, Worked: true})
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

// ExampleCompile resolves a scenario into its plan: the gateway's step
// fans out twice to a replicated store, needing one answer; a fault hits
// the store's second replica only.
func ExampleCompile() {
	sc, err := topology.Parse("plan.yaml", []byte(`
name: plan
duration: 1s
workload: {entry: gw, rate: 10}
services:
  - name: gw
    workers: 4
    service_time: {dist: constant, value: 1ms}
    calls: [{to: store, fanout: 2, wait_for: 1}]
  - {name: store, replicas: 2, workers: 4, service_time: {dist: constant, value: 1ms}}
faults:
  - {service: store, replica: 1, at: 100ms, for: 100ms, latency_add: 5ms, reset_connections: true}
`), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := model.Compile(sc)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range p.Client {
		fmt.Println("client:", e.Stream)
	}
	for _, sp := range p.Services {
		for _, r := range sp.Replicas {
			fmt.Printf("%s replica %d: stream %s, %d faults, resets %v\n", sp.Name, r.Index, r.Stream, len(r.Faults), r.Resets)
			for _, st := range r.Steps {
				fmt.Printf("  step: %d members via %s (balance %s), need %d\n", len(st.Members), st.Members[0].Stream, st.Members[0].BalanceStream, st.Need)
			}
		}
	}
	// Output:
	// client: edge/client->gw
	// gw replica 0: stream service/gw, 0 faults, resets []
	//   step: 2 members via edge/gw->store (balance balance/edge/gw->store), need 1
	// store replica 0: stream service/store, 0 faults, resets []
	// store replica 1: stream service/store#r1, 1 faults, resets [100ms]
}

// A client polls after a write's outcome is unknown: PROCESSING twice,
// then SUCCEEDED, at a fixed interval without jitter.
func ExampleQuerier() {
	p := &model.QueryPolicy{First: 100 * time.Millisecond, Backoff: policies.Backoff{Initial: 250 * time.Millisecond, Multiplier: 1},
		Deadline: 10 * time.Second, Lease: time.Second}
	var q model.Querier
	a := q.Start(p, 2*time.Second, 0, 0) // the write's call ended unknown at 2s
	for _, st := range []model.RecordState{model.Processing, model.Processing, model.Succeeded} {
		now := a.At
		q.Wake(p, now)
		a = q.Answered(p, now+5*time.Millisecond, true, st)
		fmt.Printf("query at %v: %v -> next %v resolved=%v\n", now, st, a.At, a.Resolved)
	}
	fmt.Println("queries:", q.Sent())
	// Output:
	// query at 2.1s: PROCESSING -> next 2.355s resolved=false
	// query at 2.355s: PROCESSING -> next 2.61s resolved=false
	// query at 2.61s: SUCCEEDED -> next 0s resolved=true
	// queries: 3
}

// A reconciliation job watches two UNKNOWN records: the facts prove one,
// the other cannot be proved and reaches the manual queue after two scans.
func ExampleReconciler() {
	r := model.NewReconciler(model.ReconcilePolicy{Interval: time.Second, Batch: 10, MaxTries: 2})
	state := map[string]model.RecordState{"order-1": model.Unknown, "order-2": model.Unknown}
	facts := map[string]model.Fact{"order-1": model.FactFound, "order-2": model.FactUnknown}
	r.Watch("order-1", 0)
	r.Watch("order-2", 0)
	lookup := func(k string) (model.RecordState, bool) { return state[k], state[k] == model.Unknown }
	for scan := 1; scan <= 3; scan++ {
		for _, k := range append([]string(nil), r.Scan(time.Duration(scan)*time.Second, lookup)...) {
			d, manual := r.Resolve(k, facts[k], func(d model.Recovery) bool { state[k] = model.Succeeded; return true })
			fmt.Printf("scan %d: %s -> %v manual=%v\n", scan, k, d, manual)
		}
	}
	fmt.Printf("%+v\n", r.Stats())
	// Output:
	// scan 1: order-1 -> succeeded manual=false
	// scan 1: order-2 -> unknown manual=false
	// scan 2: order-2 -> unknown manual=true
	// {Runs:3 Items:3 Repaired:1 Rerepaired:0 Failed:2 ToManual:1}
}
