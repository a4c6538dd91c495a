package collapse

import (
	"context"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stormsim/stormsim/topology"
)

// TestAttackCollapseBigParametersAreRefused: parameters that ran out of
// memory (a billion runs per level, a chain of 5e15 states) or ran until
// the budget (a horizon of 292 years, a precision of NaN) are refused
// with what is allowed, before anything is allocated.
func TestAttackCollapseBigParametersAreRefused(t *testing.T) {
	sc := mm1(t, 0.6, 1, 20)
	huge := mm1(t, 0.6, 1, 100_000_000)
	lv := systemLevel(10)
	for _, tc := range []struct {
		name  string
		sc    *topology.Scenario
		opt   Options
		ctmc  bool
		want  string
		level Level
	}{
		{"effort of a billion", sc, Options{Within: time.Minute, Effort: 1_000_000_000}, false, "effort 1000000000: must be at most 100000", lv},
		{"precision NaN", sc, Options{Within: time.Minute, Precision: math.NaN()}, false, "precision NaN", lv},
		{"precision NaN, ctmc", sc, Options{Within: time.Minute, Precision: math.NaN()}, true, "precision NaN", lv},
		{"within 2562047h", sc, Options{Within: 2562047 * time.Hour}, false, "must be at most 10000h0m0s", lv},
		{"within 2562047h, ctmc", sc, Options{Within: 2562047 * time.Hour}, true, "must be at most 10000h0m0s", lv},
		{"ctmc of a queue of 1e8", huge, Options{Within: time.Minute}, true, "more than the 5000000 the solver holds", lv},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opt.Level = tc.level
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			var err error
			if tc.ctmc {
				_, err = Solve(tc.sc, tc.opt)
			} else {
				_, err = Split(context.Background(), tc.sc, tc.opt)
			}
			runtime.ReadMemStats(&after)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one saying %q", err, tc.want)
			}
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
				t.Errorf("allocated %d MiB before refusing", grew>>20)
			}
		})
	}
}

// TestAttackCollapseBatchCapIsNoted: an estimate that runs out of batches
// before its precision says so.
func TestAttackCollapseBatchCapIsNoted(t *testing.T) {
	defer func(n int) { maxBatches = n }(maxBatches)
	maxBatches = 3
	est, err := Split(context.Background(), mm1(t, 0.6, 1, 20), Options{Level: systemLevel(8), Within: 10 * time.Second, Precision: 0.01, Effort: 20})
	if err != nil {
		t.Fatal(err)
	}
	if est.Batches != 3 {
		t.Fatalf("%d batches, want the cap of 3", est.Batches)
	}
	noted := false
	for _, n := range est.Notes {
		noted = noted || strings.Contains(n, "stopped after 3 batches, the most run, before the precision target ±0.01")
	}
	if !noted {
		t.Errorf("the cap is not noted: %q", est.Notes)
	}
}
