package policies_test

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/stormsim/stormsim/policies"
)

// A write whose first attempt never left the caller (its TLS handshake
// ran out) is retried once, transparently, although the edge makes one
// attempt only; an attempt that was sent and timed out is not.
func ExampleRetryConfig_transparent() {
	e, err := policies.NewEdge(policies.EdgeConfig{
		Timeout: 100 * time.Millisecond,
		Phases:  policies.PhaseTimeouts{TLS: 50 * time.Millisecond},
		Retry:   policies.RetryConfig{Transparent: true},
	}, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		panic(err)
	}
	var c policies.Call
	a := c.Start(0, e, policies.CallOptions{Write: true})
	fmt.Println(a.Kind, a.Attempt)
	a = c.Answered(50*time.Millisecond, 1, policies.NotSent, 0, false)
	fmt.Println(a.Kind, a.Attempt)
	a = c.TimedOut(150*time.Millisecond, 2)
	fmt.Println(a.Kind, a.Outcome, a.Result)
	// Output:
	// send 1
	// send 2
	// finish timeout unknown
}

// A proxy's per-server queue (HAProxy's server maxconn with timeout
// queue): an attempt that waited 50ms for a slot is the proxy's own 503,
// which ends the call although the edge retries unavailable.
func ExampleCall_WaitTimedOut() {
	phases := policies.PhaseTimeouts{Queue: 50 * time.Millisecond}
	wait, class := phases.PoolWait()
	fmt.Println(wait, class)
	e, err := policies.NewEdge(policies.EdgeConfig{
		Phases: phases,
		Retry:  policies.RetryConfig{MaxAttempts: 4, On: []policies.RetryClass{"unavailable"}},
	}, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		panic(err)
	}
	var c policies.Call
	c.Start(0, e, policies.CallOptions{})
	a := c.WaitTimedOut(wait, 1)
	fmt.Println(a.Kind, a.Outcome, a.Result)
	// Output:
	// 50ms unavailable
	// finish unavailable failed
}
