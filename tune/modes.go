package tune

import (
	"fmt"
	"math"
	"time"

	"gonum.org/v1/gonum/stat"
)

// Modes is the result of checking a hop's samples for a mix of populations
// (cold and warm connections, cache hits and misses, two versions after a
// deploy). A Gaussian mixture with one and with two components is fitted
// to log-latency by EM, and the two are compared by BIC.
type Modes struct {
	// Multimodal is true when two components fit much better than one
	// (ΔBIC > BICThreshold) and are well separated (Ashman's D >
	// SeparationThreshold), so the distribution has two humps.
	Multimodal bool
	// DeltaBIC is BIC(one component) − BIC(two): positive favours two.
	DeltaBIC float64
	// Separation is Ashman's D = √2·|μ₁−μ₂| / √(σ₁²+σ₂²) in log space; an
	// equal-weight mix of two normals is bimodal exactly when D > 2.
	Separation float64
	// Components are the two fitted modes, fast first.
	Components [2]Mode
}

// Mode is one component of a two-mode fit, with the empirical percentiles
// of the samples assigned to it (those more likely from it than the other).
type Mode struct {
	Weight float64
	// Median is exp(μ) of the fitted log-normal component.
	Median time.Duration
	// Sigma is the component's standard deviation of log-latency.
	Sigma float64
	N     int
	P50   time.Duration
	P99   time.Duration
	P999  time.Duration
	// samples assigned to this mode, ascending.
	samples Samples
}

// Quantile returns the q-quantile of the samples assigned to the mode.
func (m Mode) Quantile(q float64) time.Duration { return m.samples.Quantile(q) }

// Thresholds used by DetectModes.
const (
	// BICThreshold is the ΔBIC above which two components are preferred:
	// 10 is "very strong" evidence on the Kass–Raftery scale.
	BICThreshold = 10.0
	// SeparationThreshold is the Ashman's D above which the modes count
	// as separate populations.
	SeparationThreshold = 2.0
	// minModeWeight ignores a "mode" made of a handful of outliers.
	minModeWeight = 0.02
	// minModeSamples is the fewest samples DetectModes looks at.
	minModeSamples = 50
	// maxModeSamples is the most samples the EM fit runs on.
	maxModeSamples = 5000
	// emIterations caps EM. Two well-separated modes converge in tens of
	// iterations; stopping early on overlapping ones only lowers the
	// two-component likelihood, which errs towards "one population".
	emIterations = 150
	// sigmaFloor keeps EM from collapsing a component onto one repeated
	// (quantized) value, where the likelihood is unbounded.
	sigmaFloor = 0.01
)

// DetectModes fits one and two log-normal components to the samples and
// reports whether they look like two populations. It is deterministic
// (EM is started from the quartiles) and needs at least 50 samples.
func DetectModes(s Samples) Modes {
	if s.Len() < minModeSamples {
		return Modes{}
	}
	x := logSample(s)
	n := len(x)
	mu, sd := stat.MeanStdDev(x, nil)
	sd = max(sd, sigmaFloor)
	ll1 := 0.0
	for _, v := range x {
		ll1 += logNormPDF(v, mu, sd)
	}
	mix, ll2 := fitTwo(x, sd)
	lnN := math.Log(float64(n))
	bic1 := -2*ll1 + 2*lnN
	bic2 := -2*ll2 + 5*lnN
	w, m, sg := mix.w, mix.m, mix.sg
	out := Modes{DeltaBIC: bic1 - bic2}
	out.Separation = math.Sqrt2 * math.Abs(m[0]-m[1]) / math.Hypot(sg[0], sg[1])
	lo, hi := 0, 1
	if m[1] < m[0] {
		lo, hi = 1, 0
	}
	parts := mix.split(s.Sorted(), lo)
	for j, k := range [2]int{lo, hi} {
		c := Mode{Weight: w[k], Median: time.Duration(math.Exp(m[k])), Sigma: sg[k], N: len(parts[j])}
		if len(parts[j]) > 0 {
			c.samples, _ = NewSamples(parts[j])
			c.P50, c.P99, c.P999 = c.samples.Quantile(0.5), c.samples.Quantile(0.99), c.samples.Quantile(0.999)
		}
		out.Components[j] = c
	}
	out.Multimodal = out.DeltaBIC > BICThreshold && out.Separation > SeparationThreshold &&
		min(w[0], w[1]) >= minModeWeight && out.Components[0].N > 0 && out.Components[1].N > 0
	return out
}

// logSample returns the logarithms of the samples (1 ns floor for zero
// latencies), in increasing order. EM costs O(n) per iteration: above
// maxModeSamples it takes an evenly spaced subsample of the sorted
// samples, which keeps their shape.
func logSample(s Samples) []float64 {
	n := s.Len()
	step := max(1, (n+maxModeSamples-1)/maxModeSamples)
	x := make([]float64, 0, n/step+1)
	for i := 0; i < n; i += step {
		x = append(x, math.Log(max(float64(s.Sorted()[i]), 1)))
	}
	return x
}

