package sim

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stormsim/stormsim/policies"
	"github.com/stormsim/stormsim/topology"
)

// generic turns off every fast path of a built model, so it runs the
// general machinery: the reference the fast paths must reproduce exactly.
func generic(m *run) {
	m.clientDirect = false
}

// runModel builds sc, lets adjust change the model, runs it and returns
// its summary and time series as JSON.
func runModel(t *testing.T, sc *topology.Scenario, adjust func(*run)) (summary, series string) {
	t.Helper()
	m, err := build(sc)
	require.NoError(t, err)
	if adjust != nil {
		adjust(m)
	}
	res := m.run(context.Background(), Options{})
	s, err := json.Marshal(res.Summary)
	require.NoError(t, err)
	ts, err := json.Marshal(res.Series)
	require.NoError(t, err)
	return string(s), string(ts)
}

// fastPathScenarios are scenarios whose client edge (and, where stated,
// downstream edges) qualify for the fast paths, each stressing something
// the fast path must account for exactly as policies.Call does.
func fastPathScenarios() map[string]*topology.Scenario {
	net := exp(200 * time.Microsecond)
	base := func(name string) *topology.Scenario {
		return &topology.Scenario{
			Name: name, Seed: 7, Duration: 3 * time.Second, Warmup: 500 * time.Millisecond, Interval: 250 * time.Millisecond,
			Workload: topology.Workload{Entry: "s", Rate: 900},
			Services: []topology.Service{{Name: "s", Workers: 1, ServiceTime: exp(time.Millisecond)}},
		}
	}
	out := map[string]*topology.Scenario{}
	out["mm1"] = base("mm1")

	sc := base("errors-as-timeouts")
	sc.Services[0].Workers, sc.Services[0].ErrorRate, sc.Services[0].ErrorClass = 2, 0.2, "timeout"
	out[sc.Name] = sc

	sc = base("bounded-queue-rejects")
	sc.Workload.Rate = 1500
	sc.Services[0].Queue = intp(3)
	sc.Services[0].ErrorRate = 0.05
	out[sc.Name] = sc

	sc = base("pushback-honoured")
	sc.Workload.Rate = 1400
	sc.Workload.Client.HonorPushback = true
	sc.Services[0].Queue = intp(2)
	sc.Services[0].Overload = policies.OverloadConfig{ConcurrencyLimit: 3, Pushback: &policies.PushbackConfig{RetryAfter: time.Millisecond, DontRetry: true}}
	out[sc.Name] = sc

	sc = base("network-and-drops")
	sc.Workload.Client.Network = &net
	sc.Services[0].Workers = 2
	sc.Faults = []topology.Fault{{Service: "s", At: time.Second, For: 500 * time.Millisecond, DropResponse: 0.3, ErrorRate: fp(0.5)}}
	out[sc.Name] = sc

	sc = base("closed-writes-downstream")
	sc.Workload = topology.Workload{Entry: "s", Arrival: "closed", Clients: 20, ThinkTime: 5 * time.Millisecond, WriteFraction: 0.5, IdempotencyKeys: true}
	sc.Services = []topology.Service{
		{Name: "s", Workers: 4, ServiceTime: exp(500 * time.Microsecond), Calls: []topology.Call{
			{To: "db", Timeout: 20 * time.Millisecond, Retry: policies.RetryConfig{MaxAttempts: 2}},
			{To: "log"},
		}},
		{Name: "db", Workers: 2, Queue: intp(10), ServiceTime: exp(time.Millisecond), ErrorRate: 0.05},
		{Name: "log", Workers: 1, ServiceTime: constant(100 * time.Microsecond)},
	}
	out[sc.Name] = sc

	// Timeouts that fire often, cut short by the deadline for attempts
	// sent late, with the callee cancelling abandoned work and refusing
	// expired attempts: every way a timed single attempt can end.
	sc = base("timeouts-deadline-cancel")
	sc.Workload.Rate = 1100
	sc.Workload.Deadline = 8 * time.Millisecond
	sc.Workload.Client = topology.Call{Timeout: 5 * time.Millisecond, Network: &net, PropagateDeadline: true}
	sc.Services[0].Workers = 2
	sc.Services[0].Queue = intp(20)
	sc.Services[0].CancelOnTimeout = true
	sc.Services[0].RejectExpired = true
	out[sc.Name] = sc

	sc = base("deadline-only")
	sc.Workload.Rate = 1000
	sc.Workload.Deadline = 10 * time.Millisecond
	out[sc.Name] = sc

	sc = base("timeout-no-cancel")
	sc.Workload.Rate = 950
	sc.Workload.Client.Timeout = 4 * time.Millisecond
	out[sc.Name] = sc

	sc = base("shedding-queue")
	sc.Workload.Rate = 1300
	sc.Services[0].Overload = policies.OverloadConfig{Discipline: policies.AdaptiveLIFO, CoDel: &policies.CoDelConfig{}}
	out[sc.Name] = sc
	return out
}

// TestFastPathsMatchTheGeneralModel runs each scenario with and without
// the fast paths: summaries and time series must be identical to the byte,
// which pins the counters, outcomes and the draw order of every stream.
func TestFastPathsMatchTheGeneralModel(t *testing.T) {
	for name, sc := range fastPathScenarios() {
		t.Run(name, func(t *testing.T) {
			var took bool
			fastSum, fastSeries := runModel(t, sc, func(m *run) { took = m.clientDirect })
			require.True(t, took, "the scenario must take the fast path")
			sum, series := runModel(t, sc, generic)
			require.Equal(t, sum, fastSum)
			require.Equal(t, series, fastSeries)
			require.Contains(t, sum, `"succeeded"`)
			if strings.Contains(name, "timeout") || strings.Contains(name, "deadline") {
				require.NotContains(t, sum, `"unknown":0,`, "the timeouts must fire")
			}
		})
	}
}

// TestFastPathNeedsAPlainEdge checks that any call policy other than a
// timeout sends the root call through the state machine (a timeout and a
// deadline do not).
func TestFastPathNeedsAPlainEdge(t *testing.T) {
	tests := []struct {
		name   string
		change func(*topology.Scenario)
		direct bool
	}{
		{"plain", func(*topology.Scenario) {}, true},
		{"deadline", func(sc *topology.Scenario) { sc.Workload.Deadline = time.Second }, true},
		{"timeout", func(sc *topology.Scenario) { sc.Workload.Client.Timeout = time.Second }, true},
		{"retries", func(sc *topology.Scenario) { sc.Workload.Client.Retry.MaxAttempts = 2 }, false},
		{"budget", func(sc *topology.Scenario) { sc.Workload.Client.Budget = &policies.BudgetConfig{Kind: "token_bucket"} }, false},
		{"breaker", func(sc *topology.Scenario) {
			sc.Workload.Client.Breaker = &policies.BreakerConfig{Kind: "consecutive", Failures: 5, OpenFor: time.Second}
		}, false},
		{"hedge", func(sc *topology.Scenario) { sc.Workload.Client.Hedge = &policies.HedgeConfig{Delay: time.Millisecond} }, false},
		{"throttle", func(sc *topology.Scenario) { sc.Workload.Client.Throttle = &policies.ThrottleConfig{} }, false},
		{"send rate", func(sc *topology.Scenario) {
			sc.Workload.Client.SendRate = &policies.RateLimitConfig{MaxTokens: 10, FillInterval: time.Millisecond}
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := benchMM1(time.Second)
			tt.change(sc)
			m, err := build(sc)
			require.NoError(t, err)
			require.Equal(t, tt.direct, m.clientDirect)
		})
	}
}
