package sim

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/topology"
)

func poolScenario(seed uint64, lambda float64, pool *topology.Pool) *topology.Scenario {
	sc := queueScenario(lambda, 1000, exp(10*time.Millisecond), nil, 2*time.Second)
	sc.Seed = seed
	sc.Workload.Client = topology.Call{Pool: pool}
	return sc
}

func clientPool(t *testing.T, res *metrics.Result) metrics.PoolSummary {
	t.Helper()
	require.NotEmpty(t, res.Summary.Edges)
	p := res.Summary.Edges[0].Pool
	require.NotNil(t, p, "the client edge reports no pool")
	return *p
}

// TestPoolErlangC: a pool of c connections in front of a callee with
// ample workers, Poisson arrivals and exponential holding (the service
// time; no network, no connect cost) is an M/M/c queue for connections, so
// the probability of waiting is Erlang C and the mean wait C/(cμ−λ).
// Independent replications (one seed each) give nearly independent
// estimates; the tolerance is their 99.9% Student-t interval, and the test
// checks that interval is narrow enough to tell a wrong model.
func TestPoolErlangC(t *testing.T) {
	const (
		c      = 4
		mu     = 100.0 // 1 / 10ms
		lambda = 300.0 // ρ = 0.75
		reps   = batches
	)
	cw := erlangC(c, lambda/mu)
	wantWaitMs := cw / (c*mu - lambda) * 1000
	var pw, wq []float64
	for i := range reps {
		res := runScenario(t, poolScenario(uint64(i+1), lambda, &topology.Pool{Size: c}))
		p := clientPool(t, res)
		require.Positive(t, p.Acquired)
		require.Zero(t, p.Handshakes, "the c connections opened in warm-up are kept")
		pw = append(pw, float64(p.Waited)/float64(p.Acquired))
		wq = append(wq, p.WaitMeanMs)
	}
	check := func(name string, xs []float64, want float64) {
		mean, sd := 0.0, 0.0
		for _, x := range xs {
			mean += x
		}
		mean /= float64(len(xs))
		for _, x := range xs {
			sd += (x - mean) * (x - mean)
		}
		half := t999 * math.Sqrt(sd/float64(len(xs)-1)) / math.Sqrt(float64(len(xs)))
		t.Logf("%s: %.4f ± %.4f, Erlang C %.4f", name, mean, half, want)
		require.Less(t, half, 0.1*want, "%s: the interval is too wide to test the model", name)
		require.InDelta(t, want, mean, half, name)
	}
	check("P(wait)", pw, cw)
	check("mean wait ms", wq, wantWaitMs)
}

func constPtr(d time.Duration) *topology.Dist { c := constant(d); return &c }

// TestPoolNotSent: attempts that fail in the pool, connect or TLS phase
// are not_sent, definite failures (never unknown); a transparent retry
// retries each once, and since none reached the callee no write executed
// twice.
func TestPoolNotSent(t *testing.T) {
	for _, tc := range []struct {
		name  string
		call  topology.Call
		phase func(metrics.PoolSummary) int64
	}{
		{"tls", topology.Call{TLSTimeout: 10 * time.Millisecond,
			Pool: &topology.Pool{Size: 4, ConnectTime: constPtr(5 * time.Millisecond), TLSTime: constPtr(30 * time.Millisecond)}},
			func(p metrics.PoolSummary) int64 { return p.TLSTimeouts }},
		{"connect", topology.Call{ConnectTimeout: 10 * time.Millisecond,
			Pool: &topology.Pool{Size: 4, ConnectTime: constPtr(50 * time.Millisecond)}},
			func(p metrics.PoolSummary) int64 { return p.ConnectTimeouts }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := queueScenario(50, 100, exp(time.Millisecond), nil, time.Second)
			sc.Workload.WriteFraction = 1
			sc.Workload.Client = tc.call
			sc.Workload.Client.Retry.Transparent = true
			res := runScenario(t, sc)
			s := res.Summary
			e := s.Edges[0]
			require.Positive(t, s.Requests.Offered)
			require.Equal(t, s.Requests.Offered, s.Requests.Failed, "every call fails, definitely")
			require.Zero(t, s.Requests.Unknown)
			require.Zero(t, s.Duplicates)
			require.Equal(t, e.Calls, e.TransparentRetries, "one transparent retry per call")
			require.Equal(t, 2*e.Calls, e.NotSent)
			require.Equal(t, e.NotSent, tc.phase(*e.Pool))
			require.Zero(t, s.Services[0].Attempts, "nothing reached the callee")
		})
	}
}

// TestPoolTimeout: one connection held 100ms per call at 50 calls/s is
// overloaded 5×, so most attempts run out of pool_timeout, as not_sent.
func TestPoolTimeout(t *testing.T) {
	sc := queueScenario(50, 100, topology.Dist{Dist: "constant", Value: 100 * time.Millisecond}, nil, time.Second)
	sc.Workload.Client = topology.Call{PoolTimeout: 5 * time.Millisecond, Pool: &topology.Pool{Size: 1}}
	res := runScenario(t, sc)
	e := res.Summary.Edges[0]
	require.Positive(t, e.Pool.PoolTimeouts)
	require.Equal(t, e.NotSent, e.Pool.PoolTimeouts)
	require.Equal(t, e.Calls, e.Succeeded+e.Failed)
	require.Equal(t, e.Failed, e.NotSent)
	// The one connection serves at most 10 calls a second.
	require.LessOrEqual(t, float64(e.Succeeded), 10*res.Summary.SimTimeS*1.01+1)
}

