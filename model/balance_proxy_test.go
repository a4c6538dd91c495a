package model

import (
	"slices"
	"testing"
	"time"

	"github.com/stormsim/stormsim/policies"
	"github.com/stormsim/stormsim/topology"
)

// picks runs one call's picks through PickNext, n of them.
func picks(b *Balancer, n int) []int {
	var tried []int
	for range n {
		b.PickNext(0, false, &tried)
	}
	return tried
}

func TestBalancerFollowsProxyRetries(t *testing.T) {
	tests := []struct {
		name  string
		kind  topology.Balance
		retry policies.RetryConfig
		n     int
		check func(t *testing.T, tried []int)
	}{
		{"nginx tries each server once", topology.BalanceRandom, policies.RetryConfig{EachServerOnce: true, MaxAttempts: 4}, 4,
			func(t *testing.T, tried []int) {
				s := slices.Clone(tried)
				slices.Sort(s)
				if !slices.Equal(s, []int{0, 1, 2, 3}) {
					t.Fatalf("tried %v, want each of 4 once", tried)
				}
			}},
		{"haproxy stays on its server", topology.BalanceRandom, policies.RetryConfig{SameServer: true, MaxAttempts: 4}, 4,
			func(t *testing.T, tried []int) {
				for _, i := range tried {
					if i != tried[0] {
						t.Fatalf("tried %v, want one server", tried)
					}
				}
			}},
		{"haproxy redispatches on the last retry", topology.BalanceRoundRobin, policies.RetryConfig{SameServer: true, Redispatch: -1, MaxAttempts: 4}, 4,
			func(t *testing.T, tried []int) {
				if tried[0] != tried[1] || tried[1] != tried[2] || tried[3] == tried[2] {
					t.Fatalf("tried %v, want three on one server, the last elsewhere", tried)
				}
			}},
		{"haproxy redispatching every retry moves each time", topology.BalanceRandom, policies.RetryConfig{SameServer: true, Redispatch: 1, MaxAttempts: 4}, 4,
			func(t *testing.T, tried []int) {
				for k := 1; k < len(tried); k++ {
					if tried[k] == tried[k-1] {
						t.Fatalf("tried %v, want a new server on every retry", tried)
					}
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBal(t, tt.kind, 4, nil)
			if err := b.FollowRetry(tt.retry); err != nil {
				t.Fatal(err)
			}
			for range 50 {
				tried := picks(b, tt.n)
				if len(tried) != tt.n {
					t.Fatalf("tried %v, want %d picks recorded", tried, tt.n)
				}
				tt.check(t, tried)
			}
		})
	}
}

// TestBalancerEachServerOnceSkipsEjected: an untried replica in service
// comes before an ejected one, and a tried one is never taken again, even
// when every untried one is ejected.
func TestBalancerEachServerOnceSkipsEjected(t *testing.T) {
	od := &topology.OutlierDetection{ConsecutiveFailures: 1, Interval: time.Second, BaseEjectionTime: 10 * time.Second,
		MaxEjectionTime: 10 * time.Second, MaxEjectionPercent: 100}
	b := newBal(t, topology.BalanceRoundRobin, 3, od)
	if err := b.FollowRetry(policies.RetryConfig{EachServerOnce: true, On: []policies.RetryClass{"not_sent", "timeout"}}); err != nil {
		t.Fatal(err)
	}
	// nginx counts only what it retries: a 503 is no failure, a timeout is.
	b.active[1]++
	b.Done(0, 1, policies.Unavailable, true)
	if b.Ejected(0, 1) {
		t.Fatal("a 503 ejected a server although on has no unavailable")
	}
	b.active[1]++
	b.Done(0, 1, policies.Timeout, true)
	if !b.Ejected(0, 1) {
		t.Fatal("a timeout did not eject the server (max_fails=1)")
	}
	tried := []int{0}
	if got := b.PickNext(0, false, &tried); got != 2 {
		t.Fatalf("picked %d, want 2: the untried server in service", got)
	}
	if got := b.PickNext(0, false, &tried); got != 1 {
		t.Fatalf("picked %d, want 1: the last untried server, ejected or not", got)
	}
}
