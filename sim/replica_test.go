package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/policies"
	"github.com/stormsim/stormsim/topology"
)

// replicaScenario is n M/M/1 replicas (μ = 1000/s each) behind the
// client's balancer, offered Poisson arrivals at rho × n × μ; batches as
// in queueing_test.go.
func replicaScenario(n int, rho float64, kind topology.Balance, batch time.Duration) *topology.Scenario {
	sc := queueScenario(rho*float64(n)*1000, 1, exp(time.Millisecond), nil, batch)
	sc.Services[0].Replicas = n
	sc.Workload.Client.Balance = kind
	return sc
}

// sojourn is the batch-mean end-to-end latency (ms) and its 99.9% half-width.
func sojourn(t *testing.T, sc *topology.Scenario) (mean, half float64, res *metrics.Result) {
	t.Helper()
	res = runScenario(t, sc)
	lat := col(t, res.Series, "latency_mean_ms")
	mean, half = batchMeans(t, sc, res.Series, func(r []float64) float64 { return r[lat] })
	return mean, half, res
}

// erlangSigma is σ of the E_k/M/1 queue: the smallest root in (0, 1) of
// σ = (kλ/(kλ + μ(1 − σ)))^k, the Laplace transform of the Erlang-k
// interarrival time (rate kλ per phase) at μ(1 − σ). Iterating from 0
// climbs monotonically to that root.
func erlangSigma(k int, lambda, mu float64) float64 {
	s := 0.0
	for range 100_000 {
		next := math.Pow(float64(k)*lambda/(float64(k)*lambda+mu*(1-s)), float64(k))
		if math.Abs(next-s) < 1e-15 {
			return next
		}
		s = next
	}
	return s
}

func TestErlangSigma(t *testing.T) {
	// k = 1 is M/M/1: σ = ρ.
	require.InDelta(t, 0.7, erlangSigma(1, 700, 1000), 1e-12)
	// D/M/1 is the limit k → ∞: σ = exp(−μ(1 − σ)/λ); at ρ = 0.5 σ ≈ 0.2032.
	// At k = 2000 the Erlang is within O(1/k) of the constant.
	s := erlangSigma(2000, 500, 1000)
	require.InDelta(t, math.Exp(-(1-s)/0.5), s, 1e-3)
	require.InDelta(t, 0.2032, s, 1e-3)
}

// TestRandomBalancerIsMM1PerReplica: random over n M/M/1 replicas with
// Poisson arrivals λ splits them into n Poisson streams at λ/n, so each
// replica is an M/M/1 queue at ρ = λ/(nμ): W = 1/(μ − λ/n).
func TestRandomBalancerIsMM1PerReplica(t *testing.T) {
	const n, rho = 4, 0.7
	sc := replicaScenario(n, rho, topology.BalanceRandom, 10*time.Second)
	mean, half, res := sojourn(t, sc)
	want := 1000 / (1000 - rho*1000) // ms
	t.Logf("random: sojourn %.4f ms ± %.4f (M/M/1 theory %.4f)", mean, half, want)
	require.Less(t, half/want, 0.05, "confidence interval too wide to test anything")
	require.InDelta(t, want, mean, half)
	ss := res.Summary.Services[0]
	require.Len(t, ss.Replicas, n)
	// Each replica's share of attempts is Binomial(attempts, 1/n): 4.5
	// standard deviations is a one-in-10⁵ miss.
	p := 1.0 / n
	sd := math.Sqrt(float64(ss.Attempts) * p * (1 - p))
	var sum int64
	for _, r := range ss.Replicas {
		require.InDelta(t, float64(ss.Attempts)*p, float64(r.Attempts), 4.5*sd, "replica %d", r.Replica)
		sum += r.Attempts
	}
	require.Equal(t, ss.Attempts, sum, "the service's attempts are its replicas'")
}

