package model

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stormsim/stormsim/policies"
	"github.com/stormsim/stormsim/topology"
)

// TestCalleeRateLimit: a local rate limit of 2 tokens filled once a second
// refuses the third arrival at once, before the queue, with a Retry-After
// to the next fill, and admits again after it.
func TestCalleeRateLimit(t *testing.T) {
	cfg := &topology.Service{Name: "s", Workers: 10, ServiceTime: topology.Dist{Dist: "constant", Value: time.Millisecond},
		Overload: policies.OverloadConfig{RateLimit: &policies.RateLimitConfig{MaxTokens: 2, FillInterval: time.Second}}}
	c, err := NewCallee[int](cfg, rand.New(rand.NewPCG(1, 1)), false, false)
	if err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		at   time.Duration
		adm  Admission
		want Answer
	}{
		{0, Started, Answer{}},
		{0, Started, Answer{}},
		{300 * time.Millisecond, Rejected, Answer{Outcome: policies.Unavailable, RetryAfter: 700 * time.Millisecond, Limited: true}},
		{time.Second, Started, Answer{}},
	} {
		adm, ans := c.Arrive(tc.at, i, false)
		if adm != tc.adm || ans != tc.want {
			t.Fatalf("arrival %d at %v: %v %+v, want %v %+v", i, tc.at, adm, ans, tc.adm, tc.want)
		}
	}
}
