package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/policies"
	"github.com/stormsim/stormsim/topology"
)

func constant(d time.Duration) topology.Dist { return topology.Dist{Dist: "constant", Value: d} }

func intp(v int) *int { return &v }

func fp(v float64) *float64 { return &v }

// chain is services s1 → s2 → … → sN, every call (the client's included)
// making up to k attempts on errors, the bottom service always failing.
func chain(n, k int) *topology.Scenario {
	retry := policies.RetryConfig{MaxAttempts: k, On: []policies.RetryClass{"error"}}
	sc := &topology.Scenario{
		Name: fmt.Sprintf("chain-%d-%d", n, k), Seed: 1, Duration: time.Second, Interval: time.Second,
		Workload: topology.Workload{Entry: "s1", Arrival: "constant", Rate: 10, Client: topology.Call{Retry: retry}},
	}
	for i := 1; i <= n; i++ {
		s := topology.Service{Name: fmt.Sprintf("s%d", i), Workers: 1000, ServiceTime: constant(time.Microsecond)}
		if i < n {
			s.Calls = []topology.Call{{To: fmt.Sprintf("s%d", i+1), Retry: retry}}
		} else {
			s.ErrorRate = 1
		}
		sc.Services = append(sc.Services, s)
	}
	return sc
}

func TestAmplificationIsExact(t *testing.T) {
	for k := 2; k <= 4; k++ {
		for n := 1; n <= 5; n++ {
			t.Run(fmt.Sprintf("k=%d,n=%d", k, n), func(t *testing.T) {
				res := runScenario(t, chain(n, k))
				sum := res.Summary
				require.EqualValues(t, 10, sum.Requests.Offered)
				require.EqualValues(t, 10, sum.Requests.Failed, "every request fails definitely")
				for i, s := range sum.Services {
					want := math.Pow(float64(k), float64(i+1))
					require.Equal(t, want, s.Amplification, s.Name)
					require.EqualValues(t, 10*want, s.Attempts, s.Name)
				}
				require.Equal(t, math.Pow(float64(k), float64(n)), sum.Amplification)
			})
		}
	}
	require.Equal(t, 243.0, runScenario(t, chain(5, 3)).Summary.Amplification)
}

func svcOf(sum metrics.Summary, name string) metrics.ServiceSummary {
	for _, s := range sum.Services {
		if s.Name == name {
			return s
		}
	}
	panic("no service " + name)
}

func edgeOf(sum metrics.Summary, from, to string) metrics.EdgeSummary {
	for _, e := range sum.Edges {
		if e.From == from && e.To == to {
			return e
		}
	}
	panic("no edge " + from + "->" + to)
}

func TestRetryIsNeverScheduledPastTheDeadline(t *testing.T) {
	// Attempt 1 at 0 times out at 100ms; the retry waits 60ms and starts at
	// 160ms with a timeout cut to the 90ms left; a third attempt would start
	// at 310ms, past the 250ms deadline, so it is not scheduled.
	sc := &topology.Scenario{
		Name: "deadline", Seed: 1, Duration: time.Second, Interval: time.Second,
		Workload: topology.Workload{Entry: "slow", Arrival: "constant", Rate: 10, Deadline: 250 * time.Millisecond,
			Client: topology.Call{Timeout: 100 * time.Millisecond, Retry: policies.RetryConfig{MaxAttempts: 5,
				Backoff: policies.BackoffConfig{Initial: 60 * time.Millisecond, Multiplier: 1}}}},
		Services: []topology.Service{{Name: "slow", Workers: 100, ServiceTime: constant(time.Second)}},
	}
	sum := runScenario(t, sc).Summary
	e := edgeOf(sum, "client", "slow")
	require.EqualValues(t, 10, e.Calls)
	require.EqualValues(t, 20, e.Attempts)
	require.EqualValues(t, 10, e.RetriesDeadline)
	require.EqualValues(t, 10, e.Unknown)
	require.EqualValues(t, 10, sum.Requests.Unknown)
	s := svcOf(sum, "slow")
	require.EqualValues(t, 20, s.TimedOut)
	require.EqualValues(t, 20, s.Wasted, "without cancel_on_timeout the work is done for nobody")
}

