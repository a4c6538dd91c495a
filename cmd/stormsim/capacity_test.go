package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stormsim/stormsim/internal/golden"
	"github.com/stretchr/testify/require"
)

// capacityArgs search the tiny chain: a few thousand requests per run, 2
// replicas, a 10 req/s resolution.
var capacityArgs = []string{"capacity", "testdata/capacity/tiny.yaml", "--slo", "p99<100ms,success>=99%",
	"--range", "50:400", "--replicas", "2", "--recovery-bound", "8s", "--resolution", "10"}

// sharedCapacity is capacityArgs run once per test process with
// --format json --out DIR, for the tests that read its report (a search is
// seconds of CPU): the JSON it printed and DIR.
func sharedCapacity(t *testing.T) (out, dir string) {
	t.Helper()
	c := &capacityRun
	c.once.Do(func() {
		if c.dir, c.err = processDir("stormsim-capacity-"); c.err != nil {
			return
		}
		c.out, c.errOut, c.code = runCLI(t, append(capacityArgs, "--format", "json", "--out", c.dir)...)
	})
	require.NoError(t, c.err)
	require.Equal(t, 0, c.code, c.errOut)
	return c.out, c.dir
}

var capacityRun struct {
	once             sync.Once
	out, errOut, dir string
	code             int
	err              error
}

func TestCapacityGolden(t *testing.T) {
	out, errOut, code := runCLI(t, capacityArgs...)
	require.Equal(t, 0, code, errOut)
	golden.Check(t, "testdata/capacity/tiny.golden", []byte(out))
}

