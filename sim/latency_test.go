package sim

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/topology"
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

// TestLatencyHistWithout records values into all and a share of them
// (none, some, every one) into also count, as a service records every
// answer in hist and the ones not OK in notOK: all.histWithout(part) must be
// the histogram of exactly the values not in part, and all must be left as
// it was.
func TestLatencyHistWithout(t *testing.T) {
	for _, tt := range []struct {
		name  string
		share int // one value in share goes to part too; 0: none
	}{{"none", 0}, {"some", 7}, {"every", 1}} {
		t.Run(tt.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(3, 4))
			all, part := newLatencyCounts(), newLatencyCounts()
			defer all.release()
			defer part.release()
			want := metrics.NewLatencyHistogram()
			for k := range 5000 {
				d := time.Duration(math.Exp(r.Float64()*math.Log(1e10)) * 100)
				i := latencyIndex(d)
				all.add(i, d)
				if tt.share > 0 && k%tt.share == 0 {
					part.count(i)
				} else {
					metrics.RecordLatency(want, d)
				}
			}
			before := all.hist().Export().Counts
			got := all.histWithout(part)
			require.Equal(t, want.Export().Counts, got.Export().Counts)
			require.Equal(t, want.TotalCount(), got.TotalCount())
			require.Equal(t, before, all.hist().Export().Counts, "all's counts restored")
		})
	}
}

// TestLatencyOfAll: the latency of all requests is exactly that of one
// histogram holding the succeeded, failed and unknown requests' values
// together, and leaves the parts as they were.
func TestLatencyOfAll(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	parts := []*latencyCounts{newLatencyCounts(), newLatencyCounts(), newLatencyCounts()}
	one := newLatencyCounts()
	defer one.release()
	for _, p := range parts {
		defer p.release()
	}
	for k := range 9000 {
		d := time.Duration(math.Exp(r.Float64()*math.Log(1e9)) * 1000)
		share := [...]int{0, 0, 0, 0, 1, 1, 2} // uneven: most succeed, few are unknown
		parts[share[k%len(share)]].record(d)
		one.record(d)
	}
	before := parts[1].latency()
	got := latencyOfAll(parts...)
	require.NotNil(t, got)
	require.Equal(t, one.latency(), *got)
	require.Equal(t, int64(9000), got.Count)
	require.Equal(t, before, parts[1].latency(), "parts unchanged")
	require.Nil(t, latencyOfAll(newLatencyCounts()), "no request, no latency")
}

// TestRunLatencyAll: a run's latency_all_ms counts every offered request
// once, each at its time to its outcome.
func TestRunLatencyAll(t *testing.T) {
	sc, err := topology.Parse("lossy.yaml", []byte(`
name: lossy
duration: 20s
workload: {entry: api, rate: 200, deadline: 300ms, client: {timeout: 100ms}}
services:
  - {name: api, workers: 2, queue: 5, service_time: {dist: exponential, mean: 8ms}, error_rate: 0.05}
`), nil)
	require.NoError(t, err)
	res := runScenario(t, sc)
	s := res.Summary
	require.Positive(t, s.Requests.Failed+s.Requests.Unknown, "the scenario must lose requests")
	all := s.LatencyAllMs
	require.NotNil(t, all)
	require.Equal(t, s.Requests.Offered, all.Count)
	var sum int64
	worst := s.LatencyMs.Max
	for _, l := range []*metrics.Latency{&s.LatencyMs, s.LatencyFailedMs, s.LatencyUnknownMs} {
		if l != nil {
			sum += l.SumUs
			worst = max(worst, l.Max)
		}
	}
	require.Equal(t, sum, all.SumUs)
	require.Equal(t, worst, all.Max)
}
