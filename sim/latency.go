package sim

import (
	"math/bits"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/stormsim/stormsim/metrics"
)

// The bucket layout of metrics.NewLatencyHistogram (HdrHistogram from 1 µs
// to 1 h with 3 significant digits): values below 2048 µs have a bucket each;
// above, each power-of-two range is split into 1024 equal buckets. Flat
// index i of a value v ≥ 2048 is (b+1)·1024 + (v>>b) − 1024, where
// b = bits.Len64(v) − 11 (TestLatencyLayoutMatchesHdr pins the equivalence).
const (
	latSubHalfMag = 10                       // log2 of half the sub-buckets per bucket
	latSubHalf    = 1 << latSubHalfMag       // 1024
	latSubMask    = 1<<(latSubHalfMag+1) - 1 // 2047
)

// latTemplate is the layout every latencyCounts mirrors, taken from the
// histogram the rest of stormsim uses so the two cannot drift apart.
var latTemplate = metrics.NewLatencyHistogram().Export()

// latHighest is latTemplate's highest trackable value in µs, the clamp of
// every recorded latency, kept apart so recording reads one word.
var latHighest = latTemplate.HighestTrackableValue

// latencyCounts is a latency histogram in the bucket layout of
// metrics.NewLatencyHistogram that records with an index computation and
// one increment: no per-value validation, and an index computed once can be
// added to several histograms (a request's latency goes into the interval's
// and, after warm-up, the run's). hist converts it into the equivalent
// HdrHistogram, and quantile answers as its ValueAtQuantile would, so the
// results are the same to the bit as recording into HdrHistogram directly.
type latencyCounts struct {
	counts []int64
	buf    *[]int64 // counts' box in countsPool
	total  int64
	// sumUs (whole µs) and max of the values recorded, for the exact mean
	// and max.
	sumUs  int64
	max    time.Duration
	lo, hi int // the indexes recorded since the last reset lie in [lo, hi]
	// scratch marks counts nobody reads (a Trajectory's): its array came
	// from scratchPool and goes back there as it is.
	scratch bool
}

// countsPool recycles the count arrays of finished runs, zeroed. Each is
// about 180 KB and a run needs two plus one per service: sweeps, tests and
// benchmarks run many short simulations, and allocating the arrays anew
// makes the garbage collector run often, turning on the write barriers the
// event loop then pays for.
var countsPool = sync.Pool{New: newCountsBuf}

// scratchPool recycles the count arrays of runs whose histograms are never
// read, a Trajectory's, as those runs left them: clearing an array costs a
// scan of it, and a rare-event estimate starts and ends hundreds of
// thousands of trajectories (it was a sixth of its CPU time).
var scratchPool = sync.Pool{New: newCountsBuf}

func newCountsBuf() any {
	// Each array starts at its own offset within a 4 KiB page, one of
	// countsSkews cache lines: the event loop increments the same bucket
	// of several histograms in a row (a request's latency at its service,
	// in the interval and in the run), and arrays that all start on a page
	// boundary would put those counters at addresses equal in their low 12
	// bits, which the CPU's memory disambiguation mistakes for one another
	// (4K aliasing), stalling each load behind the previous store.
	skew := int(countsSkew.Add(1)%countsSkews) * 8
	s := make([]int64, len(latTemplate.Counts)+countsSkews*8)[skew:][:len(latTemplate.Counts)]
	return &s
}

// countsSkews is the number of distinct cache-line offsets of count arrays,
// and countsSkew the count of arrays made (which picks each one's offset).
const countsSkews = 16

var countsSkew atomic.Uint32

func newLatencyCounts() *latencyCounts {
	buf := countsPool.Get().(*[]int64)
	return &latencyCounts{counts: *buf, buf: buf, lo: len(*buf)}
}

// release gives the counts back to their pool; c must not be used after.
func (c *latencyCounts) release() {
	if c.buf == nil {
		return
	}
	if c.scratch {
		scratchPool.Put(c.buf)
	} else {
		c.reset()
		countsPool.Put(c.buf)
	}
	c.counts, c.buf = nil, nil
}

