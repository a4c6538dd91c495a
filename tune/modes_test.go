package tune

import (
	"math/rand/v2"
	"testing"
	"time"
)

// mixture draws n samples, a fraction w from a and the rest from b.
func mixture(r *rand.Rand, n int, w float64, a, b lognormal) []time.Duration {
	out := make([]time.Duration, 0, n)
	for range n {
		if r.Float64() < w {
			out = append(out, a.draw(r, 1)[0])
		} else {
			out = append(out, b.draw(r, 1)[0])
		}
	}
	return out
}

func TestDetectModes(t *testing.T) {
	warm := newLognormal(4*time.Millisecond, 9*time.Millisecond)
	cold := newLognormal(60*time.Millisecond, 150*time.Millisecond)
	single := newLognormal(5*time.Millisecond, 80*time.Millisecond)
	for seed := uint64(1); seed <= 5; seed++ {
		r := rand.New(rand.NewPCG(seed, 99))
		m := DetectModes(mustSamples(t, mixture(r, 5000, 0.7, warm, cold)))
		if !m.Multimodal {
			t.Errorf("seed %d: 70/30 mixture not detected: ΔBIC %.1f, D %.2f", seed, m.DeltaBIC, m.Separation)
		}
		// The fast component's weight is a binomial share of 5000 draws.
		if w := m.Components[0].Weight; w < 0.7-z*0.0065 || w > 0.7+z*0.0065 {
			t.Errorf("seed %d: fast weight %.3f, want 0.70", seed, w)
		}
		if p := m.Components[0].P50; p < 3*time.Millisecond || p > 5*time.Millisecond {
			t.Errorf("seed %d: fast p50 %v, want about 4ms", seed, p)
		}
		if p := m.Components[1].P50; p < 50*time.Millisecond || p > 70*time.Millisecond {
			t.Errorf("seed %d: slow p50 %v, want about 60ms", seed, p)
		}
		for _, n := range []int{500, 5000, 20000} {
			s := DetectModes(mustSamples(t, single.draw(r, n)))
			if s.Multimodal {
				t.Errorf("seed %d n=%d: single lognormal flagged: ΔBIC %.1f, D %.2f (%s)", seed, n, s.DeltaBIC, s.Separation, s.Describe())
			}
		}
	}
}

func BenchmarkDetectModes(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	s := mustSamples(b, newLognormal(5*time.Millisecond, 80*time.Millisecond).draw(r, 100000))
	b.ReportAllocs()
	for b.Loop() {
		DetectModes(s)
	}
}
