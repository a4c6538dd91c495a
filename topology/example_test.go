package topology_test

import (
	"fmt"

	"github.com/stormsim/stormsim/topology"
)

func ExampleParse() {
	const doc = `
name: two-tier
duration: 30s
workload: {entry: api, rate: 200}
services:
  - name: api
    workers: 8
    service_time: {dist: exponential, mean: 2ms}
    calls:
      - to: db
        timeout: 100ms
        retry: {preset: grpc, max_attempts: 2}
  - name: db
    workers: 4
    queue: 50
    service_time: {dist: lognormal, p50: 5ms, p99: 50ms}
`
	sc, err := topology.Parse("two-tier.yaml", []byte(doc), []string{"services.db.workers=6"})
	if err != nil {
		fmt.Println(err)
		return
	}
	call := sc.Service("api").Calls[0]
	fmt.Println("db workers:", sc.Service("db").Workers)
	fmt.Println("retry:", call.Retry.MaxAttempts, "attempts, backoff from", call.Retry.Backoff.Initial)
	fmt.Println("commits:", sc.Service("db").Commits, "interval:", sc.Interval)

	_, err = topology.Parse("two-tier.yaml", []byte(doc), []string{"services.db.workers=-1", "services.api.wrkers=2"})
	fmt.Println(err)
	// Output:
	// db workers: 6
	// retry: 2 attempts, backoff from 100ms
	// commits: true interval: 1s
	// --set services.db.workers=-1: services[1].workers: must be > 0, got -1
	// --set services.api.wrkers=2: unknown key "wrkers" in services.api (did you mean workers?)
}

// Suggest finds the plausible typo's intended word, and nothing for a
// word too far from every candidate.
func ExampleSuggest() {
	commands := []string{"run", "compare", "sweep", "validate"}
	fmt.Printf("%q\n", topology.Suggest("comapre", commands))
	fmt.Printf("%q\n", topology.Suggest("frobnicate", commands))
	// Output:
	// "compare"
	// ""
}