// useScratch swaps c's array, still empty, for one of scratchPool, holding
// whatever an earlier run counted: for a run whose histograms nobody reads.
// Its total, sum and range start empty all the same.
func (c *latencyCounts) useScratch() {
	if c.buf == nil || c.scratch {
		return
	}
	c.reset()
	countsPool.Put(c.buf)
	c.buf = scratchPool.Get().(*[]int64)
	c.counts, c.scratch = *c.buf, true
}

// latencyIndex is d's flat bucket index, d clamped into [1 µs, 1 h] as
// metrics.RecordLatency clamps it.
func latencyIndex(d time.Duration) int {
	us := min(max(int64(d/time.Microsecond), 1), latHighest)
	b := bits.Len64(uint64(us)|latSubMask) - (latSubHalfMag + 1)
	return (b+1)<<latSubHalfMag + int(us>>uint(b)) - latSubHalf
}

// add counts value d at its flat index i (from latencyIndex), with its
// exact sum and max, for the histograms read once, at the end of the run
// (the run's, a service's, the lost requests'). It does not track the range
// of indexes recorded, as count does: span finds it when the counts are
// read, which costs one scan of the array per run instead of two branches
// per value. A histogram is recorded with add or with count, never both.
func (c *latencyCounts) add(i int, d time.Duration) {
	c.counts[i]++
	c.total++
	c.sumUs += int64(d / time.Microsecond)
	c.max = max(c.max, d)
}

// count counts a value at flat index i without its exact sum and max, for
// the histograms only ever read through quantiles or hist (the series
// interval's, a service's OK attempts'): the event loop records into four
// histograms per request, and skipping the two fields they never read keeps
// the hot path as short as it was before the exact mean and max. It tracks
// the range of indexes recorded, so that the interval's histogram, reset
// and read at every row, clears and scans only that range.
func (c *latencyCounts) count(i int) {
	c.counts[i]++
	c.total++
	// Branches rather than min and max: the range rarely widens, and
	// predicted branches spare two stores per value.
	if i < c.lo {
		c.lo = i
	}
	if i > c.hi {
		c.hi = i
	}
}

// record counts d.
func (c *latencyCounts) record(d time.Duration) { c.add(latencyIndex(d), d) }

// span returns the range of indexes holding the values recorded: the one
// count tracked, or, for a histogram recorded with add, the index of its
// max and the lowest one found by a scan from 0. It is empty (lo > hi)
// when nothing was recorded.
func (c *latencyCounts) span() (lo, hi int) {
	if c.lo <= c.hi || c.total == 0 {
		return c.lo, c.hi
	}
	for c.counts[lo] == 0 {
		lo++
	}
	return lo, latencyIndex(c.max)
}

// reset forgets every value, clearing only the range that was used.
func (c *latencyCounts) reset() {
	if c.total > 0 {
		lo, hi := c.span()
		clear(c.counts[lo : hi+1])
	}
	c.total, c.lo, c.hi = 0, len(c.counts), 0
	c.sumUs, c.max = 0, 0
}

// quantile returns what HdrHistogram's ValueAtQuantile(p) returns for the
// same values (p in percent): the highest value equivalent to the one at
// rank ⌊p/100·total + ½⌋ (at least 1, at most total); 0 when empty.
func (c *latencyCounts) quantile(p float64) int64 {
	q := [1]float64{p}
	var v [1]int64
	c.quantiles(q[:], v[:])
	return v[0]
}

// quantiles sets v[k] to quantile(ps[k]) for ascending ps, in one pass.
func (c *latencyCounts) quantiles(ps []float64, v []int64) {
	if c.total == 0 {
		clear(v)
		return
	}
	k, rank := 0, c.rank(ps[0])
	var seen int64
	i, hi := c.span()
	for i <= hi {
		// Skip blocks of buckets that cannot reach the next rank.
		if i+8 <= hi+1 {
			b := c.counts[i : i+8 : i+8]
			if s := b[0] + b[1] + b[2] + b[3] + b[4] + b[5] + b[6] + b[7]; seen+s < rank {
				seen += s
				i += 8
				continue
			}
		}
		seen += c.counts[i]
		for seen >= rank {
			v[k] = latencyValue(i, ps[k] > 0)
			if k++; k == len(ps) {
				return
			}
			rank = c.rank(ps[k])
		}
		i++
	}
	for ; k < len(ps); k++ { // unreachable while total matches the counts
		v[k] = latencyValue(hi, ps[k] > 0)
	}
}