func TestCancelOnTimeout(t *testing.T) {
	// 10 req/s for 10s, 200ms of work, the caller gives up after 50ms.
	run := func(cancel bool) metrics.ServiceSummary {
		sc := &topology.Scenario{
			Name: "cancel", Seed: 3, Duration: 10 * time.Second, Interval: time.Second,
			Workload: topology.Workload{Entry: "s", Arrival: "constant", Rate: 10, Client: topology.Call{Timeout: 50 * time.Millisecond}},
			Services: []topology.Service{{Name: "s", Workers: 4, ServiceTime: constant(200 * time.Millisecond), CancelOnTimeout: cancel}},
		}
		sum := runScenario(t, sc).Summary
		require.EqualValues(t, 100, sum.Requests.Unknown)
		return sum.Services[0]
	}
	keep := run(false)
	require.EqualValues(t, 100, keep.Wasted)
	require.EqualValues(t, 100, keep.TimedOut)
	// Busy time 100 × 200ms over 4 workers × 10.1s of run (the last arrival at 9.9s works until 10.1s).
	require.InDelta(t, 20.0/(4*10.1), keep.Utilization, 1e-9)

	stop := run(true)
	require.Zero(t, stop.Wasted)
	require.EqualValues(t, 100, stop.TimedOut)
	require.InDelta(t, 5.0/(4*10), stop.Utilization, 1e-3)
}

// TestCancelledQueuedAttemptFreesItsPlace: b has one worker and a queue of
// one. Each request of a calls b twice at once: a long call that holds the
// worker or waits, and a 5ms call that queues behind it and is cancelled.
// The cancelled attempt must give its queue place back at once, so the next
// request's long call is admitted instead of being rejected.
func TestCancelledQueuedAttemptFreesItsPlace(t *testing.T) {
	sc := &topology.Scenario{
		Name: "cancel-queued", Seed: 1, Duration: 15 * time.Millisecond, Interval: time.Second,
		Workload: topology.Workload{Entry: "a", Arrival: "constant", Rate: 100},
		Services: []topology.Service{
			{Name: "a", Workers: 4, ServiceTime: constant(0), Calls: []topology.Call{{WaitFor: 1, Parallel: []topology.Call{
				{To: "b", Timeout: 2 * time.Second},
				{To: "b", Timeout: 5 * time.Millisecond},
			}}}},
			{Name: "b", Workers: 1, Queue: intp(1), ServiceTime: constant(time.Second), CancelOnTimeout: true},
		},
	}
	sum := runScenario(t, sc).Summary
	b := svcOf(sum, "b")
	require.EqualValues(t, 4, b.Attempts)
	// At 10ms: the first request's short call was cancelled at 5ms, so the
	// second's long call queues; its short call finds the queue full.
	require.EqualValues(t, 1, b.Rejected)
	require.EqualValues(t, 2, b.Succeeded, "both long calls are served")
	require.EqualValues(t, 1, b.QueueMax)
	require.EqualValues(t, 2, sum.Requests.Succeeded)
}

func TestCancellationReachesDownstream(t *testing.T) {
	// The client gives up on a after 10ms; a honours it and abandons its
	// call to b, which honours it too, so b stops working.
	sc := &topology.Scenario{
		Name: "cancel-chain", Seed: 1, Duration: time.Second, Interval: time.Second,
		Workload: topology.Workload{Entry: "a", Arrival: "constant", Rate: 10, Client: topology.Call{Timeout: 10 * time.Millisecond}},
		Services: []topology.Service{
			{Name: "a", Workers: 10, ServiceTime: constant(time.Millisecond), CancelOnTimeout: true, Calls: []topology.Call{{To: "b"}}},
			{Name: "b", Workers: 10, ServiceTime: constant(time.Second), CancelOnTimeout: true},
		},
	}
	sum := runScenario(t, sc).Summary
	b := svcOf(sum, "b")
	require.EqualValues(t, 10, b.Attempts)
	require.Zero(t, b.Wasted)
	require.Zero(t, b.Succeeded)
	require.InDelta(t, 1.0, sum.SimTimeS, 0.02, "nothing runs on after the arrivals")
	// b worked 9ms per request out of 10 workers × ~1s.
	require.InDelta(t, 10*0.009/(10*sum.SimTimeS), b.Utilization, 1e-3)
}

