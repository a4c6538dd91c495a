package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/stormsim/stormsim/topology"
)

// z99 is the standard normal quantile at 0.99, used to fit a lognormal to
// its p50 and p99.
const z99 = 2.3263478740408408

// sampler draws durations from one topology.Dist. It is resolved once per
// scenario so sampling does no parsing and allocates nothing.
type sampler struct {
	kind    distKind
	a, b    float64 // parameters in nanoseconds (or log-space for lognormal)
	modes   []sampler
	weights []float64 // cumulative, last = 1
	samples []time.Duration
}

type distKind uint8

const (
	distZero distKind = iota
	distConstant
	distExponential
	distUniform
	distNormal
	distLognormal
	distMixture
	distEmpirical
)

// newSampler resolves d; field names the distribution in error messages.
func newSampler(d *topology.Dist, field string) (sampler, error) {
	if d == nil {
		return sampler{kind: distZero}, nil
	}
	ns := func(x time.Duration) float64 { return float64(x) }
	switch d.Dist {
	case "", "constant":
		if d.Dist == "" && d.Value == 0 {
			return sampler{kind: distZero}, nil
		}
		if d.Value < 0 {
			return sampler{}, fmt.Errorf("%s.value: must be ≥ 0, got %v", field, d.Value)
		}
		return sampler{kind: distConstant, a: ns(d.Value)}, nil
	case "exponential":
		if d.Mean <= 0 {
			return sampler{}, fmt.Errorf("%s.mean: must be > 0, got %v", field, d.Mean)
		}
		return sampler{kind: distExponential, a: ns(d.Mean)}, nil
	case "uniform":
		if d.Min < 0 || d.Max < d.Min {
			return sampler{}, fmt.Errorf("%s: need 0 ≤ min ≤ max, got min %v max %v", field, d.Min, d.Max)
		}
		return sampler{kind: distUniform, a: ns(d.Min), b: ns(d.Max)}, nil
	case "normal":
		if d.Mean < 0 || d.Stddev < 0 {
			return sampler{}, fmt.Errorf("%s: mean and stddev must be ≥ 0, got %v and %v", field, d.Mean, d.Stddev)
		}
		return sampler{kind: distNormal, a: ns(d.Mean), b: ns(d.Stddev)}, nil
	case "lognormal":
		switch {
		case d.P50 > 0:
			if d.P99 < d.P50 {
				return sampler{}, fmt.Errorf("%s.p99: must be ≥ p50 (%v), got %v", field, d.P50, d.P99)
			}
			mu := math.Log(ns(d.P50))
			sigma := (math.Log(ns(d.P99)) - mu) / z99
			return sampler{kind: distLognormal, a: mu, b: sigma}, nil
		case d.Mean > 0:
			m, s := ns(d.Mean), ns(d.Stddev)
			s2 := math.Log(1 + s*s/(m*m))
			return sampler{kind: distLognormal, a: math.Log(m) - s2/2, b: math.Sqrt(s2)}, nil
		}
		return sampler{}, fmt.Errorf("%s: lognormal needs p50 and p99, or mean and stddev", field)
	case "mixture":
		if len(d.Modes) == 0 {
			return sampler{}, fmt.Errorf("%s.modes: a mixture needs at least one mode", field)
		}
		s := sampler{kind: distMixture}
		total := 0.0
		for i := range d.Modes {
			m := &d.Modes[i]
			if !(m.Weight > 0) {
				return sampler{}, fmt.Errorf("%s.modes[%d].weight: must be > 0, got %v", field, i, m.Weight)
			}
			sub, err := newSampler(&m.Dist, fmt.Sprintf("%s.modes[%d]", field, i))
			if err != nil {
				return sampler{}, err
			}
			total += m.Weight
			s.modes = append(s.modes, sub)
			s.weights = append(s.weights, total)
		}
		for i := range s.weights {
			s.weights[i] /= total
		}
		return s, nil
	case "empirical":
		if len(d.Samples) == 0 {
			return sampler{}, fmt.Errorf("%s: empirical distribution %q has no samples", field, d.File)
		}
		return sampler{kind: distEmpirical, samples: d.Samples}, nil
	}
	return sampler{}, fmt.Errorf("%s.dist: unknown distribution %q (want constant, exponential, uniform, normal, lognormal, mixture or empirical)", field, d.Dist)
}

// mean returns the distribution's mean in nanoseconds (for documentation
// and tests; lognormal uses exp(μ+σ²/2)).
func (s *sampler) mean() float64 {
	switch s.kind {
	case distConstant, distExponential:
		return s.a
	case distUniform:
		return (s.a + s.b) / 2
	case distNormal:
		return s.a // ignoring truncation
	case distLognormal:
		return math.Exp(s.a + s.b*s.b/2)
	case distMixture:
		m, prev := 0.0, 0.0
		for i := range s.modes {
			m += (s.weights[i] - prev) * s.modes[i].mean()
			prev = s.weights[i]
		}
		return m
	case distEmpirical:
		t := 0.0
		for _, v := range s.samples {
			t += float64(v)
		}
		return t / float64(len(s.samples))
	}
	return 0
}

// sample draws one duration from r.
func (s *sampler) sample(r *rand.Rand) time.Duration {
	switch s.kind {
	case distZero:
		return 0
	case distConstant:
		return time.Duration(s.a)
	case distExponential:
		return time.Duration(r.ExpFloat64() * s.a)
	case distUniform:
		return time.Duration(s.a + r.Float64()*(s.b-s.a))
	case distNormal:
		// Truncated at 0 by rejection; after many misses (a mean far
		// below 0 is rejected by validation) fall back to 0.
		for range 64 {
			if x := s.a + r.NormFloat64()*s.b; x >= 0 {
				return time.Duration(x)
			}
		}
		return 0
	case distLognormal:
		return clampDuration(math.Exp(s.a + r.NormFloat64()*s.b))
	case distMixture:
		u := r.Float64()
		for i := range s.modes {
			if u < s.weights[i] || i == len(s.modes)-1 {
				return s.modes[i].sample(r)
			}
		}
	case distEmpirical:
		return max(s.samples[r.IntN(len(s.samples))], 0)
	}
	return 0
}

func clampDuration(ns float64) time.Duration {
	if ns >= math.MaxInt64/4 {
		return math.MaxInt64 / 4
	}
	return time.Duration(ns)
}
