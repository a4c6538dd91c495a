package load

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stormsim/stormsim/sim"
	"github.com/stormsim/stormsim/topology"
)

// TestResetAgreesWithSim runs one scenario in the simulator and against
// `serve --tls`: a pool of 4 connections, Poisson arrivals at 100/s, 10ms
// of work (1 erlang, so the pool rarely queues), and a reset of every
// connection at 3s. Each half of the run opens min(4, peak concurrency)
// connections; an M/D/∞ queue with 1 erlang reaches 4 in service with
// probability ≈ 0.02 per arrival, so over the ≈300 arrivals of each half
// both modes open all 4 twice (P(miss) < 1e-2 per half). Real handshakes
// may exceed that by connections whose reuse raced the reset (a request
// the client retried on a fresh connection), so the real count lies in
// [sim, sim+4]; the attempts that waited for a connection agree within
// their counting statistics; and no attempt is lost: none fails not_sent.
func TestResetAgreesWithSim(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time run of 6s")
	}
	sc := &topology.Scenario{
		Name: "reset", Seed: 3, Duration: 6 * time.Second, Interval: time.Second,
		Workload: topology.Workload{Entry: "s", Arrival: "poisson", Rate: 100,
			Client: topology.Call{Timeout: time.Second, Pool: &topology.Pool{Size: 4,
				TLSTime: &topology.Dist{Dist: "constant", Value: time.Millisecond}}}},
		Services: []topology.Service{{Name: "s", Workers: 100, ServiceTime: topology.Dist{Dist: "constant", Value: 10 * time.Millisecond}}},
		Faults:   []topology.Fault{{Service: "s", At: 3 * time.Second, For: time.Second, ResetConnections: true}},
	}
	simRes, err := sim.Run(context.Background(), sc, sim.Options{})
	require.NoError(t, err)
	sp := simRes.Summary.Edges[0].Pool
	require.NotNil(t, sp)
	require.Equal(t, int64(8), sp.Handshakes, "the simulator opens all 4 connections in each half")

	res, err := RunScenario(context.Background(), sc, ScenarioOptions{TLS: true})
	require.NoError(t, err)
	ph := res.Summary.Edges[0].Phases
	require.NotNil(t, ph)
	t.Logf("handshakes: sim %d, serve --tls %d (new connections %d); attempts that waited: sim %d, real %d; pool wait sim mean %.3fms max %.3fms, real %+v",
		sp.Handshakes, ph.Handshakes, ph.NewConnections, sp.Waited, ph.Waited, sp.WaitMeanMs, sp.WaitMaxMs, ph.Phases["pool_wait"])
	require.GreaterOrEqual(t, ph.Handshakes, sp.Handshakes)
	require.LessOrEqual(t, ph.Handshakes, sp.Handshakes+4)
	// Attempts that found no idle connection — those that opened one and
	// those queued behind the 4 — are rare events at 1 erlang, a count
	// close to Poisson in each mode: their difference has a standard
	// deviation about √(sim + real), and 3 of them bound it.
	require.InDelta(t, float64(sp.Waited), float64(ph.Waited), 3*math.Sqrt(float64(sp.Waited+ph.Waited)), "attempts that waited for a connection")
	require.Zero(t, ph.NotSent)
	require.Zero(t, sp.PoolTimeouts+sp.ConnectTimeouts+sp.TLSTimeouts)
}
