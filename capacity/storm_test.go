package capacity

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stormsim/stormsim/analysis"
)

// budgetSets turn storm.yaml's plain retries into ratio-budgeted ones.
var budgetSets = []string{
	"workload.client.budget.kind=ratio", "workload.client.budget.ratio=0.1",
	"services.gateway.calls.api.budget.kind=ratio", "services.gateway.calls.api.budget.ratio=0.1",
	"services.api.calls.db.budget.kind=ratio", "services.api.calls.db.budget.ratio=0.1",
}

func TestStormBoundByRecovery(t *testing.T) {
	// Plain retries turn the fault into a storm that outlives it at loads
	// the steady state handles; the budgeted twin recovers. So the plain
	// scenario's capacity is lower, and bound by recovery: at its failing
	// point the steady-state SLO still holds.
	slo, _ := ParseSLO("p99<300ms,success>=99%")
	s := Search{Param: "workload.rate", Lo: 100, Hi: 780, Resolution: 20, Replicas: 2, SLO: slo, Orientation: HoldsBelow,
		PassOnly: true, Detector: analysis.DetectorConfig{RecoveryBound: 10 * time.Second}}
	var answers []Answer
	for _, sets := range [][]string{nil, budgetSets} {
		_, build := loadBuilder(t, "testdata/storm.yaml", sets...)
		out, err := Run(context.Background(), simRun, build, s, Options{})
		if err != nil {
			t.Fatal(err)
		}
		a := out.Answer()
		answers = append(answers, a)
		if sets != nil {
			continue
		}
		if out.Bound() != "recovery" {
			t.Errorf("plain retries: bound %q, want recovery", out.Bound())
		}
		if f := out.FailPoint(); f == nil || f.Steady != Holds {
			t.Errorf("plain retries: steady state at the failing point is %v, want holds (the storm is the fault's doing)", f.Steady)
		}
		var buf strings.Builder
		rep := &Report{Scenario: "storm", Param: s.Param, Current: 500, Capacity: out}
		if err := rep.WriteText(&buf); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), "bound by: recovery at ") {
			t.Errorf("the report does not say the bound was recovery:\n%s", buf.String())
		}
		// Issue 36 item 8: each part of the headline carries its own
		// confidence; 2 of 2 recovering bound a run's recovery only at
		// 0.05^(1/2) = 22.4 %, not at 95 %.
		pp := out.PassPoint()
		if pp == nil || pp.Recovered != len(pp.Replicas) {
			t.Fatalf("pass point %+v: want every replica recovered there", pp)
		}
		claim := fmt.Sprintf(": the steady-state SLO with 95%% confidence; after the faults %d of %d replicas recovered: a run recovers with probability ≥ %s at 95%% confidence (59 replicas, all recovering, would show ≥ 95%%)",
			pp.Recovered, len(pp.Replicas), pct(math.Pow(0.05, 1/float64(len(pp.Replicas)))))
		if !strings.Contains(buf.String(), claim) {
			t.Errorf("headline does not state the recovery's own confidence, want %q in:\n%s", claim, buf.String())
		}
		buf.Reset()
		if err := rep.WriteJSON(&buf); err != nil {
			t.Fatal(err)
		}
		var js struct {
			Capacity struct {
				HoldsAtRecovery *RecoveryClaim `json:"holds_at_recovery"`
			} `json:"capacity"`
		}
		if err := json.Unmarshal([]byte(buf.String()), &js); err != nil {
			t.Fatal(err)
		}
		if c := js.Capacity.HoldsAtRecovery; c == nil || c.Replicas != len(pp.Replicas) || c.ReplicasToShow != 59 || math.Abs(c.LowerBound-math.Pow(0.05, 1/float64(c.Replicas))) > 1e-12 {
			t.Errorf("capacity.holds_at_recovery = %+v", c)
		}
	}
	t.Logf("plain: %+v; budgeted: %+v", answers[0], answers[1])
	if !(answers[0].Status == "bracketed" && answers[0].HoldsAt < answers[1].HoldsAt) {
		t.Errorf("plain retries hold to %g, budgeted to %g: want the plain capacity lower", answers[0].HoldsAt, answers[1].HoldsAt)
	}
}
