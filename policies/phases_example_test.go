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
