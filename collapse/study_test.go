package collapse

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The coverage study: many seeds of one estimate against the exact value.
// It takes tens of CPU minutes, so it runs only when asked for:
//
//	nice -n 10 go test ./collapse -run TestCoverageStudy -timeout 2h \
//	    -study.seeds 40 -study.case mm1k:40:1m -study.out /tmp/study.json
var (
	studySeeds   = flag.Int("study.seeds", 0, "coverage study: seeds to run (0: no study)")
	studyCase    = flag.String("study.case", "mm1k:40:1m", "coverage study: mm1k:LEVEL:WITHIN (λ=600/s, μ=1000/s) or mm1:LEVEL:WITHIN (λ=0.6, μ=1)")
	studyPrec    = flag.Float64("study.precision", DefaultPrecision, "coverage study: precision of each estimate")
	studyEffort  = flag.Int("study.effort", 0, "coverage study: effort (0: default)")
	studyBatches = flag.Int("study.batches", 0, "coverage study: run exactly this many batches per seed (no stopping rule) and record them")
	studyOut     = flag.String("study.out", "", "coverage study: file for each seed's estimate and batches (JSON)")
)

// studyRecord is one seed of the study.
type studyRecord struct {
	Seed     uint64    `json:"seed"`
	P        float64   `json:"p"`
	CI       []float64 `json:"ci"`
	Batches  []float64 `json:"batches"`
	Levels   []float64 `json:"levels"`
	Events   uint64    `json:"events"`
	CPUS     float64   `json:"cpu_s"`
	Covered  bool      `json:"covered"`
	Exact    float64   `json:"exact"`
	Notes    []string  `json:"notes,omitempty"`
	NBatches int       `json:"n_batches"`
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// TestCoverageStudy runs -study.seeds estimates and reports the mean
// ratio to the exact value, its standard error, and the intervals that
// hold the exact value against Binomial(n, 0.95). It fails when fewer
// intervals hold it than a right 95 % interval gives with probability
// 0.3 % (mean − 3 sd of the binomial), or when the mean ratio is more
// than 3 standard errors from 1.
func TestCoverageStudy(t *testing.T) {
	if *studySeeds == 0 {
		t.Skip("the coverage study runs with -study.seeds N (tens of CPU minutes)")
	}
	parts := strings.Split(*studyCase, ":")
	if len(parts) != 3 {
		t.Fatalf("-study.case %q: want KIND:LEVEL:WITHIN", *studyCase)
	}
	level, err := strconv.Atoi(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	within, err := time.ParseDuration(parts[2])
	if err != nil {
		t.Fatal(err)
	}
	lambda, mu := 600.0, 1000.0
	if parts[0] == "mm1" {
		lambda, mu = 0.6, 1
	}
	sc := mm1(t, lambda, mu, 1000)
	exact := exactMM1(t, lambda, mu, level, within)
	opt := Options{Level: systemLevel(level), Within: within, Precision: *studyPrec, Effort: *studyEffort}
	if *studyBatches > 0 {
		defer func(n int) { maxBatches = n }(maxBatches)
		maxBatches, opt.Precision = *studyBatches, 1e-9
	}
	defer func() { observeBatch = nil }()
	var recs []studyRecord
	covered := 0
	var sum, sum2 float64
	for i := range *studySeeds {
		var bs []float64
		observeBatch = func(v float64) { bs = append(bs, v) }
		opt.Seed = uint64(7000 + i)
		c0 := cpuSeconds()
		est, err := Split(context.Background(), sc, opt)
		if err != nil {
			t.Fatal(err)
		}
		r := studyRecord{Seed: opt.Seed, P: est.Probability, CI: est.CI95[:], Batches: bs, Levels: est.Levels,
			Events: est.Events, CPUS: cpuSeconds() - c0, Exact: exact, Notes: est.Notes, NBatches: est.Batches}
		r.Covered = est.CI95[0] <= exact && exact <= est.CI95[1]
		if r.Covered {
			covered++
		}
		ratio := est.Probability / exact
		sum, sum2 = sum+ratio, sum2+ratio*ratio
		recs = append(recs, r)
		t.Logf("seed %d: %.4g [%.4g, %.4g] ratio %.3f covered %v, %d batches, %d levels, %.1f CPU s",
			opt.Seed, est.Probability, est.CI95[0], est.CI95[1], ratio, r.Covered, est.Batches, len(est.Levels), r.CPUS)
		if *studyOut != "" {
			b, _ := json.Marshal(recs)
			if err := os.WriteFile(*studyOut, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	n := float64(*studySeeds)
	mean := sum / n
	se := math.Sqrt(max(sum2/n-mean*mean, 0) / max(n-1, 1))
	sd := math.Sqrt(n * 0.95 * 0.05)
	t.Logf("%s: exact %.4g; mean ratio %.3f ± %.3f (1 se); %d of %d intervals hold the exact value (Binomial(%d, 0.95): %.1f ± %.2f)",
		*studyCase, exact, mean, se, covered, *studySeeds, *studySeeds, 0.95*n, sd)
	if *studyBatches == 0 && float64(covered) < 0.95*n-3*sd {
		t.Errorf("%d of %d intervals hold the exact value: under-coverage", covered, *studySeeds)
	}
	if n >= 10 && math.Abs(mean-1) > 3*se {
		t.Errorf("mean ratio %.3f ± %.3f: biased", mean, se)
	}
	fmt.Fprintln(os.Stderr) // keep the summary apart from go test's PASS line
}