func TestCapacityJSONAndPlots(t *testing.T) {
	out, dir := sharedCapacity(t)
	var rep struct {
		Capacity struct {
			Answer struct {
				Status  string   `json:"status"`
				HoldsAt *float64 `json:"holds_at"`
			} `json:"answer"`
			Bound      string `json:"bound"`
			Runs       int    `json:"runs"`
			Bottleneck struct {
				Service string `json:"service"`
			} `json:"bottleneck"`
		} `json:"capacity"`
		Recovery struct {
			RecoveryBoundS float64 `json:"recovery_bound_s"`
		} `json:"recovery"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.Equal(t, "bracketed", rep.Capacity.Answer.Status)
	require.NotNil(t, rep.Capacity.Answer.HoldsAt)
	require.Equal(t, "recovery", rep.Capacity.Bound)
	require.Equal(t, "db", rep.Capacity.Bottleneck.Service)
	require.Equal(t, 8.0, rep.Recovery.RecoveryBoundS)
	require.Positive(t, rep.Capacity.Runs)
	// The text report in DIR says what stdout's JSON says, and the plots
	// are PNG files.
	txt, err := os.ReadFile(filepath.Join(dir, "capacity.txt"))
	require.NoError(t, err)
	require.Contains(t, string(txt), "bound by: recovery")
	golden, err := os.ReadFile("testdata/capacity/tiny.golden")
	require.NoError(t, err)
	require.Equal(t, string(golden), string(txt), "the text report in DIR is the one printed without --format json")
	for _, name := range []string{"capacity-slo.png", "capacity-utilization.png", "capacity-recovery.png"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err, name)
		require.True(t, strings.HasPrefix(string(b), "\x89PNG"), name)
	}
}

func TestCapacitySolve(t *testing.T) {
	out, errOut, code := runCLI(t, "capacity", "testdata/capacity/tiny.yaml", "--slo", "p99<100ms,success>=99%",
		"--solve", "services.db.workers=1:16", "--solve", "services.api.calls.db.timeout=10ms:200ms", "--target", "300",
		"--replicas", "2", "--recovery-bound", "8s")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "what-if at workload.rate=300")
	require.Contains(t, out, "services.db.workers ≥ ")
	require.Contains(t, out, "or services.api.calls.db.timeout ")
	require.NotContains(t, out, "capacity: holds at", "no --range: only the what-if is asked")
}

func TestCapacityBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--slo", "p99<100ms,sucess>=99%"}, `term 2 "sucess>=99%": unknown metric "sucess"`},
		{[]string{"--slo", "cache.utilization<0.5"}, `no service "cache"`},
		{[]string{}, "--slo is required"},
		{[]string{"--slo", "p99<1s", "--solve", "services.db.workers"}, "--solve needs --target"},
		{[]string{"--slo", "p99<1s", "--range", "400:50"}, "--range"},
		{[]string{"--slo", "p99<1s", "--param", "workload.entry"}, "not a number"},
		{[]string{"--slo", "p99<1s", "--solve", "services.db.bogus", "--target", "100"}, `no key "bogus"`},
		{[]string{"--slo", "p99<1s", "--format", "xml"}, "--format"},
	} {
		_, errOut, code := runCLI(t, append([]string{"capacity", "testdata/capacity/tiny.yaml"}, tc.args...)...)
		require.Equal(t, exitUsage, code, "%v: %s", tc.args, errOut)
		require.Contains(t, errOut, tc.want, "%v", tc.args)
	}
}

func TestCapacitySharded(t *testing.T) {
	// Two shards exchanging results through their parent directory write
	// the same report as one unsharded run.
	dir := t.TempDir()
	_, solo := sharedCapacity(t)
	want, err := os.ReadFile(filepath.Join(solo, "capacity.txt"))
	require.NoError(t, err)

	parent := filepath.Join(dir, "sharded")
	codes := make([]int, 2)
	errs := make([]string, 2)
	done := make(chan int)
	for i := range 2 {
		go func() {
			_, errs[i], codes[i] = runCLI(t, append(capacityArgs, "--shard", []string{"0/2", "1/2"}[i], "--shard-wait", "1m",
				"--out", filepath.Join(parent, []string{"shard-0", "shard-1"}[i]))...)
			done <- i
		}()
	}
	<-done
	<-done
	for i := range 2 {
		require.Equal(t, 0, codes[i], errs[i])
		got, err := os.ReadFile(filepath.Join(parent, []string{"shard-0", "shard-1"}[i], "capacity.txt"))
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), "shard %d", i)
	}
	// stormsim merge recognises the capacity shards and writes the one report.
	merged := filepath.Join(dir, "merged")
	_, errOut, code := runCLI(t, "merge", filepath.Join(parent, "shard-0"), filepath.Join(parent, "shard-1"), "--out", merged)
	require.Equal(t, 0, code, errOut)
	got, err := os.ReadFile(filepath.Join(merged, "capacity.txt"))
	require.NoError(t, err)
	require.Equal(t, string(want), string(got))
	_, errOut, code = runCLI(t, append(capacityArgs, "--shard", "0/2", "--out", filepath.Join(dir, "elsewhere"))...)
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, "needs --out PARENT/shard-0")
}

// TestCapacityFailedPoints: points whose runs cannot be built (a service
// time beyond the 10000h limit) are failed points, written to the report
// and counted as not meeting the SLO; the search finishes below them and
// the exit status is 1 (issue 17, item 3).
func TestCapacityFailedPoints(t *testing.T) {
	dir := t.TempDir()
	out, errOut, code := runCLI(t, "capacity", "testdata/capacity/tiny.yaml", "--slo", "p99<100ms,success>=99%",
		"--param", "services.db.service_time.mean", "--range", "1ms:2562047h", "--replicas", "2", "--recovery-bound", "8s",
		"--format", "json", "--out", dir)
	require.Equal(t, exitError1, code, errOut)
	require.Contains(t, errOut, "points failed (marked failed in the report")
	var rep struct {
		Capacity struct {
			Answer struct {
				HoldsAt *float64 `json:"holds_at"`
			} `json:"answer"`
			Points []struct {
				Value   float64 `json:"value"`
				Verdict string  `json:"verdict"`
				Failed  string  `json:"failed"`
			} `json:"points"`
		} `json:"capacity"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.NotNil(t, rep.Capacity.Answer.HoldsAt, "the search found where the SLO holds")
	limit := (10000 * time.Hour).Seconds()
	failed := 0
	for _, p := range rep.Capacity.Points {
		require.Equal(t, p.Value > limit, p.Failed != "", "point %g: failed %q", p.Value, p.Failed)
		if p.Failed != "" {
			failed++
			require.Equal(t, "fails", p.Verdict)
			require.Contains(t, p.Failed, "must be at most 10000h0m0s")
		}
	}
	require.Greater(t, failed, 0)
	txt, err := os.ReadFile(filepath.Join(dir, "capacity.txt"))
	require.NoError(t, err)
	require.Contains(t, string(txt), "failed points (counted as not meeting the SLO):")
}

// TestCapacityVariants (issue 36 item 8): capacity --variant searches each
// variant with the baseline's seed, as compare runs them, and says each
// one's capacity; the baseline's matches a search without --variant.
func TestCapacityVariants(t *testing.T) {
	dir := t.TempDir()
	single, _ := sharedCapacity(t)
	out, errOut, code := runCLI(t, append(capacityArgs, "--variant", "big:services.db.workers=8", "--format", "json", "--out", dir)...)
	require.Equal(t, 0, code, errOut)
	var doc struct {
		Variants []struct {
			Name    string          `json:"name"`
			Changes string          `json:"changes"`
			Report  json.RawMessage `json:"report"`
		} `json:"variants"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	require.Len(t, doc.Variants, 2)
	require.Equal(t, "baseline", doc.Variants[0].Name)
	require.Equal(t, "big", doc.Variants[1].Name)
	require.Equal(t, "services.db.workers=8", doc.Variants[1].Changes)
	require.JSONEq(t, single, string(doc.Variants[0].Report), "the baseline's search is the one without --variant")
	type answer struct {
		Capacity struct {
			Answer struct {
				Status  string   `json:"status"`
				HoldsAt *float64 `json:"holds_at"`
			} `json:"answer"`
		} `json:"capacity"`
	}
	var base, big answer
	require.NoError(t, json.Unmarshal(doc.Variants[0].Report, &base))
	require.NoError(t, json.Unmarshal(doc.Variants[1].Report, &big))
	require.Greater(t, *big.Capacity.Answer.HoldsAt, *base.Capacity.Answer.HoldsAt, "twice the db workers hold more load")
	for _, f := range []string{"baseline/capacity.json", "big/capacity.txt", "capacity-variants.txt"} {
		require.FileExists(t, filepath.Join(dir, f))
	}
	table, err := os.ReadFile(filepath.Join(dir, "capacity-variants.txt"))
	require.NoError(t, err)
	require.Contains(t, string(table), "big")
	require.Contains(t, string(table), "bound by")

	_, errOut, code = runCLI(t, append(capacityArgs, "--variant", "nope")...)
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, "--variant")
}
