package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/stormsim/stormsim/policies"
	"github.com/stormsim/stormsim/topology"
)

// Balancer spreads one caller's attempts over the replicas of a callee: the
// load balancer of a call edge, with the edge's outlier detection. It is the
// one implementation the simulator and the HTTP driver share. It counts the
// attempts it sent to each replica that are still outstanding (the caller's
// own view, as Envoy's active-request count is), so least_request and p2c
// need no knowledge of the callee's queues.
//
// Like every policy it never reads the clock: Pick and Done take the time.
// It is not safe for concurrent use; serve guards it with a mutex.
type Balancer struct {
	kind   topology.Balance
	rng    *rand.Rand
	next   int     // round robin's next replica
	active []int32 // outstanding attempts per replica
	od     *outliers
	cand   []int                // scratch: the eligible replicas of one pick
	local  []bool               // replicas in the caller's zone (zone_aware); nil: no preference
	retry  policies.RetryConfig // the proxies' routing of retries (FollowRetry)
	// failOn, when set, are the answers counted toward ejection instead
	// of error, unavailable and timeout (nginx's failed attempts).
	failOn    policies.OutcomeSet
	hasFailOn bool
}

// FollowRetry makes the balancer route a call's retries by the reverse
// proxies' rules of its resolved retry policy: each_server_once (an
// untried replica, never one tried, ejected or not) and same_server (the
// replica of the attempt before, unless the retry is redispatched, then
// another by the balancer). With each_server_once an answer counts toward
// ejection only when its class is in retry.on, as nginx counts a failed
// attempt by proxy_next_upstream. A policy without these rules changes
// nothing.
func (b *Balancer) FollowRetry(r policies.RetryConfig) error {
	b.retry = r
	if !r.EachServerOnce {
		return nil
	}
	on, err := policies.ParseOutcomeSet(r.On, policies.DefaultRetryOn)
	if err != nil {
		return fmt.Errorf("retry.on: %w", err)
	}
	b.failOn, b.hasFailOn = on, true
	return nil
}

// NewBalancer returns the balancer of an edge to a callee with n replicas,
// drawing from rng. kind "" is round_robin; od nil means no outlier
// detection. Round robin starts at a random replica, so that the replicas
// of one caller do not all begin with the same callee.
func NewBalancer(kind topology.Balance, n int, od *topology.OutlierDetection, rng *rand.Rand) (*Balancer, error) {
	if n < 1 {
		return nil, fmt.Errorf("balance: a callee needs at least one replica, got %d", n)
	}
	switch kind {
	case "":
		kind = topology.BalanceRoundRobin
	case topology.BalanceRoundRobin, topology.BalanceRandom, topology.BalanceLeastRequest, topology.BalanceP2C:
	default:
		return nil, fmt.Errorf("balance: unknown balancer %q (want round_robin, random, least_request or p2c)", kind)
	}
	b := &Balancer{kind: kind, rng: rng, active: make([]int32, n), cand: make([]int, 0, n)}
	if kind == topology.BalanceRoundRobin {
		b.next = rng.IntN(n)
	}
	if od != nil {
		if od.ConsecutiveFailures < 1 || od.Interval <= 0 || od.BaseEjectionTime <= 0 {
			return nil, fmt.Errorf("outlier_detection: needs consecutive_failures ≥ 1, interval > 0 and base_ejection_time > 0, got %d, %v, %v",
				od.ConsecutiveFailures, od.Interval, od.BaseEjectionTime)
		}
		b.od = newOutliers(*od, n)
	}
	return b, nil
}

// PreferLocal makes the balancer pick among the replicas marked local (in
// the caller's zone) while one of them is eligible, and among all
// otherwise: zone-aware routing. A nil or all-false local turns it off.
func (b *Balancer) PreferLocal(local []bool) {
	b.local = nil
	if slices.Contains(local, true) {
		b.local = local
	}
}

// Replicas is the number of replicas the balancer spreads over.
func (b *Balancer) Replicas() int { return len(b.active) }

// Outstanding is the number of attempts sent to replica i and not yet Done.
func (b *Balancer) Outstanding(i int) int { return int(b.active[i]) }

// Pick chooses the replica for an attempt sent at now and counts it
// outstanding. avoid lists replicas to skip while another is eligible
// (retry.other_host: the replicas this call already tried). Ejected
// replicas are skipped too; when nothing is eligible the avoid list is
// dropped, then the ejections (a balancer never refuses to pick).
func (b *Balancer) Pick(now time.Duration, avoid []int) int {
	if b.od != nil {
		b.od.refresh(now)
	}
	var i int
	if len(avoid) == 0 && (b.od == nil || b.od.nEjected == 0) && b.local == nil {
		i = b.pickAll()
	} else {
		i = b.pickAmong(avoid)
	}
	b.active[i]++
	return i
}

