package capacity

import (
	"math"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Verdict is the judgement of an SLO (or one of its terms) at one point.
type Verdict int

// The verdicts. Unsure means the replicas straddle the threshold: the
// confidence bound on one side is within it and on the other is not.
const (
	Holds Verdict = iota
	Fails
	Unsure
)

// String returns "holds", "fails" or "unsure".
func (v Verdict) String() string {
	switch v {
	case Holds:
		return "holds"
	case Fails:
		return "fails"
	}
	return "unsure"
}

// MarshalText writes the verdict as its String, for JSON.
func (v Verdict) MarshalText() ([]byte, error) { return []byte(v.String()), nil }

// tQuantile returns Student's t quantile q with df degrees of freedom.
func tQuantile(q float64, df int) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}.Quantile(q)
}

// TermStat is one SLO term across a point's replicas: the mean of its
// metric, the sample standard deviation, and the one-sided confidence
// bounds mean ± t(level, n−1)·sd/√n.
type TermStat struct {
	Term Term `json:"-"`
	// Name is the term as written canonically (p99<20ms).
	Name string  `json:"term"`
	Mean float64 `json:"mean"`
	SD   float64 `json:"sd"`
	// Lower and Upper are the one-sided confidence bounds on the mean at
	// the search's per-term level (equal to the mean with one replica).
	Lower   float64 `json:"lower"`
	Upper   float64 `json:"upper"`
	Verdict Verdict `json:"verdict"`
}

// judgeTerm judges one term from its per-replica values at one-sided
// confidence level. With one replica there is no spread to estimate and the
// verdict is the point estimate's. A value of ±Inf (a latency when nothing
// succeeded) makes the mean infinite, and the term then fails or holds
// outright.
func judgeTerm(t Term, values []float64, level float64) TermStat {
	ts := TermStat{Term: t, Name: t.String()}
	n := len(values)
	if n == 0 {
		ts.Verdict = Unsure
		return ts
	}
	finite := true
	for _, v := range values {
		if math.IsInf(v, 0) || math.IsNaN(v) {
			finite = false
		}
	}
	if !finite || n == 1 {
		var sum float64
		for _, v := range values {
			sum += v
		}
		ts.Mean = sum / float64(n)
		ts.Lower, ts.Upper = ts.Mean, ts.Mean
		if math.IsNaN(ts.Mean) { // +Inf and -Inf together cannot happen for one metric
			ts.Verdict = Fails
			return ts
		}
		if t.Satisfied(ts.Mean) {
			ts.Verdict = Holds
		} else {
			ts.Verdict = Fails
		}
		return ts
	}
	ts.Mean, ts.SD = stat.MeanStdDev(values, nil)
	half := tQuantile(level, n-1) * ts.SD / math.Sqrt(float64(n))
	ts.Lower, ts.Upper = ts.Mean-half, ts.Mean+half
	// The bound on the far side must meet the threshold for the term to
	// hold; the bound on the near side must miss it for the term to fail.
	far, near := ts.Upper, ts.Lower
	if !t.Upper() {
		far, near = ts.Lower, ts.Upper
	}
	switch {
	case t.Satisfied(far):
		ts.Verdict = Holds
	case !t.Satisfied(near):
		ts.Verdict = Fails
	default:
		ts.Verdict = Unsure
	}
	return ts
}

// RecoveryLowerBound is the one-sided Clopper–Pearson lower confidence
// bound, at level conf, on the probability that a replica recovers, given
// that k of n replicas recovered: the (1−conf) quantile of Beta(k, n−k+1),
// which for k = n is (1−conf)^(1/n).
func RecoveryLowerBound(k, n int, conf float64) float64 {
	if n <= 0 || k <= 0 {
		return 0
	}
	alpha := 1 - conf
	if k == n {
		return math.Pow(alpha, 1/float64(n))
	}
	return distuv.Beta{Alpha: float64(k), Beta: float64(n - k + 1)}.Quantile(alpha)
}

// ReplicasToShow is the fewest replicas that, all recovering, bound the
// probability that a run recovers below by p at level conf (Clopper–Pearson,
// as RecoveryLowerBound): the smallest n with (1−conf)^(1/n) ≥ p, that is
// n ≥ ln(1−conf) / ln p. It is 0 for p ≤ 0, and -1 (never) for p ≥ 1.
func ReplicasToShow(p, conf float64) int {
	switch {
	case p <= 0:
		return 0
	case p >= 1:
		return -1
	}
	n := int(math.Ceil(math.Log(1-conf) / math.Log(p)))
	// Guard the ceiling against rounding: the bound at n must reach p.
	for n > 1 && RecoveryLowerBound(n-1, n-1, conf) >= p {
		n--
	}
	for RecoveryLowerBound(n, n, conf) < p {
		n++
	}
	return n
}
