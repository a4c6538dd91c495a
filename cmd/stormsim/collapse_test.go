package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stormsim/stormsim/collapse"
)

const collapseQueue = `name: q
seed: 1
duration: 1s
workload:
  entry: s
  rate: 0.6
services:
  - name: s
    workers: 1
    queue: 100
    service_time: {dist: exponential, mean: 1s}
`

func writeCollapseQueue(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "q.yaml")
	if err := os.WriteFile(p, []byte(collapseQueue), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCollapseCommand checks the JSON of both methods on an M/M/1 (where
// the chain is exact: the two must agree within splitting's interval,
// widened twice), and the errors of bad input.
func TestCollapseCommand(t *testing.T) {
	q := writeCollapseQueue(t)
	var got [2]collapse.Estimate
	for i, m := range []string{"ctmc", "splitting"} {
		out, errOut, code := runCLI(t, "collapse", q, "--level", "system(s)>=12", "--within", "1m", "--method", m, "--mean-time", "--format", "json")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", m, code, errOut)
		}
		if err := json.Unmarshal([]byte(out), &got[i]); err != nil {
			t.Fatalf("%s: %v in %s", m, err, out)
		}
		if got[i].Method != m || got[i].MeanTimeS == nil || len(got[i].Levels) == 0 {
			t.Errorf("%s: %s", m, out)
		}
	}
	if got[1].Runs == 0 || got[1].Events == 0 {
		t.Errorf("splitting reports %d runs, %d events", got[1].Runs, got[1].Events)
	}
	half := (got[1].CI95[1] - got[1].CI95[0]) / 2
	if d := got[0].Probability - got[1].Probability; d > 2*half || -d > 2*half {
		t.Errorf("ctmc %.4g, splitting %.4g ± %.2g", got[0].Probability, got[1].Probability, half)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"collapse", q, "--within", "1m"}, exitUsage, "--level and a positive --within are required"},
		{[]string{"collapse", q, "--level", "system(s)>=5", "--within", "1m", "--format", "yaml"}, exitUsage, "--format: want text or json"},
		{[]string{"collapse", q, "--level", "system(s)>5", "--within", "1m"}, exitUsage, "want QUANTITY>=NUMBER"},
		{[]string{"collapse", q, "--level", "system(db)>=5", "--within", "1m"}, exitError1, `no service "db"`},
		{[]string{"collapse", q, "--level", "system(s)>=5", "--within", "1m", "--method", "guess"}, exitUsage, "want splitting or ctmc"},
		{[]string{"collapse", q, "--level", "system(s)>=5", "--within", "1m", "--method", "ctmc", "--set", "services.s.service_time.dist=constant", "--set", "services.s.service_time.value=1s", "--set", "services.s.service_time.mean=0s"}, exitError1, "service_time is constant"},
	} {
		_, errOut, code := runCLI(t, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, %q; want exit %d with %q", tc.args[2:], code, errOut, tc.code, tc.want)
		}
	}
}

// TestCapacityCollapseSLO runs the collapse objective through capacity.
func TestCapacityCollapseSLO(t *testing.T) {
	q := writeCollapseQueue(t)
	out, errOut, code := runCLI(t, "capacity", q, "--slo", "collapse(system(s)>=20, 1h)<0.01", "--range", "0.1:0.95", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep struct {
		Method  string   `json:"method"`
		Holds   *float64 `json:"holds_at"`
		FailsAt *float64 `json:"fails_at"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	// P(reach 20 within an hour) < 1 % up to λ ≈ 0.57 (TestSearchFindsTheBoundary
	// checks the bracket itself).
	if rep.Method != "ctmc" || rep.Holds == nil || rep.FailsAt == nil || *rep.Holds > 0.6 || *rep.FailsAt < 0.4 {
		t.Errorf("report %s", out)
	}
	_, errOut, code = runCLI(t, "capacity", q, "--slo", "collapse(system(s)>=20, 1h)<=0.01")
	if code != exitUsage || !strings.Contains(errOut, "want < BOUND") {
		t.Errorf("bad collapse SLO: exit %d, %q", code, errOut)
	}
}

// Without --format, collapse prints text like every other command.
func TestCollapseText(t *testing.T) {
	q := writeCollapseQueue(t)
	out, errOut, code := runCLI(t, "collapse", q, "--level", "system(s)>=12", "--within", "1m", "--method", "ctmc", "--mean-time")
	require.Equal(t, 0, code, errOut)
	require.True(t, strings.HasPrefix(out, "collapse   q: P(system(s)>=12 within 1m0s) = 0.0152, 95% interval ["), out)
	require.Contains(t, out, "mean time  2.83e+03 s to reach the level (exact mean first-passage time of the chain)")
}