// pickAll picks among every replica.
func (b *Balancer) pickAll() int {
	n := len(b.active)
	switch b.kind {
	case topology.BalanceRandom:
		return b.rng.IntN(n)
	case topology.BalanceLeastRequest:
		return b.least(nil)
	case topology.BalanceP2C:
		return b.p2c(nil)
	default:
		i := b.next
		b.next = (i + 1) % n
		return i
	}
}

// pickAmong picks among the eligible replicas: in service and not to be
// avoided, local ones first (zone_aware); then in service; then any.
func (b *Balancer) pickAmong(avoid []int) int {
	b.cand = b.cand[:0]
	for tier := range 3 {
		for i := range b.active {
			if b.od != nil && b.od.ejected(i) {
				continue
			}
			if tier < 2 && slices.Contains(avoid, i) {
				continue
			}
			if tier == 0 && (b.local == nil || !b.local[i]) {
				continue
			}
			b.cand = append(b.cand, i)
		}
		if len(b.cand) > 0 {
			break
		}
	}
	if len(b.cand) == 0 { // every replica ejected
		for i := range b.active {
			b.cand = append(b.cand, i)
		}
	}
	switch b.kind {
	case topology.BalanceRandom:
		return b.cand[b.rng.IntN(len(b.cand))]
	case topology.BalanceLeastRequest:
		return b.least(b.cand)
	case topology.BalanceP2C:
		return b.p2c(b.cand)
	default:
		// The first eligible replica from the round-robin position on.
		n := len(b.active)
		for k := range n {
			i := (b.next + k) % n
			if slices.Contains(b.cand, i) {
				b.next = (i + 1) % n
				return i
			}
		}
		return b.cand[0]
	}
}

// least picks the replica with the fewest outstanding attempts among cand
// (all replicas when nil), ties broken uniformly at random: one pass finds
// the least count and its ties, one draw picks among them.
func (b *Balancer) least(cand []int) int {
	n := len(b.active)
	if cand != nil {
		n = len(cand)
	}
	at := func(k int) int {
		if cand != nil {
			return cand[k]
		}
		return k
	}
	low, ties := b.active[at(0)], 0
	for k := range n {
		switch a := b.active[at(k)]; {
		case a < low:
			low, ties = a, 1
		case a == low:
			ties++
		}
	}
	r := 0
	if ties > 1 {
		r = b.rng.IntN(ties)
	}
	for k := range n {
		if i := at(k); b.active[i] == low {
			if r == 0 {
				return i
			}
			r--
		}
	}
	return at(0) // unreachable: low is some replica's count
}

// p2c draws two replicas of cand (all when nil) uniformly, with
// replacement as Envoy does, and keeps the one with fewer outstanding
// attempts (the first on a tie).
func (b *Balancer) p2c(cand []int) int {
	draw := func() int {
		if cand == nil {
			return b.rng.IntN(len(b.active))
		}
		return cand[b.rng.IntN(len(cand))]
	}
	i, j := draw(), draw()
	if b.active[j] < b.active[i] {
		return j
	}
	return i
}

// PickNext chooses the replica for a call's next attempt. With otherHost
// (retry.other_host, Envoy's previous_hosts predicate) the replicas in
// *tried are avoided while another remains, and the pick joins them; the
// simulator and serve's callers both keep tried per call.
//
// With FollowRetry's rules the call's every pick joins *tried: the
// retries that stay on their server take the last one again, and
// each_server_once never takes a tried one while one is untried.
func (b *Balancer) PickNext(now time.Duration, otherHost bool, tried *[]int) int {
	r := &b.retry
	n := len(*tried) // picks so far: this is retry n
	var i int
	switch {
	case r.SameServer && n > 0 && !r.RedispatchAt(n):
		i = (*tried)[n-1]
		b.active[i]++
	case r.SameServer && n > 0:
		i = b.Pick(now, (*tried)[n-1:])
	case r.EachServerOnce && n > 0 && n < len(b.active):
		i = b.pickUntried(now, *tried)
	default:
		var avoid []int
		if otherHost {
			avoid = *tried
		}
		i = b.Pick(now, avoid)
	}
	if otherHost || r.SameServer || r.EachServerOnce {
		*tried = append(*tried, i)
	}
	return i
}

