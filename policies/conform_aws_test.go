package policies

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	smithymiddle "github.com/aws/smithy-go/middleware"
)

// awsError is a scripted service error: throttling for Unavailable (an
// error code in retry.DefaultThrottleErrorCodes), transient for Error, and
// not retryable for anything else.
type awsError struct{ o Outcome }

func (e awsError) Error() string { return e.o.String() }

// ErrorCode makes Unavailable a throttling error to the SDK.
func (e awsError) ErrorCode() string {
	if e.o == Unavailable {
		return "ThrottlingException"
	}
	return "Scripted"
}

// RetryableError makes Error transient and the rest terminal.
func (e awsError) RetryableError() bool { return e.o == Error || e.o == Unavailable }

// randomCalls draws n overlapping calls with random outcomes (from classes)
// and random nanosecond latencies, so no two events of a script coincide.
func randomCalls(r *rand.Rand, n, attempts int, classes []Outcome, pOK float64) []scriptedCall {
	calls := make([]scriptedCall, n)
	for i := range calls {
		c := scriptedCall{start: time.Duration(r.Int64N(int64(2 * time.Second)))}
		for range attempts {
			o := OK
			if r.Float64() >= pOK {
				o = classes[r.IntN(len(classes))]
			}
			c.out = append(c.out, o)
			c.lat = append(c.lat, time.Duration(1+r.Int64N(int64(30*time.Millisecond))))
		}
		calls[i] = c
	}
	return calls
}

// TestConformsToAWSRetryMiddleware runs random outcome scripts through the
// real retry middleware of aws-sdk-go-v2 v1.48.0 (aws/retry.Attempt over
// retry.NewStandard with a ratelimit.TokenRateLimit quota) with a scripted
// handler, in a synctest bubble so its sleeps take no real time, and
// through stormsim's Call with the aws-2026 quota. The backoff is made
// deterministic on both sides (40 ms · 2^(n−1)); its random draw is
// compared separately (TestAWSBackoffDistribution). Attempts per call and
// the quota left must agree.
func TestConformsToAWSRetryMiddleware(t *testing.T) {
	classes := []Outcome{Unavailable, Error, Conflict}
	for seed := range uint64(30) {
		r := rand.New(rand.NewPCG(seed, 6))
		capacity := 20 + r.IntN(100)
		calls := randomCalls(r, 40, 3, classes, 0.4)

		var realAttempts []int
		var remaining uint
		synctest.Test(t, func(t *testing.T) {
			quota := ratelimit.NewTokenRateLimit(uint(capacity))
			retryer := retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = 3
				o.RateLimiter = quota
				o.Backoff = retry.BackoffDelayerFunc(func(attempt int, _ error) (time.Duration, error) {
					return 40 * time.Millisecond << (attempt - 1), nil
				})
			})
			m := retry.NewAttemptMiddleware(retryer, func(in any) any { return in })
			realAttempts = make([]int, len(calls))
			var wg sync.WaitGroup
			for i, c := range calls {
				wg.Go(func() {
					time.Sleep(c.start)
					next := smithymiddle.FinalizeHandlerFunc(func(ctx context.Context, in smithymiddle.FinalizeInput) (smithymiddle.FinalizeOutput, smithymiddle.Metadata, error) {
						realAttempts[i]++
						o, lat := c.attempt(realAttempts[i])
						time.Sleep(lat)
						if o == OK {
							return smithymiddle.FinalizeOutput{}, smithymiddle.Metadata{}, nil
						}
						return smithymiddle.FinalizeOutput{}, smithymiddle.Metadata{}, awsError{o}
					})
					_, _, _ = m.HandleFinalize(context.Background(), smithymiddle.FinalizeInput{Request: struct{}{}}, next)
				})
			}
			wg.Wait()
			remaining = quota.Remaining()
		})

		e := newTestEdge(t, EdgeConfig{Retry: RetryConfig{MaxAttempts: 3, On: []RetryClass{"unavailable", "error"},
			Backoff: BackoffConfig{Initial: 40 * time.Millisecond, Multiplier: 2}}})
		e.Budget = mustBudget(t, BudgetConfig{Preset: "aws-2026", Capacity: capacity})
		d := drive(t, e, calls)
		for i := range calls {
			if d.attempts[i] != realAttempts[i] {
				t.Fatalf("seed %d call %d %v: stormsim %d attempts, SDK %d", seed, i, calls[i].out, d.attempts[i], realAttempts[i])
			}
		}
		if got := e.Budget.Level(0); got != float64(remaining) {
			t.Fatalf("seed %d: stormsim quota %v, SDK %d", seed, got, remaining)
		}
	}
}