// TestRoundRobinIsErlangPerReplica: round robin over n replicas gives each
// the sum of n exponential interarrival times, an E_n/M/1 queue:
// W = 1/(μ(1 − σ)), σ from erlangSigma. It waits less than random's M/M/1.
func TestRoundRobinIsErlangPerReplica(t *testing.T) {
	const n, rho = 4, 0.7
	sc := replicaScenario(n, rho, topology.BalanceRoundRobin, 10*time.Second)
	mean, half, res := sojourn(t, sc)
	sigma := erlangSigma(n, rho*1000, 1000)
	want := 1000 / (1000 * (1 - sigma))
	t.Logf("round_robin: sojourn %.4f ms ± %.4f (E_%d/M/1 theory %.4f, σ = %.4f; M/M/1 %.4f)", mean, half, n, want, sigma, 1000/(1000-rho*1000))
	require.Less(t, half/want, 0.05, "confidence interval too wide to test anything")
	require.InDelta(t, want, mean, half)
	require.Less(t, mean+half, 1000/(1000-rho*1000), "round robin must beat random's M/M/1")
	// Round robin deals the attempts in turn: counts differ by at most the
	// warm-up boundary's one.
	ss := res.Summary.Services[0]
	for _, r := range ss.Replicas {
		require.InDelta(t, float64(ss.Attempts)/n, float64(r.Attempts), 1, "replica %d", r.Replica)
	}
}

// TestLeastRequestAndP2CBeatRoundRobin: balancing on outstanding requests
// sees the queues, so at high load it waits less than round robin, and a
// full scan (least_request) less than two choices (p2c).
func TestLeastRequestAndP2CBeatRoundRobin(t *testing.T) {
	const n, rho = 8, 0.9
	w := map[topology.Balance][2]float64{}
	for _, kind := range []topology.Balance{topology.BalanceRoundRobin, topology.BalanceP2C, topology.BalanceLeastRequest} {
		mean, half, _ := sojourn(t, replicaScenario(n, rho, kind, time.Second))
		t.Logf("%s: sojourn %.4f ms ± %.4f", kind, mean, half)
		w[kind] = [2]float64{mean, half}
	}
	beats := func(a, b topology.Balance) {
		require.Less(t, w[a][0]+w[a][1], w[b][0]-w[b][1], "%s must beat %s", a, b)
	}
	beats(topology.BalanceP2C, topology.BalanceRoundRobin)
	beats(topology.BalanceLeastRequest, topology.BalanceP2C)
}

// TestP2CApproachesTheSupermarketModel: with many replicas, two choices
// leave a fraction s_i = ρ^(2^i − 1) of the replicas with at least i
// requests (Mitzenmacher 2001), so the mean number at a replica is Σ s_i
// and, by Little's law, W = Σ s_i / (ρμ). The fixed point is the n → ∞
// limit: the test checks that the measured W lies within the batch-means
// interval plus a finite-n gap that shrinks as n grows (it is measured at
// n = 10 and must at least halve by n = 100), and that it is far below
// round robin's and random's.
func TestP2CApproachesTheSupermarketModel(t *testing.T) {
	if testing.Short() {
		t.Skip("about 10 s of simulation; the full suite runs it")
	}
	const rho = 0.9
	var sum float64
	for i := 1; i < 64; i++ {
		sum += math.Pow(rho, math.Pow(2, float64(i))-1)
	}
	want := sum / (rho * 1000) * 1000 // ms
	gap := map[int]float64{}
	for _, n := range []int{10, 100} {
		mean, half, _ := sojourn(t, replicaScenario(n, rho, topology.BalanceP2C, 5*time.Second))
		gap[n] = math.Max(0, math.Abs(mean-want)-half)
		t.Logf("p2c n=%d: sojourn %.4f ms ± %.4f (supermarket fixed point %.4f; beyond the interval by %.4f)", n, mean, half, want, gap[n])
		require.Less(t, half/want, 0.05)
	}
	require.LessOrEqual(t, gap[100], gap[10]/2+1e-9, "p2c must approach the fixed point as replicas grow")
	require.Less(t, gap[100]/want, 0.05, "p2c at 100 replicas is within 5%% of the fixed point")
	// M/M/1 at ρ = 0.9 waits 10 ms; the supermarket ~2.6 ms.
	require.Less(t, want, 1000/(1000-rho*1000)/3)
}

// summaryOf parses the scenario y (named file) and simulates it to completion.
func summaryOf(t *testing.T, file, y string) metrics.Summary {
	t.Helper()
	sc, err := topology.Parse(file, []byte(y), nil)
	require.NoError(t, err)
	return runScenario(t, sc).Summary
}

