// Package scenariogen makes random valid scenarios from bytes, for the
// fuzz and property tests of the simulator and serve: chains, fan-outs and
// parallel groups with quorums, retries, hedges, breakers, budgets,
// deadlines, faults, replicas, zones, balancers and client fleets. The
// same bytes give the same scenario.
package scenariogen

import (
	"fmt"
	"time"

	"github.com/stormsim/stormsim/policies"
	"github.com/stormsim/stormsim/topology"
)

func exp(mean time.Duration) topology.Dist { return topology.Dist{Dist: "exponential", Mean: mean} }
func intp(v int) *int                      { return &v }
func fp(v float64) *float64                { return &v }

// FromBytes builds a small scenario from bytes: a chain or fan-out of up
// to four services with arbitrary mixes of retries, timeouts, deadlines,
// cancellation, queues, hedging, breakers, budgets, pushback, writes with
// keys and faults. Every request has a deadline, so every run must drain.
func FromBytes(b []byte) *topology.Scenario {
	at := 0
	next := func() int {
		if at >= len(b) {
			return 0
		}
		at++
		return int(b[at-1])
	}
	flag := func() bool { return next()%2 == 1 }
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	call := func(to string) topology.Call {
		c := topology.Call{To: to, Timeout: ms(next() % 50), PropagateDeadline: flag(), HonorPushback: flag()}
		c.Retry = policies.RetryConfig{MaxAttempts: next()%4 + 1, Backoff: policies.BackoffConfig{Initial: ms(next() % 5), Jitter: "full"}}
		if flag() {
			c.Retry.On = []policies.RetryClass{"error", "timeout", "unavailable"}
		}
		if flag() {
			net := exp(ms(next()%3 + 1))
			c.Network = &net
		}
		switch next() % 6 {
		case 1:
			c.Hedge = &policies.HedgeConfig{Delay: ms(next() % 10), MaxAttempts: next()%3 + 2, CancelOthers: flag()}
		case 2:
			c.Breaker = &policies.BreakerConfig{Kind: "consecutive", Failures: next()%5 + 1, OpenFor: ms(next()%100 + 1)}
		case 3:
			c.Budget = &policies.BudgetConfig{Kind: "ratio", Ratio: 0.1}
		case 4:
			c.Throttle = &policies.ThrottleConfig{K: 1.5, Window: time.Second}
		}
		return c
	}
	n := next()%4 + 1
	sc := &topology.Scenario{
		Name: "fuzz", Seed: uint64(next() + 1), Duration: 300 * time.Millisecond, Warmup: ms(next() % 100), Interval: 50 * time.Millisecond,
		Workload: topology.Workload{Entry: "s0", Rate: float64(next()%200 + 20), Deadline: ms(next()%200 + 1),
			WriteFraction: float64(next()%3) / 2, IdempotencyKeys: flag(), Client: call("")},
	}
	for i := range n {
		s := topology.Service{
			Name: fmt.Sprintf("s%d", i), Workers: next()%4 + 1, ServiceTime: exp(ms(next()%5 + 1)),
			ErrorRate: float64(next()%3) / 4, CancelOnTimeout: flag(), RejectExpired: flag(),
			SlowdownPerInflight: time.Duration(next()%3) * 100 * time.Microsecond,
		}
		switch next() % 4 {
		case 1:
			s.Queue = intp(next() % 5)
		case 2:
			s.Overload = policies.OverloadConfig{MaxQueueTime: ms(next()%20 + 1), Discipline: []policies.Discipline{"fifo", "lifo", "adaptive_lifo"}[next()%3],
				Pushback: &policies.PushbackConfig{RetryAfter: ms(next() % 20)}}
		case 3:
			s.DownstreamFailure = []topology.DownstreamFailure{"propagate", "unavailable", "error", "timeout"}[next()%4]
		}
		if i+1 < n {
			if flag() && i+2 < n {
				s.Calls = []topology.Call{{WaitFor: next() % 3, Parallel: []topology.Call{call(fmt.Sprintf("s%d", i+1)), call(fmt.Sprintf("s%d", i+2))}}}
			} else {
				c := call(fmt.Sprintf("s%d", i+1))
				c.Fanout = next()%3 + 1
				c.WaitFor = next() % (c.Fanout + 1)
				s.Calls = []topology.Call{c}
			}
		}
		sc.Services = append(sc.Services, s)
	}
	if flag() {
		f := topology.Fault{Service: fmt.Sprintf("s%d", next()%n), At: ms(next() % 200), For: ms(next()%200 + 1), LatencyAdd: ms(next() % 10),
			DropResponse: float64(next()%3) / 4}
		if flag() {
			f.Capacity = fp(float64(next()%3) / 2)
		}
		sc.Faults = []topology.Fault{f}
	}
	replicas(sc, next, flag)
	return sc
}

// replicas adds replicas, balancers, ejection, other_host, zones and
// client instances to a scenario, drawing after everything else so
// that the older draws keep their meaning.
func replicas(sc *topology.Scenario, next func() int, flag func() bool) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	kinds := []topology.Balance{"", topology.BalanceRoundRobin, topology.BalanceRandom, topology.BalanceLeastRequest, topology.BalanceP2C}
	zones := []string{"a", "b"}
	edge := func(c *topology.Call) {
		c.Balance = kinds[next()%len(kinds)]
		c.Retry.OtherHost = flag()
		c.ZoneAware = flag()
		if flag() {
			c.OutlierDetection = &topology.OutlierDetection{ConsecutiveFailures: next()%3 + 1, Interval: ms(next()%50 + 1),
				BaseEjectionTime: ms(next()%100 + 1), MaxEjectionTime: ms(200), MaxEjectionPercent: float64(next() % 101)}
		}
		if flag() {
			d := exp(ms(1))
			c.CrossZoneNetwork = &d
		}
	}
	for i := range sc.Services {
		s := &sc.Services[i]
		if r := next() % 4; r > 1 {
			s.Replicas = r
		}
		if flag() {
			s.Zones = zones
		}
		for j := range s.Calls {
			edge(&s.Calls[j])
			for k := range s.Calls[j].Parallel {
				edge(&s.Calls[j].Parallel[k])
			}
		}
	}
	edge(&sc.Workload.Client)
	sc.Workload.Instances = next() % 3
	if flag() {
		sc.Workload.Zones = zones
	}
	for i := range sc.Faults {
		f := &sc.Faults[i]
		switch next() % 3 {
		case 1:
			f.Replica = intp(next() % sc.Service(f.Service).ReplicaCount())
		case 2:
			if len(sc.Service(f.Service).Zones) > 0 {
				f.Zone = zones[next()%2]
			}
		}
	}
}
