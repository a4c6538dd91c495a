package sim

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stormsim/stormsim/metrics"
)

// TestLatencyLayoutMatchesHdr records the same durations — spread from
// below 1 µs (the low clamp) to 2 h, so many bucket sizes are hit — into
// latencyCounts and into the HdrHistogram the rest of stormsim uses: the
// counts, and every quantile the results report, must agree exactly, also
// after a reset; the mean and max are those of the values themselves.
func TestLatencyLayoutMatchesHdr(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	c := newLatencyCounts()
	for round, n := range []int{20000, 3000, 1} {
		ref := metrics.NewLatencyHistogram()
		c.reset()
		var sum int64
		var top time.Duration
		for range n {
			// Log-uniform from 0.1 µs to 2 h, and a few non-positive values.
			d := time.Duration(math.Exp(r.Float64()*math.Log(7.2e13)) * 100)
			if r.IntN(100) == 0 {
				d = -d
			}
			metrics.RecordLatency(ref, d)
			c.record(d)
			sum += int64(d / time.Microsecond)
			top = max(top, d)
		}
		got := c.hist()
		require.Equal(t, ref.Export().Counts, got.Export().Counts, "round %d: counts", round)
		require.Equal(t, ref.TotalCount(), got.TotalCount())
		require.Equal(t, metrics.LatencyOf(ref), metrics.LatencyOf(got))
		require.Equal(t, metrics.LatencyOf(ref).WithExact(sum, int64(n), top), c.latency(), "round %d: latency summary", round)
		ps := []float64{-1, 0, 0.1, 1, 25, 50, 50, 90, 99, 99.9, 99.99, 100, 101}
		all := make([]int64, len(ps))
		c.quantiles(ps, all)
		for k, p := range ps {
			require.Equal(t, ref.ValueAtQuantile(p), c.quantile(p), "round %d: p%v", round, p)
			require.Equal(t, ref.ValueAtQuantile(p), all[k], "round %d: p%v in one pass", round, p)
		}
	}
}

func TestLatencyCountsEmpty(t *testing.T) {
	c := newLatencyCounts()
	require.Zero(t, c.quantile(50))
	c.record(time.Millisecond)
	c.reset()
	require.Zero(t, c.quantile(99))
	require.Zero(t, c.hist().TotalCount())
	require.Equal(t, metrics.Latency{}, c.latency())
}

func BenchmarkLatencyRecord(b *testing.B) {
	d := make([]time.Duration, 1024)
	r := rand.New(rand.NewPCG(1, 1))
	for i := range d {
		d[i] = time.Duration(r.ExpFloat64() * float64(10*time.Millisecond))
	}
	b.Run("latencyCounts", func(b *testing.B) {
		c := newLatencyCounts()
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			c.record(d[i&1023])
		}
	})
	b.Run("hdr", func(b *testing.B) {
		h := metrics.NewLatencyHistogram()
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			metrics.RecordLatency(h, d[i&1023])
		}
	})
}

// TestLatencyCountsComeBackZeroed records into counts, releases them and
// takes counts again: whether or not the pool hands back the same array,
// it must be all zeros, or one run's latencies would leak into the next.
func TestLatencyCountsComeBackZeroed(t *testing.T) {
	for round := range 3 {
		c := newLatencyCounts()
		for _, v := range c.counts {
			require.Zero(t, v, "round %d", round)
		}
		require.Zero(t, c.total)
		for i := range 5000 {
			c.record(time.Duration(i) * 37 * time.Microsecond)
		}
		c.reset()
		c.record(time.Hour)
		c.record(time.Microsecond)
		c.release()
		require.Nil(t, c.counts)
	}
}