func TestRejectExpired(t *testing.T) {
	// The client's 10ms deadline has passed when its attempt arrives 20ms later.
	run := func(reject bool) metrics.ServiceSummary {
		net := constant(20 * time.Millisecond)
		sc := &topology.Scenario{
			Name: "expired", Seed: 1, Duration: time.Second, Interval: time.Second,
			Workload: topology.Workload{Entry: "s", Arrival: "constant", Rate: 10, Deadline: 10 * time.Millisecond,
				Client: topology.Call{PropagateDeadline: true, Network: &net}},
			Services: []topology.Service{{Name: "s", Workers: 1, ServiceTime: constant(5 * time.Millisecond), RejectExpired: reject}},
		}
		sum := runScenario(t, sc).Summary
		require.EqualValues(t, 10, sum.Requests.Unknown, "the client timed out at its deadline")
		return sum.Services[0]
	}
	rej := run(true)
	require.EqualValues(t, 10, rej.Rejected)
	require.Zero(t, rej.Succeeded)
	require.Zero(t, rej.Utilization)
	keep := run(false)
	require.Zero(t, keep.Rejected)
	require.EqualValues(t, 10, keep.Wasted)
}

func TestFanoutQuorum(t *testing.T) {
	svc := func(name string, d time.Duration, errRate float64) topology.Service {
		return topology.Service{Name: name, Workers: 10, ServiceTime: constant(d), ErrorRate: errRate, CancelOnTimeout: true}
	}
	scenario := func(waitFor int, cErr float64) *topology.Scenario {
		return &topology.Scenario{
			Name: "fanout", Seed: 1, Duration: time.Second, Interval: time.Second,
			Workload: topology.Workload{Entry: "a", Arrival: "constant", Rate: 10},
			Services: []topology.Service{
				{Name: "a", Workers: 10, ServiceTime: constant(0), Calls: []topology.Call{{
					WaitFor:  waitFor,
					Parallel: []topology.Call{{To: "b"}, {To: "c"}, {To: "d"}},
				}}},
				svc("b", 10*time.Millisecond, 0), svc("c", 50*time.Millisecond, cErr), svc("d", 100*time.Millisecond, 0),
			},
		}
	}
	t.Run("quorum of two waits for the second fastest", func(t *testing.T) {
		sum := runScenario(t, scenario(2, 0)).Summary
		require.EqualValues(t, 10, sum.Requests.Succeeded)
		require.InDelta(t, 50, sum.LatencyMs.Max, 0.1)
		require.InDelta(t, 50, sum.LatencyMs.P50, 0.1)
		require.Zero(t, svcOf(sum, "d").Succeeded, "the slowest member is cancelled")
	})
	t.Run("all must succeed: fails as soon as one fails", func(t *testing.T) {
		sum := runScenario(t, scenario(0, 1)).Summary
		require.EqualValues(t, 10, sum.Requests.Failed)
		a := svcOf(sum, "a")
		require.InDelta(t, 50, a.LatencyMs.Max, 0.1, "a answers when c fails, not when d finishes")
		require.Zero(t, svcOf(sum, "d").Succeeded)
	})
	t.Run("fanout of one service", func(t *testing.T) {
		sc := &topology.Scenario{
			Name: "fanout-n", Seed: 1, Duration: time.Second, Interval: time.Second,
			Workload: topology.Workload{Entry: "a", Arrival: "constant", Rate: 10},
			Services: []topology.Service{
				{Name: "a", Workers: 10, ServiceTime: constant(0), Calls: []topology.Call{{To: "b", Fanout: 5}}},
				{Name: "b", Workers: 100, ServiceTime: exp(time.Millisecond)},
			},
		}
		sum := runScenario(t, sc).Summary
		require.Equal(t, 5.0, svcOf(sum, "b").Amplification)
		require.EqualValues(t, 50, edgeOf(sum, "a", "b").Calls)
	})
}

