package tune

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// z is the normal quantile used for every statistical tolerance here:
// 4.5 standard errors, a false-failure chance of about 7e-6 per check.
const z = 4.5

// lognormal is a log-normal latency distribution given by its p50 and p99.
type lognormal struct{ mu, sigma float64 }

func newLognormal(p50, p99 time.Duration) lognormal {
	mu := math.Log(float64(p50))
	return lognormal{mu: mu, sigma: (math.Log(float64(p99)) - mu) / 2.3263478740408408}
}

func (l lognormal) draw(r *rand.Rand, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = time.Duration(math.Exp(l.mu + l.sigma*r.NormFloat64()))
	}
	return out
}

// cdf is the true P(X ≤ t).
func (l lognormal) cdf(t time.Duration) float64 {
	if t <= 0 {
		return 0
	}
	return 0.5 * math.Erfc(-(math.Log(float64(t))-l.mu)/(l.sigma*math.Sqrt2))
}

// quantile is the true q-quantile.
func (l lognormal) quantile(q float64) time.Duration {
	return time.Duration(math.Exp(l.mu + l.sigma*math.Sqrt2*math.Erfinv(2*q-1)))
}

func mustSamples(t testing.TB, d []time.Duration) Samples {
	t.Helper()
	s, err := NewSamples(d)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestQuantileWithinOrderStatisticCI checks each recommended percentile
// against the true quantile of the distribution the samples came from. For
// the k-th order statistic X₍ₖ₎ of n draws, F(X₍ₖ₎) ~ Beta(k, n−k+1), whose
// standard deviation is about √(q(1−q)/n): the true CDF at our estimate
// must lie within z of those of q.
func TestQuantileWithinOrderStatisticCI(t *testing.T) {
	dists := []struct {
		name     string
		p50, p99 time.Duration
	}{
		{"fast", 4 * time.Millisecond, 40 * time.Millisecond},
		{"wide", 20 * time.Millisecond, 900 * time.Millisecond},
	}
	for _, d := range dists {
		for _, n := range []int{2000, 100000} {
			l := newLognormal(d.p50, d.p99)
			s := mustSamples(t, l.draw(rand.New(rand.NewPCG(uint64(n), 7)), n))
			for _, q := range []float64{0.5, 0.95, 0.99, 0.999} {
				got := s.Quantile(q)
				k := math.Ceil(q * float64(n))
				mean := k / float64(n+1)
				tol := z*math.Sqrt(q*(1-q)/float64(n)) + 1/float64(n)
				if f := l.cdf(got); math.Abs(f-mean) > tol {
					t.Errorf("%s n=%d: %s = %v (true %v): F = %.6f, want %.6f ± %.6f",
						d.name, n, PercentileName(q), got, l.quantile(q), f, mean, tol)
				}
			}
		}
	}
}

// TestSpuriousRate checks the predicted spurious-timeout rate: it is the
// tail fraction of the samples above the timeout, it matches the true tail
// P(X > T) within the binomial error of n draws, and it predicts the rate a
// fresh, independent sample shows, within the binomial error of both.
func TestSpuriousRate(t *testing.T) {
	l := newLognormal(5*time.Millisecond, 60*time.Millisecond)
	r := rand.New(rand.NewPCG(11, 12))
	const nA, nB = 50000, 50000
	a := mustSamples(t, l.draw(r, nA))
	b := mustSamples(t, l.draw(r, nB))
	for _, q := range []float64{0.99, 0.999} {
		p, err := Recommend([]Hop{{Name: "orders", Samples: a}}, Options{Deadline: 10 * time.Second, Percentile: q, MaxAttempts: 1})
		if err != nil {
			t.Fatal(err)
		}
		h := p.Hops[0]
		above := 0
		for _, x := range a.Sorted() {
			if x > h.Timeout {
				above++
			}
		}
		if want := float64(above) / nA; h.Spurious != want {
			t.Errorf("q=%v: spurious %v, tail fraction of the samples %v", q, h.Spurious, want)
		}
		rate := 1 - q
		if tt := 1 - l.cdf(h.Timeout); math.Abs(tt-h.Spurious) > z*math.Sqrt(rate*(1-rate)/nA)+1.0/nA {
			t.Errorf("q=%v: predicted %.5f, true tail %.5f", q, h.Spurious, tt)
		}
		fresh := b.Above(h.Timeout)
		if tol := z*math.Sqrt(rate*(1-rate)*(1.0/nA+1.0/nB)) + 1.0/nA; math.Abs(fresh-h.Spurious) > tol {
			t.Errorf("q=%v: predicted %.5f, fresh sample %.5f (tol %.5f)", q, h.Spurious, fresh, tol)
		}
	}
}

// TestHedgedQuantile checks the hedged p99 against the exact tail of
// min(X₁, d+X₂) under the true distribution. The estimate solves
// Ŝ(t)·Ŝ(t−d) = 0.01 with Ŝ from n samples; by the delta method its
// error at fixed t has variance (S₂²·S₁(1−S₁) + S₁²·S₂(1−S₂) +
// 2S₁S₂·S₁(1−S₂))/n, S₁ = S(t), S₂ = S(t−d), Cov(Ŝ(t), Ŝ(t−d)) = S₁(1−S₂)/n.
func TestHedgedQuantile(t *testing.T) {
	l := newLognormal(5*time.Millisecond, 80*time.Millisecond)
	const n = 40000
	s := mustSamples(t, l.draw(rand.New(rand.NewPCG(3, 4)), n))
	d := s.Quantile(0.95)
	got := s.HedgedQuantile(0.99, d)
	s1, s2 := 1-l.cdf(got), 1-l.cdf(got-d)
	tail := s1 * s2
	v := (s2*s2*s1*(1-s1) + s1*s1*s2*(1-s2) + 2*s1*s2*s1*(1-s2)) / n
	if tol := z*math.Sqrt(v) + 2.0/n; math.Abs(tail-0.01) > tol {
		t.Errorf("hedged p99 %v: true P(T > p99) = %.5f, want 0.01 ± %.5f", got, tail, tol)
	}
	if p99 := s.Quantile(0.99); got >= p99 {
		t.Errorf("hedging at p95 should cut p99: got %v, unhedged %v", got, p99)
	}
	// The formula itself: simulate the race directly.
	r := rand.New(rand.NewPCG(5, 6))
	const m = 200000
	x1, x2 := l.draw(r, m), l.draw(r, m)
	slow := 0
	for i := range x1 {
		if min(x1[i], d+x2[i]) > got {
			slow++
		}
	}
	if f := float64(slow) / m; math.Abs(f-tail) > z*math.Sqrt(tail*(1-tail)/m) {
		t.Errorf("simulated P(min(X1, d+X2) > %v) = %.5f, formula %.5f", got, f, tail)
	}
}

// TestHedgedQuantileSmall pins the step-function arithmetic on a tiny set.
func TestHedgedQuantileSmall(t *testing.T) {
	ms := time.Millisecond
	// S(t): 10 samples 1..10ms. With d = 5ms, P(T > t) = S(t)·S(t−5ms)
	// for t ≥ 5ms: at 7ms it is 0.3·0.8 = 0.24, at 8ms 0.2·0.7 = 0.14,
	// at 9ms 0.1·0.6 = 0.06.
	var d []time.Duration
	for i := 1; i <= 10; i++ {
		d = append(d, time.Duration(i)*ms)
	}
	s := mustSamples(t, d)
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 5 * ms}, {0.76, 7 * ms}, {0.86, 8 * ms}, {0.94, 9 * ms}, {0.95, 10 * ms}, {0.99, 10 * ms}} {
		if got := s.HedgedQuantile(c.q, 5*ms); got != c.want {
			t.Errorf("HedgedQuantile(%v, 5ms) = %v, want %v", c.q, got, c.want)
		}
	}
}

func BenchmarkHedgedQuantile(b *testing.B) {
	s := mustSamples(b, newLognormal(5*time.Millisecond, 80*time.Millisecond).draw(rand.New(rand.NewPCG(1, 2)), 100000))
	d := s.Quantile(0.95)
	b.ReportAllocs()
	for b.Loop() {
		s.HedgedQuantile(0.99, d)
	}
}