// rank is HdrHistogram's target count for percentile p.
func (c *latencyCounts) rank(p float64) int64 {
	p = min(max(p, 0), 100)
	if r := p/100*float64(c.total) + 0.5; !(r >= 1) {
		return 1
	} else if r < float64(c.total) {
		return int64(r)
	}
	return c.total
}

// latencyValue is the lowest value of flat bucket i, or its highest when
// high is set.
func latencyValue(i int, high bool) int64 {
	b := i>>latSubHalfMag - 1
	sub := int64(i&(latSubHalf-1) + latSubHalf)
	if b < 0 {
		sub -= latSubHalf
		b = 0
	}
	v := sub << uint(b)
	if high {
		v += 1<<uint(b) - 1
	}
	return v
}

// summaryQuantiles are the percentiles metrics.Latency reports.
var summaryQuantiles = [4]float64{50, 90, 99, 99.9}

// latency returns what metrics.LatencyOf returns for hist(), with the
// exact mean and max (WithExact) instead of the buckets' estimates: the
// quantiles come from the counts in one pass over the recorded range
// instead of HdrHistogram's iterators over every bucket.
func (c *latencyCounts) latency() metrics.Latency {
	if c.total == 0 {
		return metrics.Latency{}
	}
	var q [4]int64
	c.quantiles(summaryQuantiles[:], q[:])
	ms := func(us int64) float64 { return float64(us) / 1000 }
	l := metrics.Latency{P50: ms(q[0]), P90: ms(q[1]), P99: ms(q[2]), P999: ms(q[3])}
	return l.WithExact(c.sumUs, c.total, c.max)
}

// lostLatency is latency() for the failed or unknown requests, nil when
// there were none.
func (c *latencyCounts) lostLatency() *metrics.Latency {
	if c.total == 0 {
		return nil
	}
	l := c.latency()
	return &l
}

// latencyOfAll is latency() over the values of every part together (the
// run's succeeded, failed and unknown requests: each request at the time
// its outcome was known), nil when they hold none. The parts are unchanged.
func latencyOfAll(parts ...*latencyCounts) *metrics.Latency {
	sum := newLatencyCounts()
	defer sum.release()
	for _, p := range parts {
		if p.total == 0 {
			continue
		}
		lo, hi := p.span()
		for i := lo; i <= hi; i++ {
			sum.counts[i] += p.counts[i]
		}
		sum.total += p.total
		sum.sumUs += p.sumUs
		sum.max = max(sum.max, p.max)
	}
	if sum.total == 0 {
		return nil
	}
	l := sum.latency()
	return &l
}

// hist returns an HdrHistogram holding the same values.
func (c *latencyCounts) hist() *hdrhistogram.Histogram {
	s := *latTemplate
	s.Counts = c.counts
	return hdrhistogram.Import(&s)
}

// histWithout is hist() of the values c holds that d does not, d holding
// a subset of c's values (each of d's counted in c too). The subtraction is
// exact, so the histogram is the same as one recorded with only those
// values: a caller keeps the rare complement in d instead of recording the
// common case twice. c's counts are restored before it returns.
func (c *latencyCounts) histWithout(d *latencyCounts) *hdrhistogram.Histogram {
	if d.total == 0 {
		return c.hist()
	}
	lo, hi := d.span()
	for i := lo; i <= hi; i++ {
		c.counts[i] -= d.counts[i]
	}
	h := c.hist()
	for i := lo; i <= hi; i++ {
		c.counts[i] += d.counts[i]
	}
	return h
}
