package transport

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestPhaseHistQuantiles: quantiles read from the phase histogram (HDR, 2
// significant figures) lie at or above the exact ones by at most HDR's
// 1 %, and never above the largest sample; mean, SD and max are exact.
func TestPhaseHistQuantiles(t *testing.T) {
	var h phaseHist
	for i := 1; i <= 1000; i++ {
		h.add(time.Duration(i) * 10 * time.Microsecond) // 0.01ms … 10ms
	}
	s := h.stat()
	require.Equal(t, int64(1000), s.Count)
	require.InDelta(t, 5.005, s.MeanMs, 1e-9)
	// 0.01 ms × 1…1000: variance 0.01² × (1000² − 1)/12.
	require.InDelta(t, 0.01*math.Sqrt((1000*1000-1)/12.0), s.SDMs, 1e-9)
	for _, c := range []struct{ got, exact float64 }{{s.P50Ms, 5}, {s.P99Ms, 9.9}} {
		require.GreaterOrEqual(t, c.got, c.exact)
		require.LessOrEqual(t, c.got, c.exact*1.01)
	}
	require.Equal(t, 10.0, s.MaxMs)
	require.LessOrEqual(t, s.P99Ms, s.MaxMs)
}

// exactQuantile is the q-quantile (0 < q < 1) of sorted xs as the phase
// histogram ranks it: the sample of rank round(q·n).
func exactQuantile(xs []time.Duration, q float64) time.Duration {
	return xs[max(int(q*float64(len(xs))+0.5), 1)-1]
}

// requireWithinHDR checks a phase quantile (ms) against the exact sample
// quantile: a sample is recorded as whole µs (truncated, so at most 1 µs
// lower), and the quantile is the upper end of its HDR bucket, at most 1 %
// above the recorded value (2 significant figures), and at most the max.
func requireWithinHDR(t *testing.T, name string, gotMs float64, exact, largest time.Duration) {
	t.Helper()
	us := float64(exact / time.Microsecond)
	lo, hi := us/1000, min(us*1.01/1000, float64(largest)/1e6)
	require.GreaterOrEqualf(t, gotMs, lo, "%s", name)
	require.LessOrEqualf(t, gotMs, hi, "%s", name)
}

// TestPhaseHistQuantilesOfKnownSamples: over heavy-tailed samples (log-
// normal, 1 µs … tens of seconds), p50 and p99 are within the stated error
// of the exact sample quantiles.
func TestPhaseHistQuantilesOfKnownSamples(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, sigma := range []float64{0.3, 1, 3} {
		var h phaseHist
		xs := make([]time.Duration, 20000)
		for i := range xs {
			xs[i] = time.Duration(math.Exp(math.Log(2e6)+sigma*rng.NormFloat64())) + time.Microsecond
			h.add(xs[i])
		}
		slices.Sort(xs)
		s := h.stat()
		requireWithinHDR(t, fmt.Sprintf("sigma %g p50", sigma), s.P50Ms, exactQuantile(xs, 0.5), xs[len(xs)-1])
		requireWithinHDR(t, fmt.Sprintf("sigma %g p99", sigma), s.P99Ms, exactQuantile(xs, 0.99), xs[len(xs)-1])
		require.Equal(t, float64(xs[len(xs)-1])/1e6, s.MaxMs)
	}
}

// TestPhaseHistogramsMerge: the collector's merge of several recorders'
// phase histograms (one edge per replica) is the histogram of all their
// samples: the same buckets, count and sum as one recorder that saw them
// all, and its quantiles within the stated error of the exact ones.
func TestPhaseHistogramsMerge(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var a, b, all PhaseRecorder
	var xs []time.Duration
	for i := range 5000 {
		d := time.Duration(rng.ExpFloat64() * float64(3*time.Millisecond))
		if i%3 == 0 {
			d *= 20 // the second recorder's edge is slower
		}
		xs = append(xs, d)
		r := &a
		if i%3 == 0 {
			r = &b
		}
		r.hist[PhaseFirstByte].add(d)
		all.hist[PhaseFirstByte].add(d)
	}
	n, sum, buckets := mergedPhase([]*PhaseRecorder{&a, &b, new(PhaseRecorder)}, PhaseFirstByte)
	wn, wsum, wbuckets := mergedPhase([]*PhaseRecorder{&all}, PhaseFirstByte)
	require.Equal(t, int64(len(xs)), n)
	require.Equal(t, wn, n)
	require.InDelta(t, wsum, sum, 1e-9)
	require.Equal(t, wbuckets, buckets)
	require.Len(t, buckets, promBuckets)
	// The bucket at 2^27 µs holds every sample below the histogram's top.
	require.Equal(t, uint64(len(xs)), buckets[float64(int64(1)<<27)/1e6])

	merged := newPhaseHistogram()
	for _, r := range []*PhaseRecorder{&a, &b} {
		h, _, _ := r.hist[PhaseFirstByte].snapshot()
		merged.Merge(h)
	}
	slices.Sort(xs)
	for _, q := range []float64{0.5, 0.9, 0.99} {
		got := float64(merged.ValueAtQuantile(q*100)) / 1000
		requireWithinHDR(t, fmt.Sprintf("merged q%g", q), got, exactQuantile(xs, q), time.Duration(math.MaxInt64))
	}
	// Cumulative counts at each power of two of µs agree with the exact
	// ones up to the samples in the one HDR bucket starting at the bound
	// (its width is under 1 % of the bound, the whole of it counted).
	for k := range promBuckets {
		bound := time.Duration(int64(1)<<k) * time.Microsecond
		exact, _ := slices.BinarySearch(xs, bound+1)
		width := time.Duration(max(int64(1)<<k/128, 1)) * time.Microsecond
		upto, _ := slices.BinarySearch(xs, bound+width)
		got := int(buckets[bound.Seconds()])
		require.GreaterOrEqualf(t, got, exact, "le 2^%d µs", k)
		require.LessOrEqualf(t, got, upto, "le 2^%d µs", k)
	}
}

// BenchmarkPhaseRecorder is the cost of recording one attempt's phases
// (an answered attempt on a reused connection: pool wait, write, first
// byte, read and the warm total) from GOMAXPROCS goroutines at once, as an
// edge's attempts record them: one op is one attempt.
func BenchmarkPhaseRecorder(b *testing.B) {
	var r PhaseRecorder
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var dur [NumPhases]time.Duration
		var ended [NumPhases]bool
		for _, p := range []Phase{PhasePool, PhaseWrite, PhaseFirstByte, PhaseRead} {
			ended[p] = true
		}
		i := 0
		for pb.Next() {
			i++
			for p := range dur {
				dur[p] = time.Duration(1+i%5000) * time.Microsecond
			}
			r.add(&dur, &ended, true, false, Answer{})
		}
	})
	if r.Report() == nil {
		b.Fatal("no attempt recorded")
	}
}
