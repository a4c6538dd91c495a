package dist

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/stormsim/stormsim/topology"
)

// z99 is the standard normal quantile at 0.99, used to fit a lognormal to
// its p50 and p99: ln p99 = ln p50 + z99·σ.
const z99 = 2.3263478740408408

// Sampler draws durations from one distribution.
type Sampler struct {
	kind    kind
	a, b    float64 // parameters in ns (or log-space for lognormal)
	modes   []Sampler
	cum     []float64 // cumulative weights of modes
	samples []time.Duration
}

type kind uint8

const (
	kConstant kind = iota
	kExponential
	kUniform
	kNormal
	kLognormal
	kMixture
	kEmpirical
)

// New builds a sampler of d, which must be valid by topology's one rule
// (topology.Dist.Check, what validation applies to a scenario file): the
// error is Check's.
func New(d topology.Dist) (Sampler, error) {
	if err := d.Check(); err != nil {
		return Sampler{}, fmt.Errorf("%s: %w", d.Dist, err)
	}
	switch d.Dist {
	case "constant":
		return Sampler{kind: kConstant, a: float64(d.Value)}, nil
	case "exponential":
		return Sampler{kind: kExponential, a: float64(d.Mean)}, nil
	case "uniform":
		return Sampler{kind: kUniform, a: float64(d.Min), b: float64(d.Max)}, nil
	case "normal":
		return Sampler{kind: kNormal, a: float64(d.Mean), b: float64(d.Stddev)}, nil
	case "lognormal":
		if d.P50 > 0 {
			mu := math.Log(float64(d.P50))
			sigma := (math.Log(float64(d.P99)) - mu) / z99
			return Sampler{kind: kLognormal, a: mu, b: sigma}, nil
		}
		m, s := float64(d.Mean), float64(d.Stddev)
		sigma2 := math.Log1p(s * s / (m * m))
		return Sampler{kind: kLognormal, a: math.Log(m) - sigma2/2, b: math.Sqrt(sigma2)}, nil
	case "mixture":
		s := Sampler{kind: kMixture}
		total := 0.0
		for i, m := range d.Modes {
			ms, err := New(m.Dist)
			if err != nil {
				return Sampler{}, fmt.Errorf("%s: modes[%d]: %w", d.Dist, i, err)
			}
			total += m.Weight
			s.modes = append(s.modes, ms)
			s.cum = append(s.cum, total)
		}
		for i := range s.cum {
			s.cum[i] /= total
		}
		return s, nil
	}
	// empirical: Check saw its samples
	return Sampler{kind: kEmpirical, samples: d.Samples}, nil
}

// maxSample caps a draw, leaving headroom to add it to a clock.
const maxSample = math.MaxInt64 / 4

// normalTries bounds the rejection sampling of a truncated normal; with a
// mean ≥ 0 each try is accepted with probability ≥ 1/2.
const normalTries = 64

// Sample draws one duration (never negative, at most MaxInt64/4). A
// constant draws nothing from r; every other kind draws at least once.
func (s *Sampler) Sample(r *rand.Rand) time.Duration {
	if s.kind == kExponential {
		// The most drawn kind (service times, network delays), in a small
		// frame of its own: the other kinds' calls make sample's larger.
		return Exp(r, s.a)
	}
	return s.sample(r)
}

// sample draws from every kind but the exponential (Sample).
func (s *Sampler) sample(r *rand.Rand) time.Duration {
	var v float64
	switch s.kind {
	case kConstant:
		return time.Duration(s.a)
	case kUniform:
		v = s.a + r.Float64()*(s.b-s.a)
	case kNormal:
		// Truncated at 0 by rejection: the draw is normal conditioned on
		// being ≥ 0, not a normal with its negative part piled up at 0.
		for range normalTries {
			if v = s.a + r.NormFloat64()*s.b; v >= 0 {
				return time.Duration(min(v, maxSample))
			}
		}
		return 0
	case kLognormal:
		v = math.Exp(s.a + r.NormFloat64()*s.b)
	case kMixture:
		// Mode i covers [cum[i-1], cum[i]) of the unit interval.
		u := r.Float64()
		i := sort.Search(len(s.cum), func(i int) bool { return u < s.cum[i] })
		if i >= len(s.modes) {
			i = len(s.modes) - 1
		}
		return s.modes[i].Sample(r)
	case kEmpirical:
		return max(s.samples[r.IntN(len(s.samples))], 0)
	}
	if v < 0 || math.IsNaN(v) {
		return 0
	}
	if v > maxSample {
		return maxSample
	}
	return time.Duration(v)
}

// Exp draws a duration from the exponential distribution of mean ns (> 0)
// with r: the draw Sample makes for an exponential Sampler of that mean
// (ExpMean), capped alike. It is small enough to be inlined where a hot
// path draws, such as the simulator's network delays, which would
// otherwise pay for Sample's call and switch on every draw.
func Exp(r *rand.Rand, mean float64) time.Duration {
	// ExpFloat64 is ≥ 0, and the mean > 0 and finite: no NaN, no negative.
	if v := r.ExpFloat64() * mean; v <= maxSample {
		return time.Duration(v)
	}
	return maxSample
}

// ExpMean returns the mean, in ns, of an exponential Sampler, for Exp;
// ok is false for every other kind.
func (s *Sampler) ExpMean() (mean float64, ok bool) {
	if s.kind != kExponential {
		return 0, false
	}
	return s.a, true
}

// Mean returns the distribution's mean.
func (s *Sampler) Mean() time.Duration {
	switch s.kind {
	case kConstant, kExponential:
		return time.Duration(s.a)
	case kNormal:
		// The mean of a normal truncated at 0: μ + σ·φ(α)/(1 − Φ(α)),
		// α = −μ/σ.
		if s.b == 0 {
			return time.Duration(s.a)
		}
		alpha := -s.a / s.b
		pdf := math.Exp(-alpha*alpha/2) / math.Sqrt(2*math.Pi)
		tail := math.Erfc(alpha/math.Sqrt2) / 2
		return time.Duration(s.a + s.b*pdf/tail)
	case kUniform:
		return time.Duration((s.a + s.b) / 2)
	case kLognormal:
		return time.Duration(math.Exp(s.a + s.b*s.b/2))
	case kMixture:
		m, prev := 0.0, 0.0
		for i := range s.modes {
			m += (s.cum[i] - prev) * float64(s.modes[i].Mean())
			prev = s.cum[i]
		}
		return time.Duration(m)
	case kEmpirical:
		var sum float64
		for _, x := range s.samples {
			sum += float64(x)
		}
		return time.Duration(sum / float64(len(s.samples)))
	}
	return 0
}