func TestFaults(t *testing.T) {
	base := func(f topology.Fault, client topology.Call) *topology.Scenario {
		f.Service = "s"
		return &topology.Scenario{
			Name: "fault", Seed: 1, Duration: 5 * time.Second, Interval: time.Second,
			Workload: topology.Workload{Entry: "s", Arrival: "constant", Rate: 100, Client: client},
			Services: []topology.Service{{Name: "s", Workers: 2, ServiceTime: constant(5 * time.Millisecond)}},
			Faults:   []topology.Fault{f},
		}
	}
	row := func(res *metrics.Result, name string, i int) float64 {
		return res.Series.Rows[i][res.Series.Column(name)]
	}
	t.Run("capacity 0 starts nothing, then the backlog drains", func(t *testing.T) {
		res := runScenario(t, base(topology.Fault{At: 2 * time.Second, For: time.Second, Capacity: fp(0)}, topology.Call{}))
		require.InDelta(t, 0.0, row(res, "utilization/s", 2), 0.003) // only work started before 2s
		require.Equal(t, 100.0, row(res, "queue_max/s", 2))
		require.InDelta(t, 50.0, row(res, "queue/s", 2), 1) // grows linearly 0 → 100
		require.EqualValues(t, 500, res.Summary.Requests.Succeeded)
	})
	t.Run("capacity 0.5 of 2 workers leaves one", func(t *testing.T) {
		res := runScenario(t, base(topology.Fault{At: 2 * time.Second, For: time.Second, Capacity: fp(0.5)}, topology.Call{}))
		require.InDelta(t, 0.25, row(res, "utilization/s", 1), 0.01)
		require.InDelta(t, 0.25, row(res, "utilization/s", 2), 0.01) // 1 of 2 workers, 50% busy
	})
	t.Run("latency add", func(t *testing.T) {
		res := runScenario(t, base(topology.Fault{At: 2 * time.Second, For: time.Second, LatencyAdd: 5 * time.Millisecond}, topology.Call{}))
		require.InDelta(t, 5, row(res, "latency_p50_ms", 1), 0.01)
		require.InDelta(t, 10, row(res, "latency_p50_ms", 2), 0.01)
	})
	t.Run("error rate", func(t *testing.T) {
		res := runScenario(t, base(topology.Fault{At: 2 * time.Second, For: time.Second, ErrorRate: fp(1)}, topology.Call{}))
		require.EqualValues(t, 100, res.Summary.Requests.Failed)
		require.Equal(t, 100.0, row(res, "failed", 2))
	})
	t.Run("dropped responses time out", func(t *testing.T) {
		res := runScenario(t, base(topology.Fault{At: 2 * time.Second, For: time.Second, DropResponse: 1}, topology.Call{Timeout: 50 * time.Millisecond}))
		sum := res.Summary
		require.EqualValues(t, 100, sum.Requests.Unknown)
		require.EqualValues(t, 400, sum.Requests.Succeeded)
		require.EqualValues(t, 100, sum.Services[0].TimedOut)
		require.EqualValues(t, 500, sum.Services[0].Succeeded, "the work was done")
	})
	t.Run("dropped responses without timeout wait until the run ends", func(t *testing.T) {
		res := runScenario(t, base(topology.Fault{At: 2 * time.Second, For: time.Second, DropResponse: 1}, topology.Call{}))
		sum := res.Summary
		require.EqualValues(t, 100, sum.Requests.Unknown)
		require.InDelta(t, 5.0, sum.SimTimeS, 0.01)
	})
}

