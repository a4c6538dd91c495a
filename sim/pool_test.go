package sim

import (
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
