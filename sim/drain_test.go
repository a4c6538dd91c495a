package sim

import (
	"context"
	"os"
	"strings"
	"testing"

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