func TestDeterminism(t *testing.T) {
	scenario := func(seed uint64) *topology.Scenario {
		net := exp(time.Millisecond)
		retry := policies.RetryConfig{MaxAttempts: 3, Backoff: policies.BackoffConfig{Initial: 5 * time.Millisecond, Jitter: "full"}}
		return &topology.Scenario{
			Name: "determinism", Seed: seed, Duration: 5 * time.Second, Warmup: time.Second, Interval: 500 * time.Millisecond,
			Workload: topology.Workload{Entry: "a", Rate: 400, Deadline: 200 * time.Millisecond, WriteFraction: 0.3,
				Client: topology.Call{Timeout: 50 * time.Millisecond, Retry: retry, Network: &net}},
			Services: []topology.Service{
				{Name: "a", Workers: 8, Queue: intp(20), ServiceTime: exp(2 * time.Millisecond),
					Calls: []topology.Call{{To: "b", Timeout: 20 * time.Millisecond, Retry: retry, Network: &net, PropagateDeadline: true}}},
				{Name: "b", Workers: 2, ServiceTime: topology.Dist{Dist: "lognormal", P50: 3 * time.Millisecond, P99: 30 * time.Millisecond},
					ErrorRate: 0.05, RejectExpired: true},
			},
			Faults: []topology.Fault{{Service: "b", At: 2 * time.Second, For: time.Second, Capacity: fp(0.5)}},
		}
	}
	encode := func(seed uint64) []byte {
		res := runScenario(t, scenario(seed))
		b, err := json.Marshal(struct {
			S metrics.Summary
			R [][]float64
		}{res.Summary, res.Series.Rows})
		require.NoError(t, err)
		return b
	}
	a, b := encode(1), encode(1)
	require.Equal(t, string(a), string(b))
	require.NotEqual(t, string(a), string(encode(2)))
}

func TestDivergedRunStopsWithStatus(t *testing.T) {
	sc := queueScenario(2000, 1, exp(time.Millisecond), nil, time.Second) // ρ = 2
	sc.Limits.MaxInflight = 500
	res, err := Run(context.Background(), sc, Options{})
	require.NoError(t, err)
	sum := res.Summary
	require.Equal(t, StatusDiverged, sum.Status)
	require.NotNil(t, sum.Diverged)
	require.Equal(t, "s", sum.Diverged.Service)
	require.InDelta(t, 500, sum.Diverged.Queue, 2)
	require.Contains(t, sum.Diverged.Reason, "max_inflight")
	require.InDelta(t, 0.5, sum.Diverged.AtS, 0.1) // the queue grows ~1000/s
}

func TestInterruptedRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	sc := queueScenario(500, 1, exp(time.Millisecond), nil, time.Second)
	sc.Duration = time.Hour
	calls := 0
	res, err := Run(ctx, sc, Options{Progress: func(now, end time.Duration) {
		calls++
		require.Equal(t, time.Hour, end)
		if now >= 3*time.Second {
			cancel()
		}
	}})
	require.NoError(t, err)
	require.Equal(t, StatusInterrupted, res.Summary.Status)
	require.Equal(t, 3, calls)
	require.Less(t, res.Summary.SimTimeS, 10.0)
}

func TestClosedWorkload(t *testing.T) {
	// 10 clients, 10ms of work each on ample workers, no think time: each
	// client completes 100 requests per second.
	sc := &topology.Scenario{
		Name: "closed", Seed: 1, Duration: 2 * time.Second, Interval: time.Second,
		Workload: topology.Workload{Entry: "s", Arrival: "closed", Clients: 10},
		Services: []topology.Service{{Name: "s", Workers: 10, ServiceTime: constant(10 * time.Millisecond)}},
	}
	sum := runScenario(t, sc).Summary
	require.EqualValues(t, 2000, sum.Requests.Offered)
	require.EqualValues(t, 2000, sum.Requests.Succeeded)
	require.InDelta(t, 1.0, sum.Services[0].Utilization, 1e-9)
}

func TestScheduledRate(t *testing.T) {
	sc := &topology.Scenario{
		Name: "schedule", Seed: 1, Duration: 3 * time.Second, Interval: time.Second,
		Workload: topology.Workload{Entry: "s", Arrival: "constant", Rate: 100,
			Schedule: []topology.RateStep{{At: time.Second, Rate: 300}, {At: 2 * time.Second, Rate: 0}}},
		Services: []topology.Service{{Name: "s", Workers: 10, ServiceTime: constant(time.Millisecond)}},
	}
	res := runScenario(t, sc)
	require.Equal(t, []float64{100, 300, 0}, res.Series.Values("offered"))
}

