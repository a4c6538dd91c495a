package metrics_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stormsim/stormsim/internal/golden"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/metrics/metricstest"
)

// A run that follows its writes after UNKNOWN prints the certainty block
// and the per-service query load, in text and JSON alike.
func TestCertaintyGolden(t *testing.T) {
	r := metricstest.Converging()
	var text, js bytes.Buffer
	if err := metrics.FormatText(&text, &r.Summary); err != nil {
		t.Fatal(err)
	}
	if err := metrics.WriteJSON(&js, &r.Summary); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "testdata/summary-certainty.golden.txt", text.Bytes())
	golden.Check(t, "testdata/summary-certainty.golden.json", js.Bytes())
}

// The certainty block is there exactly when Summary.Certainty is, and
// says what the contract's counts say.
func TestFormatTextCertainty(t *testing.T) {
	c := &metrics.Certainty{Intents: 200, MeanMs: 812, P50Ms: 9.5, P99Ms: 4200, MaxMs: 9100,
		ResolvedBy: metrics.ResolvedBy{Reply: 150, Query: 30, Recovery: 5, Reconciliation: 5, Manual: 6, Never: 4},
		Alerts:     11, UnknownMax: 17, ManualQueueMax: 6, ManualQueueEnd: 5, Queries: 90, QueriesPerIntent: 2.25,
		Reconciliation: &metrics.Reconciliation{Runs: 6, Items: 20, Repaired: 5, Rerepaired: 1, ToManual: 6}}
	for _, tc := range []struct {
		name    string
		c       *metrics.Certainty
		queries int64
		want    []string // lines (words single-spaced) the text must hold
		not     []string // substrings it must not
	}{
		{"no convergence", nil, 0, nil, []string{"certainty", "resolved by", "query load"}},
		{"converging", c, 90, []string{
			"certainty 200 intents: time to certainty mean 812 p50 9.50 p99 4200 max 9100 (ms from the first attempt, over the 190 that became certain)",
			"resolved by reply 150 (75.0%) query 30 (15.0%) recovery 5 (2.5%) reconciliation 5 (2.5%) manual 6 (3.0%) never 4 (2.0%)",
			"alerts 11 (unknown past alert_after) unknown at most 17 at once manual queue max 6, 5 at the end",
			"queries 90, 2.25 per intent that queried",
			"reconciliation 6 runs: 20 items, 5 repaired (1 REPAIRED TWICE: a second run must repair nothing), 0 fact queries failed, 6 to manual",
			"query load db 90 status queries (6.4% of its 1400 attempts)",
		}, []string{"recovery tasks", "resubmits"}},
		{"nothing certain", &metrics.Certainty{Intents: 3, ResolvedBy: metrics.ResolvedBy{Never: 3}}, 0,
			[]string{"certainty 3 intents: time to certainty - (none became certain)", "resolved by reply 0 (0.0%) query 0 (0.0%) recovery 0 (0.0%) reconciliation 0 (0.0%) manual 0 (0.0%) never 3 (100.0%)"},
			[]string{"query load"}},
	} {
		s := &metrics.Summary{Scenario: "s", Requests: metrics.Requests{Offered: 200}, Certainty: tc.c,
			Services: []metrics.ServiceSummary{{Name: "api", Attempts: 300}, {Name: "db", Attempts: 1400, Queries: tc.queries}}}
		var b bytes.Buffer
		if err := metrics.FormatText(&b, s); err != nil {
			t.Fatal(err)
		}
		lines := map[string]bool{}
		for _, l := range strings.Split(b.String(), "\n") {
			lines[strings.Join(strings.Fields(l), " ")] = true
		}
		for _, w := range tc.want {
			if !lines[w] {
				t.Errorf("%s: no line %q in\n%s", tc.name, w, b.String())
			}
		}
		for _, n := range tc.not {
			if strings.Contains(b.String(), n) {
				t.Errorf("%s: %q in\n%s", tc.name, n, b.String())
			}
		}
	}
}

