package tune

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"
)

// Samples is a sorted, non-empty set of latency samples: the empirical
// distribution every recommendation is computed from. Its zero value is
// empty and only good for Len.
type Samples struct {
	sorted []time.Duration
}

// errNoSamples is returned when a source holds no usable latency.
var errNoSamples = errors.New("no samples")

// NewSamples copies and sorts d. It fails on an empty set or a negative
// latency, which no measurement can produce.
func NewSamples(d []time.Duration) (Samples, error) {
	if len(d) == 0 {
		return Samples{}, errNoSamples
	}
	s := slices.Clone(d)
	slices.Sort(s)
	if s[0] < 0 {
		return Samples{}, fmt.Errorf("negative latency %v", s[0])
	}
	return Samples{sorted: s}, nil
}

// Len returns the number of samples.
func (s Samples) Len() int { return len(s.sorted) }

// Sorted returns the samples in ascending order. The slice is shared: do
// not modify it.
func (s Samples) Sorted() []time.Duration { return s.sorted }

// Quantile returns the nearest-rank q-quantile (0 < q ≤ 1): the k-th
// smallest sample with k = ⌈q·n⌉, so at most a fraction 1−q of the samples
// lie above it. q ≤ 0 gives the minimum.
func (s Samples) Quantile(q float64) time.Duration {
	n := len(s.sorted)
	k := int(math.Ceil(q*float64(n) - 1e-9))
	if k < 1 {
		k = 1
	}
	if k > n {
		k = n
	}
	return s.sorted[k-1]
}

// Above returns the fraction of samples strictly greater than t: the
// empirical survival function S(t) = P(X > t).
func (s Samples) Above(t time.Duration) float64 {
	n := len(s.sorted)
	if n == 0 {
		return 0
	}
	i := sort.Search(n, func(i int) bool { return s.sorted[i] > t })
	return float64(n-i) / float64(n)
}

// Mean returns the sample mean.
func (s Samples) Mean() time.Duration {
	var sum float64
	for _, x := range s.sorted {
		sum += float64(x)
	}
	return time.Duration(sum / float64(len(s.sorted)))
}

// HedgedQuantile returns the q-quantile of min(X₁, d+X₂) for independent
// draws X₁, X₂ from the samples: the latency of a call that sends a second
// attempt after d if the first has not answered. Its survival function is
//
//	P(T > t) = S(t)            for t < d
//	P(T > t) = S(t)·S(t − d)   for t ≥ d
//
// and the result is the smallest t with P(T > t) ≤ 1 − q. S only steps at
// sample values, so the candidates are the samples and the samples + d.
func (s Samples) HedgedQuantile(q float64, d time.Duration) time.Duration {
	target := 1 - q + 1e-12
	x := s.sorted
	n := len(x)
	// Walk the merged candidates t ascending; above counts samples > t and
	// aboveD samples > t − d, each by a pointer that only moves forward.
	i, j := 0, 0 // next candidate from x, and from x + d
	pa, pd := 0, 0
	for i < n || j < n {
		var t time.Duration
		if j >= n || (i < n && x[i] <= x[j]+d) {
			t = x[i]
			i++
		} else {
			t = x[j] + d
			j++
		}
		for pa < n && x[pa] <= t {
			pa++
		}
		surv := float64(n-pa) / float64(n)
		if t >= d {
			for pd < n && x[pd] <= t-d {
				pd++
			}
			surv *= float64(n-pd) / float64(n)
		}
		if surv <= target {
			return t
		}
	}
	return x[n-1]
}

// ParseUnit returns the duration of one unit named ns, us (µs), ms or s;
// "" means ms.
func ParseUnit(u string) (time.Duration, error) {
	switch u {
	case "ns":
		return time.Nanosecond, nil
	case "us", "µs":
		return time.Microsecond, nil
	case "ms", "":
		return time.Millisecond, nil
	case "s":
		return time.Second, nil
	}
	return 0, fmt.Errorf("unknown unit %q (want ns, us, ms or s)", u)
}

// UpperBoundConfidence is the confidence at which tune asks that a
// quantile it reads have an upper bound in the samples (MinSamples).
const UpperBoundConfidence = 0.95

// MinSamples is the fewest samples among which the largest is an upper
// confidence bound, at confidence conf, on the q-quantile of the
// distribution they come from. Of n independent samples all fall below
// the true q-quantile with probability qⁿ, so the largest lies above it
// with probability 1 − qⁿ, which is at least conf once
// n ≥ ln(1 − conf) / ln q. With fewer, no order statistic bounds the
// quantile from above at that confidence: the nearest-rank estimate, and
// a timeout or hedge delay read from it, may well sit below the true
// quantile. At 95 %: 59 samples for p95, 299 for p99, 2995 for p99.9.
func MinSamples(q, conf float64) int {
	if q <= 0 || q >= 1 || conf <= 0 || conf >= 1 {
		return 0
	}
	return int(math.Ceil(math.Log(1-conf) / math.Log(q)))
}

// smallSampleWarning says why a quantile read from n samples is not to
// be trusted, and what to do (advice), or "" when n is enough (MinSamples).
func smallSampleWarning(q float64, n int, what, advice string) string {
	need := MinSamples(q, UpperBoundConfidence)
	if n >= need {
		return ""
	}
	name := PercentileName(q)
	return fmt.Sprintf("%s at %s rests on %d samples, fewer than the %d that bound %s from above at %g%% confidence %s: "+
		"it may sit below the true %s, with more than %s of attempts beyond it; %s",
		what, name, n, need, name, 100*UpperBoundConfidence, minSamplesRule(q), name, trimFloat(100*(1-q))+"%", advice)
}

// minSamplesRule is MinSamples' derivation, for warnings.
func minSamplesRule(q float64) string {
	return fmt.Sprintf("(the largest of n samples exceeds the true %s with probability 1 − %sⁿ, at least %g only for n ≥ ln %s / ln %s)",
		PercentileName(q), trimFloat(q), UpperBoundConfidence, trimFloat(1-UpperBoundConfidence), trimFloat(q))
}