// pickUntried picks among the replicas not in tried: those in service
// first (local ones first, zone_aware), else an ejected one.
func (b *Balancer) pickUntried(now time.Duration, tried []int) int {
	if b.od != nil {
		b.od.refresh(now)
	}
	i := b.pickAmong(tried)
	if slices.Contains(tried, i) {
		// Every untried replica is ejected: nginx answers 502 without
		// an attempt; the balancer never refuses, so it takes one.
		b.cand = b.cand[:0]
		for j := range b.active {
			if !slices.Contains(tried, j) {
				b.cand = append(b.cand, j)
			}
		}
		i = b.cand[0]
		if b.kind == topology.BalanceRandom {
			i = b.cand[b.rng.IntN(len(b.cand))]
		}
	}
	b.active[i]++
	return i
}

// Done records at now that the attempt sent to replica i ended: answered
// with outcome o, or timed out by its caller (o = policies.Timeout). A
// failure (error, unavailable, timeout) counts toward the replica's
// ejection; any other answer resets its count. Aborted attempts, whose
// answer the caller will never know, pass counted = false: they only stop
// being outstanding.
func (b *Balancer) Done(now time.Duration, i int, o policies.Outcome, counted bool) {
	b.active[i]--
	if b.od == nil || !counted {
		return
	}
	b.od.refresh(now)
	failed := o == policies.Error || o == policies.Unavailable || o == policies.Timeout
	if b.hasFailOn {
		failed = b.failOn.Has(o)
	}
	if failed {
		b.od.failed(now, i)
	} else {
		b.od.consec[i] = 0
	}
}

// Ejected reports whether replica i is ejected at now.
func (b *Balancer) Ejected(now time.Duration, i int) bool {
	if b.od == nil {
		return false
	}
	b.od.refresh(now)
	return b.od.ejected(i)
}

// Ejections is the number of ejections so far.
func (b *Balancer) Ejections() int64 {
	if b.od == nil {
		return 0
	}
	return b.od.total
}

// outliers is the outlier detection state of one balancer.
type outliers struct {
	cfg      topology.OutlierDetection
	maxEject int             // replicas that may be ejected at once
	consec   []int           // failures in a row, per replica
	until    []time.Duration // ejected until (an interval tick); 0 = in service
	mult     []int           // the ejection multiplier, per replica
	back     []time.Duration // the interval tick since which its multiplier last decayed
	nEjected int
	nextEnd  time.Duration // the earliest until among the ejected
	total    int64
}

func newOutliers(cfg topology.OutlierDetection, n int) *outliers {
	m := int(math.Floor(cfg.MaxEjectionPercent / 100 * float64(n)))
	return &outliers{cfg: cfg, maxEject: max(m, 1), consec: make([]int, n), until: make([]time.Duration, n),
		mult: make([]int, n), back: make([]time.Duration, n)}
}

func (o *outliers) ejected(i int) bool { return o.until[i] > 0 }

// tick is the first interval tick at or after t.
func (o *outliers) tick(t time.Duration) time.Duration {
	iv := o.cfg.Interval
	return (t + iv - 1) / iv * iv
}

// refresh returns the replicas whose ejection ended by now to service.
func (o *outliers) refresh(now time.Duration) {
	if o.nEjected == 0 || now < o.nextEnd {
		return
	}
	o.nextEnd = math.MaxInt64
	for i, u := range o.until {
		switch {
		case u == 0:
		case u <= now:
			o.until[i], o.consec[i], o.back[i] = 0, 0, u
			o.nEjected--
		default:
			o.nextEnd = min(o.nextEnd, u)
		}
	}
}

// failed counts a failure of replica i at now and ejects it when its run of
// failures reaches the threshold and the cap allows.
func (o *outliers) failed(now time.Duration, i int) {
	if o.ejected(i) {
		return // answers still arriving from before its ejection
	}
	o.consec[i]++
	if o.consec[i] < o.cfg.ConsecutiveFailures || o.nEjected >= o.maxEject {
		return
	}
	// Each interval spent in service since it last came back lowers the
	// multiplier by one, as Envoy's sweep does for a healthy host.
	if o.mult[i] > 0 {
		iv := o.cfg.Interval
		o.mult[i] = max(0, o.mult[i]-int(now/iv-o.back[i]/iv))
	}
	o.mult[i]++
	d := min(time.Duration(o.mult[i])*o.cfg.BaseEjectionTime, max(o.cfg.MaxEjectionTime, o.cfg.BaseEjectionTime))
	u := o.tick(now + d)
	if u <= now {
		u = now + 1 // an ejection lasts at least an instant
	}
	o.until[i], o.consec[i] = u, 0
	if o.nEjected == 0 || u < o.nextEnd {
		o.nextEnd = u
	}
	o.nEjected++
	o.total++
}

// LocalReplicas marks the replicas of s in zone: what PreferLocal takes.
func LocalReplicas(s *topology.Service, zone string) []bool {
	local := make([]bool, s.ReplicaCount())
	for r := range local {
		local[r] = zone != "" && s.ZoneOf(r) == zone
	}
	return local
}