// The certainty histogram is saved with the latency histograms and read
// back bucket for bucket; the summary's certainty object survives too.
func TestSaveLoadCertainty(t *testing.T) {
	r := metricstest.Converging()
	dir := t.TempDir()
	if err := metrics.Save(dir, r); err != nil {
		t.Fatal(err)
	}
	got, err := metrics.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.Certainty == nil || !got.Certainty.Equals(r.Certainty) {
		t.Fatal("certainty histogram lost or changed in the round trip")
	}
	if want := metrics.RoundSummary(r.Summary); !reflect.DeepEqual(got.Summary.Certainty, want.Certainty) {
		t.Errorf("certainty %+v, want %+v", got.Summary.Certainty, want.Certainty)
	}
	for _, c := range []string{metrics.ColUnknownIntents, metrics.ColManualQueue, metrics.ColQueries, metrics.ColCertainP99} {
		if got.Series.Column(c) < 0 {
			t.Errorf("series lost column %s", c)
		}
	}
	// A result without convergence writes no certainty histogram at all.
	plain := t.TempDir()
	if err := metrics.Save(plain, metricstest.Storm()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(plain, metrics.HistogramsFile))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte(`"certainty"`)) {
		t.Error("histograms.json of a run without convergence mentions certainty")
	}
	if got, err := metrics.Load(plain); err != nil || got.Certainty != nil {
		t.Errorf("plain run loaded with certainty %v (err %v)", got.Certainty, err)
	}
}

// A corrupt certainty histogram is an error naming the file and the field.
func TestLoadCertaintyError(t *testing.T) {
	dir := t.TempDir()
	r := metricstest.Converging()
	r.RunID = "x"
	if err := metrics.Save(dir, r); err != nil {
		t.Fatal(err)
	}
	hp := filepath.Join(dir, metrics.HistogramsFile)
	var h metrics.Histograms
	b, _ := os.ReadFile(hp)
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatal(err)
	}
	h.Certainty.TotalCount++
	b, _ = json.Marshal(h)
	if err := os.WriteFile(hp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := metrics.WriteManifest(dir, "x", metrics.SummaryFile, metrics.SeriesFile, metrics.HistogramsFile, metrics.FaultsFile); err != nil {
		t.Fatal(err)
	}
	_, err := metrics.Load(dir)
	if err == nil || !strings.Contains(err.Error(), metrics.HistogramsFile) || !strings.Contains(err.Error(), "certainty:") {
		t.Errorf("Load = %v, want an error naming %s and certainty", err, metrics.HistogramsFile)
	}
}

// Parts that partition a run's intents merge to the whole run's
// convergence: counts, histogram and the figures read from it exactly,
// the peaks as the lower bounds the merge documents, the per-interval p99
// as the worst part's.
func TestMergeCertaintyPartsEqualWhole(t *testing.T) {
	whole := metricstest.Converging()
	wc := whole.Summary.Certainty
	for _, n := range []int{1, 2, 3} {
		t.Run(fmt.Sprint(n, " parts"), func(t *testing.T) {
			parts := metricstest.ConvergingParts(n)
			got, err := metrics.Merge(parts...)
			if err != nil {
				t.Fatal(err)
			}
			if !got.Certainty.Equals(whole.Certainty) {
				t.Error("merged certainty histogram differs from the whole's")
			}
			gc := got.Summary.Certainty
			if gc == nil {
				t.Fatal("no certainty after the merge")
			}
			// Every count and ratio that a partition preserves.
			exact := *wc
			exact.UnknownMax, exact.ManualQueueMax, exact.MeanMs, exact.QueriesPerIntent = 0, 0, 0, 0
			exact.Reconciliation = &metrics.Reconciliation{}
			*exact.Reconciliation = *wc.Reconciliation
			exact.Reconciliation.Runs *= int64(n) // every part ran its own job
			cmp := *gc
			cmp.UnknownMax, cmp.ManualQueueMax, cmp.MeanMs, cmp.QueriesPerIntent = 0, 0, 0, 0
			if !reflect.DeepEqual(&cmp, &exact) || !reflect.DeepEqual(cmp.Reconciliation, exact.Reconciliation) || !reflect.DeepEqual(cmp.Recoveries, exact.Recoveries) {
				t.Errorf("merged certainty\n %+v\nwant\n %+v", cmp, exact)
			}
			for _, f := range []struct {
				name string
				g, w float64
			}{{"mean_ms", gc.MeanMs, wc.MeanMs}, {"queries_per_intent", gc.QueriesPerIntent, wc.QueriesPerIntent}} {
				if math.Abs(f.g-f.w) > 1e-12*f.w {
					t.Errorf("%s = %v, want %v", f.name, f.g, f.w)
				}
			}
			// The peaks: at least the largest part's, at most the whole's.
			var partMax int64
			for _, p := range parts {
				partMax = max(partMax, p.Summary.Certainty.UnknownMax)
			}
			if gc.UnknownMax < partMax || gc.UnknownMax > wc.UnknownMax {
				t.Errorf("unknown_max %d outside [largest part %d, whole %d]", gc.UnknownMax, partMax, wc.UnknownMax)
			}
			if gc.ManualQueueMax != wc.ManualQueueMax { // the queue never drains here: its end is its peak
				t.Errorf("manual_queue_max %d, want %d", gc.ManualQueueMax, wc.ManualQueueMax)
			}
			for i, w := range whole.Summary.Services {
				if g := got.Summary.Services[i]; g.Queries != w.Queries || g.FactQueries != w.FactQueries {
					t.Errorf("%s queries %d/%d, want %d/%d", w.Name, g.Queries, g.FactQueries, w.Queries, w.FactQueries)
				}
			}
			// Each interval's p99 to certainty is the worst part's:
			// quantiles of parts do not combine, and a tail must not be
			// averaged away.
			gp := got.Series.Values(metrics.ColCertainP99)
			for r := range gp {
				var worst float64
				for _, p := range parts {
					worst = max(worst, p.Series.Values(metrics.ColCertainP99)[r])
				}
				if gp[r] != worst {
					t.Errorf("row %d certainty p99 %v, want the worst part's %v", r, gp[r], worst)
				}
			}
			gu, wu := got.Series.Values(metrics.ColUnknownIntents), whole.Series.Values(metrics.ColUnknownIntents)
			if !reflect.DeepEqual(gu, wu) {
				t.Errorf("unknown_intents %v, want %v", gu, wu)
			}
		})
	}
}

