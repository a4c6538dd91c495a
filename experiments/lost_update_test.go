package experiments

import (
	"math"
	"testing"
	"time"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/model"
)

// Version conflicts of read-modify-writes: retrying the write step loses
// updates, redoing the operation at the layer that read does not.
func TestLostUpdate(t *testing.T) {
	rs := runExperiment(t, "lost-update", run{}, run{variant: "redo-operation"}, run{variant: "fail-on-conflict"})
	vw := func(i int) metrics.VersionedWrites {
		t.Helper()
		w := service(t, rs[i], "accounts").VersionedWrites
		if w == nil {
			t.Fatalf("run %d: no versioned_writes in the summary", i)
		}
		return *w
	}
	step, redo, fail := vw(0), vw(1), vw(2)
	p := model.ConflictProbability(500, 20*time.Millisecond, 50)
	mu := 500 * 0.02 / 50.0

	// Retrying the step, every write commits once 20 ms after its read:
	// the closed form holds, with the variance bound of a conflict
	// indicator correlated with 2μ neighbours (sim/effects_test.go).
	n := float64(step.Writes)
	within(t, "conflict rate, retry: step", step.ConflictRate, p, math.Sqrt(p*(1-p)*(1+2*mu)/n))
	if step.LostUpdates != step.Conflicts || step.LostUpdates == 0 {
		t.Errorf("retry: step: %d lost updates, want every one of the %d conflicts", step.LostUpdates, step.Conflicts)
	}
	if s := rs[0].Summary.Requests; s.Succeeded != s.Offered {
		t.Errorf("retry: step: %d of %d succeeded, want all: the lost updates are silent", s.Succeeded, s.Offered)
	}

	// Redoing the operation loses nothing; it redoes at least the first
	// tries' conflicts (≈ p per transfer), and what conflicts three times
	// fails visibly, about p³ of the transfers.
	offered := float64(rs[1].Summary.Requests.Offered)
	if redo.LostUpdates != 0 {
		t.Errorf("redo-operation: %d lost updates, want 0", redo.LostUpdates)
	}
	if got := float64(redo.Redone) / offered; got < p*0.9 || got > 2*p {
		t.Errorf("redo-operation: %.3f redos per transfer, want between 0.9p = %.3f and 2p = %.3f", got, 0.9*p, 2*p)
	}
	if f := rs[1].Summary.Requests.Failed; f != redo.Aborted || float64(f)/offered > 3*p*p*p {
		t.Errorf("redo-operation: %d failed, %d aborted of %.0f, want equal and under 3p³", f, redo.Aborted, offered)
	}

	// Failing on conflict loses nothing either, but every conflict is a
	// failed transfer: fewer than p, since an aborted write commits nothing.
	if fail.LostUpdates != 0 || fail.Aborted != fail.Conflicts || rs[2].Summary.Requests.Failed != fail.Aborted {
		t.Errorf("fail-on-conflict: %+v, %d failed; want no lost update and every conflict failed", fail, rs[2].Summary.Requests.Failed)
	}
	if r := fail.ConflictRate; r > p || r < p/2 {
		t.Errorf("fail-on-conflict: conflict rate %.3f, want in [p/2, p] = [%.3f, %.3f]", r, p/2, p)
	}
}