// mixFit is a two-component normal mixture of log latencies: weights,
// means and standard deviations.
type mixFit struct {
	w, m, sg [2]float64
}

// fitTwo fits a two-component mixture to the sorted x by EM, started at
// the quartiles with half the overall deviation sd, and returns it with
// its log-likelihood.
func fitTwo(x []float64, sd float64) (mixFit, float64) {
	n := len(x)
	w := [2]float64{0.5, 0.5}
	m := [2]float64{x[n/4], x[3*n/4]}
	sg := [2]float64{sd / 2, sd / 2}
	sg[0], sg[1] = max(sg[0], sigmaFloor), max(sg[1], sigmaFloor)
	resp := make([]float64, n) // responsibility of component 1
	weights := make([]float64, n)
	ll2 := math.Inf(-1)
	for iter := 0; iter < emIterations; iter++ {
		ll := expectation(x, w, m, sg, resp)
		for k := range 2 {
			sum := 0.0
			for i := range x {
				if k == 1 {
					weights[i] = resp[i]
				} else {
					weights[i] = 1 - resp[i]
				}
				sum += weights[i]
			}
			if sum < 1e-9 {
				break
			}
			w[k] = sum / float64(n)
			mk, vk := stat.MeanVariance(x, weights)
			m[k], sg[k] = mk, max(math.Sqrt(max(vk, 0)), sigmaFloor)
		}
		if math.Abs(ll-ll2) < 1e-7*float64(n) {
			ll2 = ll
			break
		}
		ll2 = ll
	}
	return mixFit{w: w, m: m, sg: sg}, ll2
}

// expectation is EM's E step: it stores in resp each sample's
// responsibility of component 1 and returns the log-likelihood. It takes
// one exp and one log1p per sample, with each component's constant part of
// log(w·pdf) hoisted.
func expectation(x []float64, w, m, sg [2]float64, resp []float64) float64 {
	c0 := math.Log(w[0]) - math.Log(sg[0]) - 0.5*math.Log(2*math.Pi)
	c1 := math.Log(w[1]) - math.Log(sg[1]) - 0.5*math.Log(2*math.Pi)
	i0, i1 := 1/sg[0], 1/sg[1]
	ll := 0.0
	for i, v := range x {
		z0, z1 := (v-m[0])*i0, (v-m[1])*i1
		a := c0 - 0.5*z0*z0
		b := c1 - 0.5*z1*z1
		if d := a - b; d > 0 {
			e := math.Exp(-d)
			ll += a + math.Log1p(e)
			resp[i] = e / (1 + e)
		} else {
			e := math.Exp(d)
			ll += b + math.Log1p(e)
			resp[i] = 1 / (1 + e)
		}
	}
	return ll
}

// split assigns each sorted sample to the component it more likely comes
// from: parts[0] the fast one (index lo), parts[1] the slow one.
func (mix mixFit) split(sorted []time.Duration, lo int) [2][]time.Duration {
	var parts [2][]time.Duration
	for _, d := range sorted {
		r := respAt(math.Log(max(float64(d), 1)), mix.w, mix.m, mix.sg)
		if lo == 1 {
			r = 1 - r
		}
		if r > 0.5 { // more likely from the slow component
			parts[1] = append(parts[1], d)
		} else {
			parts[0] = append(parts[0], d)
		}
	}
	return parts
}

// Describe summarizes the two modes: "71% around 5ms, 29% around 52ms".
func (m Modes) Describe() string {
	a, b := m.Components[0], m.Components[1]
	return fmt.Sprintf("%.0f%% around %v, %.0f%% around %v", 100*a.Weight, round(a.Median), 100*b.Weight, round(b.Median))
}

// Advice recommends per-mode thresholds at quantile q.
func (m Modes) Advice(q float64) string {
	a, b := m.Components[0], m.Components[1]
	name := PercentileName(q)
	return fmt.Sprintf("use per-mode thresholds if the modes can be told apart (by connection, route or version): fast mode %s %v, slow mode %s %v",
		name, round(a.Quantile(q)), name, round(b.Quantile(q)))
}

// respAt is the posterior probability that log-latency v came from
// component 1.
func respAt(v float64, w, m, sg [2]float64) float64 {
	a := math.Log(w[0]) + logNormPDF(v, m[0], sg[0])
	b := math.Log(w[1]) + logNormPDF(v, m[1], sg[1])
	return 1 / (1 + math.Exp(a-b))
}

func logNormPDF(x, mu, sigma float64) float64 {
	z := (x - mu) / sigma
	return -0.5*z*z - math.Log(sigma) - 0.5*math.Log(2*math.Pi)
}