// TestPoolReset: a reset_connections fault closes every connection; the
// callers reopen them, paying connect and TLS time, which shows as pool
// wait.
func TestPoolReset(t *testing.T) {
	pool := &topology.Pool{Size: 8, ConnectTime: constPtr(20 * time.Millisecond), TLSTime: constPtr(30 * time.Millisecond)}
	base := poolScenario(1, 300, pool)
	res := runScenario(t, base)
	before := clientPool(t, res)
	require.Zero(t, before.Resets)

	sc := poolScenario(1, 300, pool)
	sc.Faults = []topology.Fault{{Service: "s", At: 20 * time.Second, For: time.Second, ResetConnections: true}}
	res = runScenario(t, sc)
	after := clientPool(t, res)
	require.Positive(t, after.Resets)
	require.LessOrEqual(t, after.Resets, int64(8))
	// Every connection closed is reopened, each costing a 50ms handshake.
	require.GreaterOrEqual(t, after.Handshakes, after.Resets)
	require.Greater(t, after.WaitTotalMs, before.WaitTotalMs+50)
	require.InDelta(t, 50, after.WaitMaxMs, 50, "the worst wait is about one handshake")
}

// TestPoolFirstByteTimeout: a sent attempt whose answer takes 100ms runs
// out of a 50ms first_byte_timeout: a timeout (unknown), never not_sent,
// and the write may have executed.
func TestPoolFirstByteTimeout(t *testing.T) {
	sc := queueScenario(20, 100, topology.Dist{Dist: "constant", Value: 100 * time.Millisecond}, nil, time.Second)
	sc.Workload.WriteFraction = 1
	sc.Workload.Client = topology.Call{FirstByteTimeout: 50 * time.Millisecond, Pool: &topology.Pool{Size: 8}}
	sc.Workload.Client.Retry.Transparent = true
	res := runScenario(t, sc)
	s, e := res.Summary, res.Summary.Edges[0]
	require.Positive(t, s.Requests.Offered)
	require.Equal(t, s.Requests.Offered, s.Requests.Unknown)
	require.Zero(t, e.NotSent)
	require.Zero(t, e.TransparentRetries)
	require.Equal(t, e.Calls, e.Attempts, "a sent attempt is not retried transparently")
}

// TestPoolTimeoutWhileConnecting: pool_timeout covers the connection an
// attempt started opening (GetConn→GotConn); when it runs out first the
// attempt fails not_sent and the connection still joins the pool, so later
// calls reuse it.
func TestPoolTimeoutWhileConnecting(t *testing.T) {
	sc := queueScenario(200, 100, exp(time.Millisecond), nil, time.Second)
	sc.Warmup = 0
	sc.Workload.Client = topology.Call{PoolTimeout: 10 * time.Millisecond,
		Pool: &topology.Pool{Size: 4, MaxConnecting: 1, ConnectTime: constPtr(50 * time.Millisecond)}}
	sc.Workload.Client.Retry.Transparent = true
	res := runScenario(t, sc)
	s, e := res.Summary, res.Summary.Edges[0]
	require.Positive(t, e.Pool.PoolTimeouts)
	require.Equal(t, e.NotSent, e.Pool.PoolTimeouts)
	require.Equal(t, s.Requests.Offered, s.Requests.Succeeded+s.Requests.Failed+s.Requests.Unknown)
	require.Zero(t, s.Requests.Unknown)
	require.Positive(t, s.Requests.Succeeded, "the connections opened for attempts that gave up serve later ones")
	require.LessOrEqual(t, e.Pool.Handshakes, int64(4))
}

// TestFirstByteTimeoutWithoutPool: on an edge without a pool an attempt
// is sent as it starts and its reply is its first byte, so
// first_byte_timeout bounds it as the attempt timeout would: a run with
// first_byte_timeout d (and a longer or no timeout) is the run with
// timeout d, number for number. With exponential service times of mean
// 10 ms and d = 5 ms, a share e^(-1/2) of the requests times out; the
// count is binomial, and 4 standard deviations of it is the tolerance.
func TestFirstByteTimeoutWithoutPool(t *testing.T) {
	const d = 5 * time.Millisecond
	run := func(c topology.Call) *metrics.Result {
		sc := queueScenario(200, 1000, exp(10*time.Millisecond), nil, time.Second)
		sc.Workload.Client = c
		return runScenario(t, sc)
	}
	want, err := json.Marshal(run(topology.Call{Timeout: d}).Summary)
	require.NoError(t, err)
	for _, c := range []topology.Call{{FirstByteTimeout: d}, {FirstByteTimeout: d, Timeout: time.Second}, {FirstByteTimeout: time.Second, Timeout: d}} {
		res := run(c)
		got, err := json.Marshal(res.Summary)
		require.NoError(t, err)
		require.JSONEq(t, string(want), string(got), "timeout %v, first_byte_timeout %v", c.Timeout, c.FirstByteTimeout)
	}
	s := run(topology.Call{FirstByteTimeout: d}).Summary
	n := float64(s.Requests.Offered)
	p := math.Exp(-0.5)
	require.InDelta(t, p*n, float64(s.Requests.Unknown), 4*math.Sqrt(n*p*(1-p)), "requests timed out of %v", n)

	// Without the phase timeout, none times out.
	require.Zero(t, run(topology.Call{}).Summary.Requests.Unknown)
}