func TestWritesCountDuplicates(t *testing.T) {
	// Every write commits at s and its reply is dropped, so the client's
	// three attempts all execute: two duplicates per request.
	sc := &topology.Scenario{
		Name: "dups", Seed: 1, Duration: time.Second, Interval: time.Second,
		Workload: topology.Workload{Entry: "s", Arrival: "constant", Rate: 10, WriteFraction: 1,
			Client: topology.Call{Timeout: 10 * time.Millisecond, Retry: policies.RetryConfig{MaxAttempts: 3}}},
		Services: []topology.Service{{Name: "s", Workers: 1, ServiceTime: constant(time.Millisecond)}},
		Faults:   []topology.Fault{{Service: "s", At: 0, For: time.Hour, DropResponse: 1}},
	}
	sum := runScenario(t, sc).Summary
	require.EqualValues(t, 10, sum.Requests.Unknown)
	require.EqualValues(t, 20, sum.Duplicates)
	require.EqualValues(t, 10, sum.UnknownCommitted)
	require.EqualValues(t, 30, sum.Services[0].Executions)
}

// TestBadScenariosAreErrors: what the simulator cannot wire is an error.
// Values out of range are topology's to reject (topology/testdata/broken,
// TestWhatValidateAcceptsTheSimulatorBuilds); the simulator does not
// check them again.
func TestBadScenariosAreErrors(t *testing.T) {
	ok := func() *topology.Scenario { return queueScenario(10, 1, exp(time.Millisecond), nil, time.Second) }
	for name, mutate := range map[string]func(*topology.Scenario){
		"unknown entry":    func(sc *topology.Scenario) { sc.Workload.Entry = "nope" },
		"unknown callee":   func(sc *topology.Scenario) { sc.Services[0].Calls = []topology.Call{{To: "nope"}} },
		"bad dist":         func(sc *topology.Scenario) { sc.Services[0].ServiceTime.Dist = "weird" },
		"bad retry class":  func(sc *topology.Scenario) { sc.Workload.Client.Retry.On = []policies.RetryClass{"sometimes"} },
		"bad arrival":      func(sc *topology.Scenario) { sc.Workload.Arrival = "bursty" },
		"fault on nothing": func(sc *topology.Scenario) { sc.Faults = []topology.Fault{{Service: "x", For: time.Second}} },
		"bad error class":  func(sc *topology.Scenario) { sc.Services[0].ErrorClass = "boom" },
		"negative timeout": func(sc *topology.Scenario) { sc.Workload.Client.Timeout = -time.Second },
	} {
		t.Run(name, func(t *testing.T) {
			sc := ok()
			mutate(sc)
			_, err := Run(context.Background(), sc, Options{})
			require.Error(t, err)
			t.Log(err)
		})
	}
}

