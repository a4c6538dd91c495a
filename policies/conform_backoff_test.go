package policies

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/cenkalti/backoff/v5"
)

// ksAlpha is the significance level of the two-sample Kolmogorov–Smirnov
// tests below, and ksC its critical coefficient c(α) = sqrt(−ln(α/2)/2):
// samples of sizes n and m from one distribution exceed
// D = c(α)·sqrt((n+m)/(n·m)) with probability α. The real libraries draw
// from crypto/rand (the AWS SDK) or the unseeded math/rand (cenkalti), so
// these tests cannot be seeded: α is small enough that the 21 comparisons
// raise a false alarm about once in 50,000 runs, and with 3000 samples a
// side the critical D is 0.07, so a distribution off by a tenth anywhere in
// its CDF (a base of 900 ms for 1 s) is still caught.
const ksAlpha = 1e-6

var ksC = math.Sqrt(-math.Log(ksAlpha/2) / 2)

// ksStatistic returns the two-sample Kolmogorov–Smirnov statistic: the
// largest gap between the empirical distribution functions of a and b.
func ksStatistic(a, b []float64) float64 {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	var d float64
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		x := min(a[i], b[j])
		for i < len(a) && a[i] <= x {
			i++
		}
		for j < len(b) && b[j] <= x {
			j++
		}
		d = max(d, math.Abs(float64(i)/float64(len(a))-float64(j)/float64(len(b))))
	}
	return d
}

// ksSame fails the test if a and b differ at level ksAlpha.
func ksSame(t *testing.T, what string, a, b []float64) {
	t.Helper()
	n, m := float64(len(a)), float64(len(b))
	crit := ksC * math.Sqrt((n+m)/(n*m))
	if d := ksStatistic(a, b); d > crit {
		t.Errorf("%s: KS D = %.4f > %.4f (α = %v): the delays are not drawn from one distribution", what, d, crit, ksAlpha)
	}
}

func TestKSStatisticCanFail(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	a, b := make([]float64, ksSamples), make([]float64, ksSamples)
	for i := range a {
		a[i], b[i] = r.Float64(), 0.9*r.Float64()
	}
	n := float64(len(a))
	if d := ksStatistic(a, b); d <= ksC*math.Sqrt(2/n) {
		t.Fatalf("U(0,1) vs U(0,0.9): D = %v should exceed %v", d, ksC*math.Sqrt(2/n))
	}
}

const ksSamples = 3000

// TestAWSBackoffDistribution compares the aws-standard-2026 preset's delays
// with the real aws-sdk-go-v2 v1.48.0 standard retryer's (its default
// backoff, backoffDelay2026, drawing from crypto/rand), for the first three
// retries after a throttling and after a transient error.
func TestAWSBackoffDistribution(t *testing.T) {
	sdk := retry.NewStandard()
	b, err := NewBackoff(mustRetry(t, "aws-standard-2026").Backoff)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for _, cause := range []Outcome{Unavailable, Error} {
		for n := 1; n <= 3; n++ {
			real, ours := make([]float64, ksSamples), make([]float64, ksSamples)
			for i := range real {
				d, err := sdk.RetryDelay(n, awsError{cause})
				if err != nil {
					t.Fatal(err)
				}
				real[i] = d.Seconds()
				ours[i] = b.after(cause).Delay(n, 0, r).Seconds()
			}
			ksSame(t, cause.String()+" retry "+string(rune('0'+n)), real, ours)
		}
	}
}

// TestCenkaltiBackoffDistribution compares proportional jitter with
// github.com/cenkalti/backoff/v5 v5.0.3's ExponentialBackOff defaults
// (500 ms, ×1.5, ±50 %, capped at 60 s before randomizing) over its first
// twelve delays, the cap included.
func TestCenkaltiBackoffDistribution(t *testing.T) {
	ours, err := NewBackoff(BackoffConfig{Initial: 500 * time.Millisecond, Multiplier: 1.5, Max: 60 * time.Second, Jitter: "proportional", Spread: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	const retries = 12
	real := make([][]float64, retries)
	mine := make([][]float64, retries)
	for range ksSamples {
		eb := backoff.NewExponentialBackOff()
		eb.Reset()
		for n := range retries {
			real[n] = append(real[n], eb.NextBackOff().Seconds())
			mine[n] = append(mine[n], ours.Delay(n+1, 0, r).Seconds())
		}
	}
	for n := range retries {
		ksSame(t, "retry "+time.Duration(n+1).String(), real[n], mine[n])
	}
}
