package traces

import (
	"math"
	"slices"
	"time"
)

// Fit is a lognormal fitted to samples by the moments of their logarithms.
type Fit struct {
	// Mu and Sigma are the mean and standard deviation of ln(seconds).
	Mu, Sigma float64
	// KS is the Kolmogorov–Smirnov distance between the samples and the
	// fit; Critical the distance accepted: max(0.05, 1.36/√n), the 5 %
	// critical value, floored because with thousands of samples any real
	// latency departs measurably from a lognormal and 5 % is close enough
	// for a model.
	KS, Critical float64
	// N counts the samples; Zero those ≤ 0, which a lognormal cannot hold.
	N, Zero int
}

// Good reports whether the fit is accepted.
func (f Fit) Good() bool {
	return f.N >= 20 && f.Zero*20 <= f.N && f.KS <= f.Critical && f.Sigma > 1e-3
}

// Quantile is the fit's q-quantile.
func (f Fit) Quantile(q float64) time.Duration {
	z := math.Sqrt2 * math.Erfinv(2*q-1)
	return time.Duration(math.Exp(f.Mu+f.Sigma*z) * float64(time.Second))
}

// FitLognormal fits samples (durations) to a lognormal and measures the fit.
func FitLognormal(samples []time.Duration) Fit {
	f := Fit{N: len(samples)}
	if f.N == 0 {
		return f
	}
	logs := make([]float64, 0, f.N)
	for _, d := range samples {
		if d <= 0 {
			f.Zero++
			continue
		}
		logs = append(logs, math.Log(d.Seconds()))
	}
	f.Mu, f.Sigma = meanSD(logs)
	f.Critical = max(0.05, 1.36/math.Sqrt(float64(f.N)))
	if f.Sigma <= 0 {
		f.KS = 1
		return f
	}
	slices.Sort(logs)
	// Zeros sit below every positive sample: the empirical CDF starts at
	// Zero/N where the fit's is 0.
	n := float64(f.N)
	for i, l := range logs {
		c := 0.5 * math.Erfc(-(l-f.Mu)/(f.Sigma*math.Sqrt2))
		lo := float64(f.Zero+i) / n
		hi := float64(f.Zero+i+1) / n
		f.KS = max(f.KS, math.Abs(c-lo), math.Abs(c-hi))
	}
	return f
}
