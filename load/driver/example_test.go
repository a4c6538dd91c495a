package driver_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/stormsim/stormsim/load/driver"
	"github.com/stormsim/stormsim/load/transport"
	"github.com/stormsim/stormsim/policies"
	"github.com/stormsim/stormsim/topology"
)

// Drive a target that fails every first attempt, with a client policy
// that retries once: every logical request succeeds, at twice the load.
func ExampleRun() {
	var attempts atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		attempts.Add(1)
		if r.Header.Get(transport.HeaderAttempt) == "1" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	// 50 requests a second for 200 ms, at the times the simulator would
	// offer them for seed 1.
	arrivals, err := driver.TargetArrivals(topology.ArrivalConstant, 50, 0, 200*time.Millisecond, 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := driver.Run(context.Background(), driver.Options{
		Target:   srv.URL,
		Arrivals: arrivals,
		Duration: 200 * time.Millisecond,
		Policy:   topology.Call{Retry: policies.RetryConfig{MaxAttempts: 2}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	s := res.Summary
	fmt.Printf("offered %d, succeeded %d, attempts %d, amplification %.1f\n",
		s.Requests.Offered, s.Requests.Succeeded, attempts.Load(), s.Amplification)
	fmt.Printf("retries %d, 503s %d\n", s.Edges[0].Retries, s.Load.Statuses["503"])
	// Output:
	// offered 10, succeeded 10, attempts 20, amplification 2.0
	// retries 10, 503s 10
}

func ExampleClassifyStatus() {
	h := http.Header{}
	transport.SetRetryAfter(h, 250*time.Millisecond, false)
	a := transport.ClassifyStatus(http.StatusServiceUnavailable, h)
	fmt.Println(a.Outcome, a.RetryAfter, h.Get("Retry-After"), h.Get(transport.HeaderRetryAfterMs))
	// Output:
	// unavailable 250ms 1 250
}

// The arrivals of a run against a target are the simulator's: constant
// arrivals at n/rate, rounded to the nanosecond.
func ExampleTargetArrivals() {
	a, err := driver.TargetArrivals(topology.ArrivalConstant, 3, 0, time.Second, 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	for n := uint64(0); ; n++ {
		at, ok := a.At(n)
		if !ok {
			break
		}
		fmt.Println(n, at)
	}
	// Output:
	// 0 0s
	// 1 333.333333ms
	// 2 666.666667ms
}