func TestIdempotencyKeys(t *testing.T) {
	scenario := func(keys bool) *topology.Scenario {
		return &topology.Scenario{
			Name: "keys", Seed: 1, Duration: time.Second, Interval: time.Second,
			Workload: topology.Workload{Entry: "s", Arrival: "constant", Rate: 10, WriteFraction: 1, IdempotencyKeys: keys,
				Client: topology.Call{Timeout: 10 * time.Millisecond, Retry: policies.RetryConfig{MaxAttempts: 3}}},
			Services: []topology.Service{{Name: "s", Workers: 1, ServiceTime: constant(time.Millisecond)}},
			Faults:   []topology.Fault{{Service: "s", At: 0, For: time.Hour, DropResponse: 1}},
		}
	}
	t.Run("without keys every retry executes again", func(t *testing.T) {
		sum := runScenario(t, scenario(false)).Summary
		require.EqualValues(t, 20, sum.Duplicates)
		require.EqualValues(t, 30, sum.Services[0].Executions)
		require.EqualValues(t, 10, sum.UnknownCommitted)
	})
	t.Run("with keys retries replay the saved result", func(t *testing.T) {
		sum := runScenario(t, scenario(true)).Summary
		require.Zero(t, sum.Duplicates)
		require.EqualValues(t, 10, sum.Services[0].Executions)
		require.EqualValues(t, 30, sum.Services[0].Succeeded, "replays answer OK")
		require.EqualValues(t, 10, sum.UnknownCommitted, "the client still never heard back")
	})
	t.Run("a retry racing the owner gets in-progress and waits", func(t *testing.T) {
		sc := scenario(true)
		sc.Faults = nil
		sc.Services[0].Workers = 4
		sc.Services[0].ServiceTime = constant(50 * time.Millisecond)
		sc.Services[0].Idempotency = &topology.Idempotency{InProgressRetryAfter: 60 * time.Millisecond}
		sc.Workload.Client.Timeout = 20 * time.Millisecond
		sc.Workload.Client.Retry.MaxAttempts = 3
		sum := runScenario(t, sc).Summary
		// Attempt 1 (0–50ms) times out at 20ms; attempt 2 at 20ms finds
		// the key in progress and is told to wait 60ms; attempt 3 at 80ms
		// replays the committed result.
		require.EqualValues(t, 10, sum.Requests.Succeeded)
		require.Zero(t, sum.Duplicates)
		require.EqualValues(t, 10, sum.Services[0].Executions)
		e := edgeOf(sum, "client", "s")
		require.EqualValues(t, 10, e.PushbackWaits)
		require.EqualValues(t, 30, e.Attempts)
	})
}

func TestDownstreamFailureClasses(t *testing.T) {
	// The client retries only what a answers as unavailable; a's call to
	// b times out locally (b is slow, a's timeout is 5ms).
	for _, tc := range []struct {
		mode     topology.DownstreamFailure
		attempts int64 // at a, with the client retrying unavailable only
	}{
		{"propagate", 1}, // a local timeout propagates as timeout: not retried
		{"timeout", 1},
		{"error", 1},
		{"unavailable", 3},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			sc := &topology.Scenario{
				Name: "df", Seed: 1, Duration: 100 * time.Millisecond, Interval: time.Second,
				Workload: topology.Workload{Entry: "a", Arrival: "constant", Rate: 10,
					Client: topology.Call{Retry: policies.RetryConfig{MaxAttempts: 3, On: []policies.RetryClass{"unavailable"}}}},
				Services: []topology.Service{
					{Name: "a", Workers: 10, ServiceTime: constant(0), DownstreamFailure: tc.mode,
						Calls: []topology.Call{{To: "b", Timeout: 5 * time.Millisecond}}},
					{Name: "b", Workers: 10, ServiceTime: constant(time.Second), CancelOnTimeout: true},
				},
			}
			sum := runScenario(t, sc).Summary
			require.EqualValues(t, tc.attempts, svcOf(sum, "a").Attempts)
			require.EqualValues(t, 1, sum.Requests.Offered)
			require.EqualValues(t, 1, sum.Requests.Unknown+sum.Requests.Failed)
		})
	}
	t.Run("a breaker fast fail propagates as unavailable", func(t *testing.T) {
		sc := &topology.Scenario{
			Name: "df-breaker", Seed: 1, Duration: time.Second, Interval: time.Second,
			Workload: topology.Workload{Entry: "a", Arrival: "constant", Rate: 10,
				Client: topology.Call{Retry: policies.RetryConfig{MaxAttempts: 2, On: []policies.RetryClass{"unavailable"}}}},
			Services: []topology.Service{
				{Name: "a", Workers: 10, ServiceTime: constant(0),
					Calls: []topology.Call{{To: "b", Breaker: &policies.BreakerConfig{Kind: "consecutive", Failures: 1, OpenFor: time.Hour}}}},
				{Name: "b", Workers: 10, ServiceTime: constant(time.Millisecond), ErrorRate: 1},
			},
		}
		sum := runScenario(t, sc).Summary
		// The first call to b fails and opens the breaker; every later a
		// attempt fails fast with unavailable, which the client retries once.
		require.EqualValues(t, 1, svcOf(sum, "b").Attempts)
		require.EqualValues(t, 19, svcOf(sum, "a").Attempts)
		require.EqualValues(t, 18, edgeOf(sum, "a", "b").BreakerFastFail)
	})
}

