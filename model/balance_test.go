package model

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stormsim/stormsim/policies"
	"github.com/stormsim/stormsim/topology"
)

func newBal(t *testing.T, kind topology.Balance, n int, od *topology.OutlierDetection) *Balancer {
	t.Helper()
	b, err := NewBalancer(kind, n, od, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBalancerPicks(t *testing.T) {
	t.Run("round_robin cycles from its start", func(t *testing.T) {
		b := newBal(t, topology.BalanceRoundRobin, 4, nil)
		first := b.Pick(0, nil)
		for k := 1; k < 12; k++ {
			if got, want := b.Pick(0, nil), (first+k)%4; got != want {
				t.Fatalf("pick %d: %d, want %d", k, got, want)
			}
		}
	})
	t.Run("least_request takes the fewest outstanding", func(t *testing.T) {
		b := newBal(t, topology.BalanceLeastRequest, 3, nil)
		b.active = []int32{4, 1, 2}
		for range 5 {
			if got := b.Pick(0, nil); got != 1 {
				t.Fatalf("picked %d, want 1 (one outstanding)", got)
			}
			b.Done(0, 1, policies.OK, true)
		}
	})
	t.Run("least_request breaks ties evenly", func(t *testing.T) {
		b := newBal(t, topology.BalanceLeastRequest, 4, nil)
		var count [4]int
		const n = 40000
		for range n {
			i := b.Pick(0, nil)
			count[i]++
			b.Done(0, i, policies.OK, true)
		}
		// Binomial(n, 1/4): 4.5 sd ≈ 390.
		for i, c := range count {
			if c < n/4-390 || c > n/4+390 {
				t.Errorf("replica %d picked %d of %d times, want ≈ %d", i, c, n, n/4)
			}
		}
	})
	t.Run("p2c keeps the lesser of two", func(t *testing.T) {
		b := newBal(t, topology.BalanceP2C, 2, nil)
		b.active = []int32{0, 9}
		// With replacement: both draws are replica 1 a quarter of the time.
		var ones int
		const n = 40000
		for range n {
			i := b.Pick(0, nil)
			b.active[i]--
			if i == 1 {
				ones++
			}
		}
		if ones < n/4-390 || ones > n/4+390 {
			t.Errorf("the busy replica was picked %d of %d times, want ≈ n/4 (both draws on it)", ones, n)
		}
	})
	t.Run("avoid skips tried replicas while one remains", func(t *testing.T) {
		for _, kind := range []topology.Balance{topology.BalanceRoundRobin, topology.BalanceRandom, topology.BalanceLeastRequest, topology.BalanceP2C} {
			b := newBal(t, kind, 4, nil)
			var tried []int
			seen := map[int]bool{}
			for range 4 {
				i := b.Pick(0, tried)
				if seen[i] {
					t.Fatalf("%s: picked %d twice among %v", kind, i, tried)
				}
				seen[i] = true
				tried = append(tried, i)
			}
			if i := b.Pick(0, tried); i < 0 || i >= 4 {
				t.Fatalf("%s: all tried: picked %d, want any replica", kind, i)
			}
		}
	})
}

func TestBalancerEjection(t *testing.T) {
	od := &topology.OutlierDetection{ConsecutiveFailures: 3, Interval: time.Second, BaseEjectionTime: 2 * time.Second,
		MaxEjectionTime: 5 * time.Second, MaxEjectionPercent: 10}
	b := newBal(t, topology.BalanceRoundRobin, 5, od)
	fail := func(at time.Duration, i int) {
		b.active[i]++
		b.Done(at, i, policies.Unavailable, true)
	}
	// Two failures, a success, two more: no run of three.
	for _, o := range []policies.Outcome{policies.Error, policies.Timeout, policies.OK, policies.Unavailable, policies.Error} {
		b.active[2]++
		b.Done(100*time.Millisecond, 2, o, true)
	}
	if b.Ejected(100*time.Millisecond, 2) {
		t.Fatal("ejected without three failures in a row")
	}
	// Time only moves forward: each probe below is at or after the last.
	fail(300*time.Millisecond, 2) // the third in a row: ejected until tick(2.3s) = 3s
	if !b.Ejected(300*time.Millisecond, 2) {
		t.Fatal("not ejected after three failures in a row")
	}
	for k := range 20 {
		if b.Pick(time.Second, nil) == 2 {
			t.Fatalf("pick %d: an ejected replica was picked", k)
		}
	}
	// 10 % of 5 replicas rounds down to 0, but one may always be ejected;
	// a second may not.
	for range 3 {
		fail(1500*time.Millisecond, 4)
	}
	if b.Ejected(1500*time.Millisecond, 4) {
		t.Fatal("a second replica ejected past max_ejection_percent")
	}
	if !b.Ejected(2999*time.Millisecond, 2) || b.Ejected(3*time.Second, 2) {
		t.Fatal("first ejection must last until the tick at or after 2.3s, 3s")
	}
	// Back at 3s; three failures at 3.2s eject it for 2 × 2s, to tick(7.2s) = 8s.
	for range 3 {
		fail(3200*time.Millisecond, 2)
	}
	if !b.Ejected(7999*time.Millisecond, 2) || b.Ejected(8*time.Second, 2) {
		t.Fatal("the second ejection must last 2 × base, to the 8s tick")
	}
	// After 3 whole intervals in service the multiplier (2) has decayed to
	// 0: the next ejection is 1 × base again, to tick(11.5+2) = 14s.
	for range 3 {
		fail(11500*time.Millisecond, 2)
	}
	if !b.Ejected(13999*time.Millisecond, 2) || b.Ejected(14*time.Second, 2) {
		t.Fatal("after the multiplier decayed, the ejection must last base again")
	}
	if got := b.Ejections(); got != 3 {
		t.Fatalf("Ejections() = %d, want 3", got)
	}
	// Attempts cancelled by their caller neither fail nor reset.
	before := b.Outstanding(0)
	b.active[0]++
	b.Done(20*time.Second, 0, policies.Timeout, false)
	if b.od.consec[0] != 0 || b.Outstanding(0) != before {
		t.Fatal("an uncounted attempt changed the failure count")
	}
}

func TestBalancerNeverRefuses(t *testing.T) {
	od := &topology.OutlierDetection{ConsecutiveFailures: 1, Interval: time.Second, BaseEjectionTime: time.Minute,
		MaxEjectionTime: time.Minute, MaxEjectionPercent: 100}
	b := newBal(t, topology.BalanceP2C, 2, od)
	for i := range 2 {
		b.active[i]++
		b.Done(0, i, policies.Error, true)
	}
	if !b.Ejected(0, 0) || !b.Ejected(0, 1) {
		t.Fatal("both replicas should be ejected at 100 %")
	}
	if i := b.Pick(time.Second, nil); i < 0 || i > 1 {
		t.Fatalf("picked %d with every replica ejected, want one of them", i)
	}
}

func TestNewBalancerErrors(t *testing.T) {
	if _, err := NewBalancer("fastest", 2, nil, rand.New(rand.NewPCG(1, 1))); err == nil {
		t.Error("an unknown balancer was accepted")
	}
	if _, err := NewBalancer("", 0, nil, rand.New(rand.NewPCG(1, 1))); err == nil {
		t.Error("zero replicas were accepted")
	}
	if _, err := NewBalancer("", 2, &topology.OutlierDetection{ConsecutiveFailures: 1}, rand.New(rand.NewPCG(1, 1))); err == nil {
		t.Error("outlier detection without an interval was accepted")
	}
}

// TestBalancerPrefersLocal: zone-aware balancing stays in the caller's
// zone while a local replica is eligible, and leaves it when none is.
func TestBalancerPrefersLocal(t *testing.T) {
	od := &topology.OutlierDetection{ConsecutiveFailures: 1, Interval: time.Second, BaseEjectionTime: time.Minute,
		MaxEjectionTime: time.Minute, MaxEjectionPercent: 100}
	b := newBal(t, topology.BalanceRoundRobin, 6, od)
	svc := &topology.Service{Replicas: 6, Zones: []string{"a", "b", "c"}} // a: 0, 3; b: 1, 4; c: 2, 5
	b.PreferLocal(LocalReplicas(svc, "b"))
	for k := range 10 {
		if i := b.Pick(0, nil); i != 1 && i != 4 {
			t.Fatalf("pick %d: replica %d, want one in zone b (1 or 4)", k, i)
		}
	}
	// other_host: a retry avoiding both local replicas leaves the zone.
	if i := b.Pick(0, []int{1, 4}); i == 1 || i == 4 {
		t.Fatalf("a retry avoiding 1 and 4 picked %d", i)
	}
	// Both local replicas ejected: any other.
	for _, i := range []int{1, 4} {
		b.active[i]++
		b.Done(0, i, policies.Error, true)
	}
	for k := range 10 {
		if i := b.Pick(time.Second, nil); i == 1 || i == 4 {
			t.Fatalf("pick %d: ejected local replica %d", k, i)
		}
	}
	// No zone: no preference, the fast path.
	b.PreferLocal(LocalReplicas(svc, ""))
	if b.local != nil {
		t.Fatal("a caller without a zone must not prefer any replica")
	}
}

// BenchmarkBalancerPick prices one pick and its Done for each balancer
// over 16 replicas, and with ejection and an avoid list (the slow path):
// no allocation either way.
func BenchmarkBalancerPick(b *testing.B) {
	od := &topology.OutlierDetection{ConsecutiveFailures: 5, Interval: time.Second, BaseEjectionTime: time.Minute,
		MaxEjectionTime: time.Minute, MaxEjectionPercent: 50}
	for _, kind := range []topology.Balance{topology.BalanceRoundRobin, topology.BalanceRandom, topology.BalanceLeastRequest, topology.BalanceP2C} {
		for _, slow := range []bool{false, true} {
			name := string(kind)
			var avoid []int
			if slow {
				name += "/avoid+ejection"
				avoid = []int{3}
			}
			b.Run(name, func(b *testing.B) {
				bal, err := NewBalancer(kind, 16, od, rand.New(rand.NewPCG(1, 2)))
				if err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				var now time.Duration
				for b.Loop() {
					now += time.Microsecond
					i := bal.Pick(now, avoid)
					bal.Done(now, i, policies.OK, true)
				}
			})
		}
	}
}