// TestEjectionBoundsTheLoss: one replica of five is dead (no capacity, no
// queue: every attempt there is refused at once). With consecutive-failure
// ejection each episode costs exactly consecutive_failures requests: the
// replica is ejected at its 5th failure and comes back at the interval
// tick at or after base_ejection_time × k later (k the episode), when it
// fails 5 more within a few ms (it gets every 5th of 1000 requests/s).
// The loss is therefore 5 × the number of episodes that begin before the
// end of the arrival window, computed here from the thresholds alone.
// Without ejection a fifth of all requests fail; with a retry to another
// host none do.
func TestEjectionBoundsTheLoss(t *testing.T) {
	const base = `
name: dead-replica
duration: 60s
workload:
  entry: api
  arrival: constant
  rate: 1000
  client:
    timeout: 1s
    %s
services:
  - name: api
    replicas: 5
    workers: 4
    queue: 0
    service_time: {dist: constant, value: 1ms}
faults:
  - {service: api, replica: 3, at: 0s, for: 1h, capacity: 0}
`
	const od = "outlier_detection: {consecutive_failures: 5, interval: 1s, base_ejection_time: 2s, max_ejection_time: 30s}"
	run := func(client string) metrics.Summary {
		return summaryOf(t, "dead-replica.yaml", fmt.Sprintf(base, client))
	}
	// The episodes: ejected at back_k (+ a few ms), back at the tick at or
	// after that + min(k × base, max).
	episodes, back := 0, time.Duration(0)
	for back < 60*time.Second {
		episodes++
		end := back + time.Millisecond + min(time.Duration(episodes)*2*time.Second, 30*time.Second)
		back = (end + time.Second - 1) / time.Second * time.Second
	}
	want := int64(5 * episodes)

	s := run(od)
	t.Logf("ejection: %d failed of %d (bound %d, %d episodes), %d ejections", s.Requests.Failed, s.Requests.Offered, want, episodes, s.Edges[0].Ejections)
	require.Equal(t, want, s.Requests.Failed)
	require.EqualValues(t, episodes, s.Edges[0].Ejections)
	require.EqualValues(t, want, s.Services[0].Replicas[3].Rejected)

	s = run("")
	t.Logf("no ejection: %d failed of %d", s.Requests.Failed, s.Requests.Offered)
	require.InDelta(t, float64(s.Requests.Offered)/5, float64(s.Requests.Failed), 1, "round robin sends every fifth request to the dead replica")

	s = run(od + "\n    retry: {max_attempts: 2, on: [unavailable], other_host: true}")
	require.Zero(t, s.Requests.Failed, "a retry on another host saves every request")
	require.EqualValues(t, want, s.Edges[0].Retries, "one retry per failure at the dead replica")
}

// TestOtherHostAvoidsTriedReplicas: with every replica but one refusing,
// a retry to another host walks the replicas without repeats, so
// max_attempts = replicas always finds the live one; without other_host
// random picks repeat and some requests fail.
func TestOtherHostAvoidsTriedReplicas(t *testing.T) {
	const y = `
name: other-host
duration: 20s
workload:
  entry: api
  rate: 500
  client:
    retry: {max_attempts: 4, on: [unavailable], other_host: %v}
    balance: random
services:
  - name: api
    replicas: 4
    workers: 8
    queue: 0
    service_time: {dist: constant, value: 1ms}
faults:
  - {service: api, replicas: [0, 1, 2], at: 0s, for: 1h, capacity: 0}
`
	run := func(other bool) metrics.Summary { return summaryOf(t, "other-host.yaml", fmt.Sprintf(y, other)) }
	s := run(true)
	require.Zero(t, s.Requests.Failed)
	// Each request tries the dead replicas in random order before the live
	// one: its attempts are uniform on 1..4, mean 2.5.
	att := float64(s.Edges[0].Attempts) / float64(s.Edges[0].Calls)
	sd := math.Sqrt(1.25 / float64(s.Edges[0].Calls)) // Var(U{1..4}) = 1.25
	require.InDelta(t, 2.5, att, 4.5*sd)
	s = run(false)
	// Each attempt finds a dead replica with probability 3/4: all four do
	// with (3/4)^4 ≈ 0.316.
	p := math.Pow(0.75, 4)
	n := float64(s.Requests.Offered)
	require.InDelta(t, p*n, float64(s.Requests.Failed), 4.5*math.Sqrt(n*p*(1-p)))
}