func TestSlowdownPerInflight(t *testing.T) {
	// Ten requests arrive at once; each starts with 1ms + 1ms × the others
	// in flight then: 1, 2, …, 10ms of work.
	sc := &topology.Scenario{
		Name: "slowdown", Seed: 1, Duration: time.Millisecond, Interval: time.Second,
		Workload: topology.Workload{Entry: "s", Arrival: "closed", Clients: 10},
		Services: []topology.Service{{Name: "s", Workers: 10, ServiceTime: constant(time.Millisecond), SlowdownPerInflight: time.Millisecond}},
	}
	sum := runScenario(t, sc).Summary
	require.EqualValues(t, 10, sum.Requests.Succeeded)
	require.InDelta(t, 5.5, sum.LatencyMs.Mean, 0.01)
	require.InDelta(t, 10, sum.LatencyMs.Max, 0.01)
}

func TestServiceScopedBudgetIsShared(t *testing.T) {
	// a calls b (always failing) and c (always fine), retrying up to 3
	// times under a 10% budget. Per edge, b may retry 10% of b's calls; one
	// budget for the service counts c's calls too, so b may retry 20%.
	run := func(scope policies.BudgetScope) float64 {
		budget := &policies.BudgetConfig{Kind: "ratio", Ratio: 0.1, Scope: scope}
		retry := policies.RetryConfig{MaxAttempts: 3, On: []policies.RetryClass{"error"}}
		sc := &topology.Scenario{
			Name: "shared-budget", Seed: 1, Duration: 10 * time.Second, Interval: time.Second,
			Workload: topology.Workload{Entry: "a", Arrival: "constant", Rate: 100},
			Services: []topology.Service{
				{Name: "a", Workers: 100, ServiceTime: constant(0), Calls: []topology.Call{
					{Parallel: []topology.Call{{To: "b", Retry: retry, Budget: budget}, {To: "c", Retry: retry, Budget: budget}}},
				}},
				{Name: "b", Workers: 100, ServiceTime: constant(0), ErrorRate: 1},
				{Name: "c", Workers: 100, ServiceTime: constant(0)},
			},
		}
		e := edgeOf(runScenario(t, sc).Summary, "a", "b")
		return float64(e.Retries) / float64(e.Calls)
	}
	require.InDelta(t, 0.1, run("edge"), 0.01)
	require.InDelta(t, 0.2, run("service"), 0.01)
}

func TestMaxEventsStopsTheRun(t *testing.T) {
	sc := queueScenario(500, 1, exp(time.Millisecond), nil, time.Second)
	sc.Limits.MaxEvents = 10_000
	res, err := Run(context.Background(), sc, Options{})
	require.NoError(t, err)
	require.Equal(t, StatusDiverged, res.Summary.Status)
	require.Contains(t, res.Summary.Diverged.Reason, "max_events")
	// ~2 events per request at 500/s: the limit falls near 10s, checked
	// every 4096 attempts or series interval.
	require.InDelta(t, 10, res.Summary.Diverged.AtS, 5)
}

// TestMaxEventRateStopsTheRun: the same M/M/1 makes about 2 events per
// request, 1,000 events per simulated second at 500/s. A rate limit below
// that stops the run in its first interval; one above it lets it complete.
func TestMaxEventRateStopsTheRun(t *testing.T) {
	sc := queueScenario(500, 1, exp(time.Millisecond), nil, 20*time.Second)
	sc.Interval = time.Second
	sc.Limits.MaxEventRate = 500
	res, err := Run(context.Background(), sc, Options{})
	require.NoError(t, err)
	require.Equal(t, StatusDiverged, res.Summary.Status)
	require.Contains(t, res.Summary.Diverged.Reason, "max_event_rate")
	require.Less(t, res.Summary.Diverged.AtS, 2.0)

	sc.Limits.MaxEventRate = 5000
	res, err = Run(context.Background(), sc, Options{})
	require.NoError(t, err)
	require.Equal(t, StatusComplete, res.Summary.Status)
}
