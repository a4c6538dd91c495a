package serve

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stormsim/stormsim/metrics"
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
//
// The real pool wait is at least the simulator's once the simulator is
// given what a real connection costs, measured in the run
// (poolWaitCalibrated).
func TestResetAgreesWithSim(t *testing.T) {
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

	// Both modes see the same arrivals: the run is on the bubble's clock
	// (runInMemory), where no stall of a busy machine makes a send late.
	res := runInMemory(t, sc, ScenarioOptions{TLS: true})
	require.Zero(t, res.Summary.Load.Late, "requests sent late on a scripted clock")
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
	poolWaitCalibrated(t, sc, sp.WaitTotalMs, ph)
}

// poolWaitCalibrated compares the total pool wait of the real run (ph)
// with the simulator's once the simulator is given what the real run
// measured: a connection's connect and TLS handshake (their means), and
// how long an attempt holds its connection beyond the 10 ms of work (the
// write, first byte and read means less 10 ms, as a network delay split
// between the two ways). Uncalibrated (simTotal), the simulator opens
// connections in the 1 ms of tls_time, which the real run on the
// bubble's clock does in no time. Both modes are given the same arrivals
// (one seed) and, on the scripted clock, the real run has no cost the
// simulator is not given, so the totals agree exactly but for the phase
// recording's resolution: a pool wait is recorded in whole microseconds,
// at least one.
func poolWaitCalibrated(t *testing.T, sc *topology.Scenario, simTotal float64, ph *metrics.PhaseReport) {
	t.Helper()
	const work = 10.0 // ms, the scenario's constant service time
	pw, conn, hs := ph.Phases["pool_wait"], ph.Phases["connect"], ph.Phases["tls"]
	hold := ph.Phases["write"].MeanMs + ph.Phases["first_byte"].MeanMs + ph.Phases["read"].MeanMs
	cal := *sc
	client := cal.Workload.Client
	pool := *client.Pool
	ms := func(v float64) *topology.Dist {
		return &topology.Dist{Dist: "constant", Value: time.Duration(v * float64(time.Millisecond))}
	}
	pool.ConnectTime, pool.TLSTime = ms(conn.MeanMs), ms(hs.MeanMs)
	client.Pool = &pool
	if hold > work {
		client.Network = ms((hold - work) / 2)
	}
	cal.Workload.Client = client
	res, err := sim.Run(context.Background(), &cal, sim.Options{})
	require.NoError(t, err)
	cp := res.Summary.Edges[0].Pool
	real := pw.MeanMs * float64(pw.Count)
	tol := 0.001 * float64(pw.Count)
	t.Logf("pool wait total: real %.3f ms, simulated %.3f ms uncalibrated, %.3f ms calibrated (connect %.3f ms, tls %.3f ms, hold %.3f ms); tolerance %.3f ms",
		real, simTotal, cp.WaitTotalMs, conn.MeanMs, hs.MeanMs, hold, tol)
	require.InDelta(t, cp.WaitTotalMs, real, tol, "total pool wait: real and calibrated simulator")
}