// TestFaultOnOneReplica: a latency fault on one replica slows only it.
func TestFaultOnOneReplica(t *testing.T) {
	sc := replicaScenario(5, 0.3, topology.BalanceRoundRobin, time.Second)
	sc.Faults = []topology.Fault{{Service: "s", Replica: ptr(2), At: 0, For: sc.Duration, LatencyAdd: time.Millisecond}}
	s := runScenario(t, sc).Summary.Services[0]
	for _, r := range s.Replicas {
		// Utilisation ρ = 0.3 on the healthy replicas, 0.6 on the slow one
		// (service time doubled); 0.1 apart is many standard errors of a
		// 20 s time average at these loads.
		if r.Replica == 2 {
			require.InDelta(t, 0.6, r.Utilization, 0.05)
		} else {
			require.InDelta(t, 0.3, r.Utilization, 0.05, "replica %d", r.Replica)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// TestFleetBudgetsAddUp: each client instance holds its own retry budget,
// so a fleet retries as much as its instances' floors allow together:
// with every attempt failing, ratio budgets with min_per_sec r let each
// instance retry about r per second, and 10 instances retry ~10 times what
// one does.
func TestFleetBudgetsAddUp(t *testing.T) {
	const y = `
name: fleet
duration: 20s
workload:
  entry: api
  arrival: constant
  rate: 1000
  instances: %d
  client:
    retry: {max_attempts: 3, on: [error]}
    budget: {ratio: 0.0001, min_per_sec: 5, window: 10s}
services:
  - name: api
    workers: 100
    service_time: {dist: constant, value: 1ms}
    error_rate: 1
`
	retries := func(n int) int64 { return summaryOf(t, "fleet.yaml", fmt.Sprintf(y, n)).Edges[0].Retries }
	one, ten := retries(1), retries(10)
	t.Logf("retries: 1 instance %d, 10 instances %d", one, ten)
	require.Greater(t, one, int64(0))
	// Budgets are deterministic here (constant arrivals, every attempt
	// fails): the floors (min_per_sec × window each) add up exactly; the
	// ratio term lets the fleet retry ratio × all requests whether one
	// instance or ten see them, so ten instances fall short of 10 × one by
	// at most 10 × ratio × offered (= 20 here).
	require.InDelta(t, 10*float64(one), float64(ten), 10*0.0001*20000)
}

// TestReplicasAreDeterministicAndOffByDefault: the same seed gives the
// same JSON, and replicas: 1 gives exactly what no replicas key gives.
func TestReplicasAreDeterministicAndOffByDefault(t *testing.T) {
	js := func(sc *topology.Scenario) string {
		res, err := Run(context.Background(), sc, Options{})
		require.NoError(t, err)
		b, err := json.Marshal(res.Summary)
		require.NoError(t, err)
		return string(b)
	}
	sc := replicaScenario(3, 0.5, topology.BalanceP2C, time.Second)
	require.Equal(t, js(sc), js(sc))
	one := replicaScenario(1, 0.5, topology.BalanceP2C, time.Second)
	plain := queueScenario(500, 1, exp(time.Millisecond), nil, time.Second)
	require.Equal(t, js(plain), js(one))
	require.NotContains(t, js(one), `"replicas"`)
}

// TestZones: three zones, an api replica and a db replica in each. With
// zone_aware each api replica calls only its own zone's db replica; without
// it round robin crosses zones on 2 calls in 3, each paying the constant
// 5 ms cross_zone_network both ways: the mean latency rises by exactly
// 2/3 × 10 ms (round robin deals the three replicas in turn, so the share
// is 2/3 up to one call per api replica: 3 of ~5,700 counted calls, 0.005
// ms of the mean, which is exact). A zone fault hits that zone's replica.
func TestZones(t *testing.T) {
	const y = `
name: zones
duration: 20s
workload:
  entry: api
  arrival: constant
  rate: 300
  zones: [a, b, c]
  instances: 3
  client: {zone_aware: true}
services:
  - name: api
    replicas: 3
    zones: [a, b, c]
    workers: 8
    service_time: {dist: constant, value: 1ms}
    calls:
      - {to: db, zone_aware: %v, cross_zone_network: {dist: constant, value: 5ms}}
  - name: db
    replicas: 3
    zones: [a, b, c]
    workers: 8
    service_time: {dist: constant, value: 1ms}
faults:
  - {service: db, zone: c, at: 0s, for: 20s, latency_add: 1ms}
`
	local := summaryOf(t, "zones.yaml", fmt.Sprintf(y, true))
	cross := summaryOf(t, "zones.yaml", fmt.Sprintf(y, false))
	api, db := local.Services[0], local.Services[1]
	for r := range 3 {
		if api.Replicas[r].Attempts != db.Replicas[r].Attempts {
			t.Errorf("zone_aware: api replica %d made %d calls, db replica %d got %d; want each zone to stay local", r, api.Replicas[r].Attempts, r, db.Replicas[r].Attempts)
		}
	}
	// The zone-c fault adds 1 ms at db replica 2 only: a third of the calls.
	want := 2.0 + 1.0/3
	require.InDelta(t, want, local.LatencyMs.Mean, 0.01, "zone_aware: no cross-zone calls")
	require.InDelta(t, want+2.0/3*10, cross.LatencyMs.Mean, 0.01, "round robin crosses zones on 2 calls in 3")
}

// BenchmarkReplicasP2C runs 8 M/M/1 replicas at ρ = 0.9 behind p2c, with
// a client timeout and one retry to another host: every attempt goes
// through the balancer. It reports allocations per event (setup included;
// the balancer's scratch and each call's tried list are reused, so steady
// state adds none) and events per second, to compare with BenchmarkMM1's.
func BenchmarkReplicasP2C(b *testing.B) {
	sc := replicaScenario(8, 0.9, topology.BalanceP2C, 10*time.Second)
	sc.Workload.Client.Timeout = 100 * time.Millisecond
	sc.Workload.Client.Retry = policies.RetryConfig{MaxAttempts: 2, OtherHost: true}
	b.ReportAllocs()
	var events uint64
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for b.Loop() {
		m, err := build(sc)
		if err != nil {
			b.Fatal(err)
		}
		m.run(context.Background(), Options{})
		events += m.eng.Events()
	}
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(events), "allocs/event")
}

// TestReplicaSeries: each row's per-replica columns add up to the
// service's (attempts summed; utilization and queue weighted by workers,
// equal here), and the slowed replica is the busy one while its fault lasts.
func TestReplicaSeries(t *testing.T) {
	sc := replicaScenario(3, 0.3, topology.BalanceRoundRobin, time.Second)
	sc.Faults = []topology.Fault{{Service: "s", Replica: ptr(1), At: 5 * time.Second, For: 5 * time.Second, LatencyAdd: time.Millisecond}}
	ts := runScenario(t, sc).Series
	for i, row := range ts.Rows {
		var att, util, queue float64
		for k := range 3 {
			e := metrics.ReplicaEntity("s", k)
			att += row[col(t, ts, metrics.Column(metrics.MetricReplicaAttempts, e))]
			util += row[col(t, ts, metrics.Column(metrics.MetricReplicaUtilization, e))] / 3
			queue += row[col(t, ts, metrics.Column(metrics.MetricReplicaQueue, e))]
		}
		require.Equal(t, row[col(t, ts, "attempts/s")], att, "row %d", i)
		require.InDelta(t, row[col(t, ts, "utilization/s")], util, 1e-9, "row %d", i)
		require.InDelta(t, row[col(t, ts, "queue/s")], queue, 1e-9, "row %d", i)
	}
	// In the fault (rows 5-9) replica 1's service time doubles: utilization
	// 0.6 against 0.3 (each row a 1 s time average at 300/s: 0.15 apart is
	// many standard errors).
	u0, u1 := col(t, ts, "replica_utilization/s#0"), col(t, ts, "replica_utilization/s#1")
	for i := 5; i < 10; i++ {
		require.Greater(t, ts.Rows[i][u1], ts.Rows[i][u0]+0.15, "row %d", i)
	}
}
