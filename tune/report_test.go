package tune

import (
	"bytes"
	"encoding/json"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot/plotter"

	"github.com/stormsim/stormsim/internal/golden"
)

func testPlan(t *testing.T) *Plan {
	t.Helper()
	hops := chain(rand.New(rand.NewPCG(5, 5)), 4000, 5*time.Millisecond, 50*time.Millisecond)
	p, err := Recommend(hops, Options{Deadline: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPlanText(t *testing.T) {
	var b bytes.Buffer
	if err := testPlan(t).WriteText(&b); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "testdata/plan.txt.golden", b.Bytes())
}

func TestPlanJSONAndSets(t *testing.T) {
	p := testPlan(t)
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		RetryOwner string   `json:"retry_owner"`
		Set        []string `json:"set"`
		Hops       []struct {
			Name      string  `json:"name"`
			TimeoutMs float64 `json:"timeout_ms"`
			Attempts  int     `json:"attempts"`
		} `json:"hops"`
	}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.RetryOwner != "db" || len(back.Hops) != 3 || back.Hops[2].Attempts != 3 {
		t.Errorf("round trip: %+v", back)
	}
	if got, want := back.Hops[1].TimeoutMs, ms(p.Hops[1].Timeout); got != want {
		t.Errorf("orders timeout_ms %v, want %v", got, want)
	}
	sets := strings.Join(back.Set, "\n")
	for _, want := range []string{
		"workload.deadline=1s",
		"workload.client.timeout=" + p.Hops[0].Timeout.Round(time.Microsecond).String(),
		"workload.client.retry.max_attempts=1",
		"services.gateway.calls.orders.retry.max_attempts=1",
		"services.orders.calls.db.retry.max_attempts=3",
		"services.orders.calls.db.budget.ratio=0.2",
		"services.orders.calls.db.propagate_deadline=true",
	} {
		if !strings.Contains(sets+"\n", want+"\n") {
			t.Errorf("sets lack %q:\n%s", want, sets)
		}
	}
}

func TestSaveWritesPlots(t *testing.T) {
	dir := t.TempDir()
	p := testPlan(t)
	files, err := p.Save(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 5 {
		t.Fatalf("wrote %v", files)
	}
	f, err := os.Open(filepath.Join(dir, "cdf-orders.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() < 500 || b.Dy() < 300 {
		t.Errorf("image %v too small", b)
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".*tmp*"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestLogPadded (issue 36 item 14): the tail plot's x axis leaves room
// beyond the largest value drawn, so a timeout at the largest sample is a
// mark inside the plot, not its border.
func TestLogPadded(t *testing.T) {
	lo, hi := logPadded(plotter.XYs{{X: 2, Y: 1}, {X: 40, Y: 0.01}}, plotter.XYs{{X: 40, Y: 1e-3}, {X: 40, Y: 1}})
	if lo != 2/logPad || hi != 40*logPad || !(hi > 40*1.4) {
		t.Errorf("range [%g, %g], want [%g, %g]", lo, hi, 2/logPad, 40*logPad)
	}
	if lo, hi := logPadded(); lo <= 0 || hi <= lo {
		t.Errorf("empty: [%g, %g], want a valid log range", lo, hi)
	}
	// On a plan, the timeout line lies strictly inside the axis the plot uses.
	p := testPlan(t)
	for _, h := range p.Hops {
		measured, _ := tailPoints(h.samples, h.HedgeDelay)
		lo, hi := logPadded(measured, vline(h.Timeout, 1e-3), vline(h.HedgeDelay, 1e-3))
		x := vline(h.Timeout, 1e-3)[0].X
		if !(x*1.4 < hi && x > lo) {
			t.Errorf("%s: timeout at %g ms on an axis [%g, %g]: on or near the border", h.Name, x, lo, hi)
		}
	}
}