// Merging shards without certainty leaves the merged summary without it.
func TestMergeWithoutCertainty(t *testing.T) {
	got, err := metrics.Merge(metricstest.StormParts(2)...)
	if err != nil {
		t.Fatal(err)
	}
	if got.Summary.Certainty != nil || got.Certainty != nil {
		t.Errorf("certainty %+v / histogram %v from parts without any", got.Summary.Certainty, got.Certainty)
	}
}

func TestCertaintyVersus(t *testing.T) {
	base := &metrics.Certainty{Intents: 1000, P99Ms: 9000, Alerts: 40, Queries: 400,
		ResolvedBy: metrics.ResolvedBy{Reply: 900, Query: 50, Manual: 30, Never: 20}}
	with := func(f func(c *metrics.Certainty)) *metrics.Certainty {
		c := *base
		f(&c)
		return &c
	}
	for _, tc := range []struct {
		name string
		base *metrics.Certainty
		v    *metrics.Certainty
		want string
	}{
		{"no certainty", nil, base, ""},
		{"variant without", base, nil, ""},
		{"same", base, base, ""},
		{"within the notable factor", base, with(func(c *metrics.Certainty) { c.P99Ms, c.Queries, c.Alerts = 8000, 480, 33 }), ""},
		{"faster and fewer unresolved", base, with(func(c *metrics.Certainty) {
			c.P99Ms = 3000
			c.ResolvedBy.Manual, c.ResolvedBy.Never, c.ResolvedBy.Query = 5, 0, 95
		}), "p99 to certainty 3.00× lower (9000 → 3000 ms); unresolved (manual or never) 10.0× lower (5.0% → 0.5%)"},
		{"a polling storm", base, with(func(c *metrics.Certainty) { c.Queries, c.Alerts = 4000, 0 }),
			"alerts (40 → 0); status queries 10.0× more (400 → 4000)"},
		{"nothing certain", base, with(func(c *metrics.Certainty) {
			c.ResolvedBy = metrics.ResolvedBy{Never: 1000}
			c.P99Ms = 0
		}), "unresolved (manual or never) 20.0× higher (5.0% → 100.0%)"},
	} {
		if got := metrics.CertaintyVersus(tc.base, tc.v); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

func ExampleCertaintyVersus() {
	base := &metrics.Certainty{Intents: 1000, P99Ms: 6200, Queries: 300,
		ResolvedBy: metrics.ResolvedBy{Reply: 950, Query: 40, Never: 10}}
	jittered := &metrics.Certainty{Intents: 1000, P99Ms: 2100, Queries: 1300,
		ResolvedBy: metrics.ResolvedBy{Reply: 950, Query: 50}}
	fmt.Println(metrics.CertaintyVersus(base, jittered))
	// Output:
	// p99 to certainty 2.95× lower (6200 → 2100 ms); unresolved (manual or never) (1.0% → 0.0%); status queries 4.33× more (300 → 1300)
}

func ExampleResolvedBy_Resolutions() {
	c := &metrics.Certainty{Intents: 100, ResolvedBy: metrics.ResolvedBy{Reply: 90, Query: 6, Reconciliation: 1, Manual: 2, Never: 1}}
	for _, r := range c.ResolvedBy.Resolutions() {
		fmt.Printf("%s %d\n", r.Name, r.Intents)
	}
	fmt.Println("certain", c.Certain(), "unresolved", c.Unresolved())
	// Output:
	// reply 90
	// query 6
	// recovery 0
	// reconciliation 1
	// manual 2
	// never 1
	// certain 97 unresolved 3
}
