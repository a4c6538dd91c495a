package sim_test

import (
	"context"
	"fmt"
	"time"

	"github.com/stormsim/stormsim/policies"
	"github.com/stormsim/stormsim/sim"
	"github.com/stormsim/stormsim/topology"
)

// Three attempts at each of three hops, the database always failing: every
// logical request reaches the database 3³ = 27 times.
func ExampleRun() {
	retry := policies.RetryConfig{MaxAttempts: 3, On: []policies.RetryClass{"error"}}
	work := topology.Dist{Dist: "constant", Value: time.Millisecond}
	sc := &topology.Scenario{
		Name: "retry-storm", Seed: 1, Duration: time.Second, Interval: time.Second,
		Workload: topology.Workload{Entry: "gateway", Arrival: "constant", Rate: 10, Client: topology.Call{Retry: retry}},
		Services: []topology.Service{
			{Name: "gateway", Workers: 100, ServiceTime: work, Calls: []topology.Call{{To: "orders", Retry: retry}}},
			{Name: "orders", Workers: 100, ServiceTime: work, Calls: []topology.Call{{To: "db", Retry: retry}}},
			{Name: "db", Workers: 100, ServiceTime: work, ErrorRate: 1},
		},
	}
	res, err := sim.Run(context.Background(), sc, sim.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	sum := res.Summary
	fmt.Println(sum.Status, "offered", sum.Requests.Offered, "failed", sum.Requests.Failed)
	for _, s := range sum.Services {
		fmt.Printf("%-8s attempts %4d  amplification %g\n", s.Name, s.Attempts, s.Amplification)
	}
	// Output:
	// complete offered 10 failed 10
	// gateway  attempts   30  amplification 3
	// orders   attempts   90  amplification 9
	// db       attempts  270  amplification 27
}

// PlanOf is the plan a run binds: here a gateway with two replicas, each
// with its own stream and its own edge to the database.
func ExamplePlanOf() {
	work := topology.Dist{Dist: "constant", Value: time.Millisecond}
	sc := &topology.Scenario{
		Name: "plan", Seed: 1, Duration: time.Second, Interval: time.Second,
		Workload: topology.Workload{Entry: "gateway", Arrival: "constant", Rate: 10},
		Services: []topology.Service{
			{Name: "gateway", Replicas: 2, Workers: 4, ServiceTime: work, Calls: []topology.Call{{To: "db"}}},
			{Name: "db", Workers: 4, ServiceTime: work},
		},
	}
	p, err := sim.PlanOf(sc)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range p.Edges {
		fmt.Println(e.Stream, "replicas:", e.Replicas)
	}
	// Output:
	// edge/client->gateway replicas: 2
	// edge/gateway->db replicas: 1
	// edge/gateway#r1->db replicas: 1
}
