package sim

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/topology"
)

// TestDrainIsBounded: work that would finish 100 days after the window
// stops the run at limits.max_drain, as diverged, with a time series of
// the window and the drain only (issue 17, item 6: a latency_add of 2400h
// held 2.6 GB, one row per second until it drained).
func TestDrainIsBounded(t *testing.T) {
	data, err := os.ReadFile("../cmd/stormsim/testdata/bad/slow-drain.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := topology.Parse("slow-drain.yaml", data, []string{"limits.max_drain=10s"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), sc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	if s.Status != StatusDiverged || s.Diverged == nil || !strings.Contains(s.Diverged.Reason, "limits.max_drain") {
		t.Fatalf("status %s (%+v), want diverged on limits.max_drain", s.Status, s.Diverged)
	}
	if rows := len(res.Series.Rows); rows > 16 {
		t.Errorf("%d time-series rows, want at most the 5 s window and 10 s drain", rows)
	}
	if s.SimTimeS > 15 {
		t.Errorf("simulated %gs, want at most the window and the drain (15s)", s.SimTimeS)
	}
}

// TestDrainHint: a run whose work drains for longer than 3x its arrival
// window gets a hint naming the keys that would bound it (issue 16); one
// that drains briefly gets none, and its JSON has no hints field.
func TestDrainHint(t *testing.T) {
	// One worker taking 1 s per request, 4 arrivals/s for 2 s: 8 requests
	// end at 8 s, 6 s after the window (> 3 x 2 s). At 0.5/s they drain
	// within a second of it.
	const base = `name: drain
duration: 2s
seed: 1
workload: {entry: api, arrival: constant, rate: RATE, client: {timeout: 1h}}
services:
  - {name: api, workers: 1, service_time: {dist: constant, value: 1s}, calls: [{to: db, timeout: 1h}]}
  - {name: db, workers: 1, queue: 100, service_time: {dist: constant, value: 1ms}}
`
	run := func(rate string) *metrics.Result {
		t.Helper()
		sc, err := topology.Parse("drain.yaml", []byte(strings.Replace(base, "RATE", rate, 1)), nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Run(context.Background(), sc, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	long := run("4").Summary
	if long.SimTimeS <= 4*2 {
		t.Fatalf("simulated %gs, want the drain to last more than 3 x the 2 s window", long.SimTimeS)
	}
	if len(long.Hints) != 1 {
		t.Fatalf("hints %q, want one drain hint", long.Hints)
	}
	h := long.Hints[0]
	for _, key := range []string{"services.api.queue", "services.api.cancel_on_timeout", "services.api.reject_expired",
		"services.db.cancel_on_timeout", "workload.deadline", "limits.max_drain"} {
		if !strings.Contains(h, key) {
			t.Errorf("hint %q does not name %s", h, key)
		}
	}
	if strings.Contains(h, "services.db.queue") {
		t.Errorf("hint %q names services.db.queue, which is already bounded", h)
	}
	short := run("0.5").Summary
	if len(short.Hints) != 0 {
		t.Errorf("simulated %gs of a 2 s window: hints %q, want none", short.SimTimeS, short.Hints)
	}
}
