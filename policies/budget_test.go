package policies

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

const milli = time.Millisecond

// budgetStep is one step of a budget time script: at the instant at, do op
// and, for "retry" and "level", check the answer.
type budgetStep struct {
	at    time.Duration
	op    string // req, retry, result, done, level
	o     Outcome
	retry bool
	cause Outcome // result of a retry: what its TryRetry was asked with
	want  float64 // retry: 1 admitted, 0 refused; level: the level
}

func runBudgetScript(t *testing.T, b Budget, steps []budgetStep) {
	t.Helper()
	for i, s := range steps {
		switch s.op {
		case "req":
			b.OnRequest(s.at)
		case "retry":
			got := b.TryRetry(s.at, s.o)
			if got != (s.want == 1) {
				t.Fatalf("step %d (t=%v): TryRetry(%v) = %v, want %v (level %v)", i, s.at, s.o, got, s.want == 1, b.Level(s.at))
			}
		case "result":
			b.OnResult(s.at, Report{Outcome: s.o, Retry: s.retry, Cause: s.cause, Retryable: true})
		case "done":
			b.OnRequestDone(s.at)
		case "level":
			if got := b.Level(s.at); math.Abs(got-s.want) > 1e-6 {
				t.Fatalf("step %d (t=%v): Level = %v, want %v", i, s.at, got, s.want)
			}
		default:
			t.Fatalf("step %d: unknown op %q", i, s.op)
		}
	}
}

func bReqs(at time.Duration, n int) []budgetStep {
	s := make([]budgetStep, n)
	for i := range s {
		s[i] = budgetStep{at: at, op: "req"}
	}
	return s
}

func bScript(parts ...[]budgetStep) []budgetStep {
	var s []budgetStep
	for _, p := range parts {
		s = append(s, p...)
	}
	return s
}

func bOne(steps ...budgetStep) []budgetStep { return steps }

func TestBudgetScripts(t *testing.T) {
	tests := []struct {
		name  string
		cfg   BudgetConfig
		steps []budgetStep
	}{
		{"ratio/zero traffic refuses", BudgetConfig{Kind: "ratio", Ratio: 0.5, Window: 10 * time.Second},
			bOne(budgetStep{at: 0, op: "level", want: 0}, budgetStep{at: time.Second, op: "retry", o: Timeout, want: 0})},
		{"ratio/half of requests", BudgetConfig{Kind: "ratio", Ratio: 0.5, Window: 10 * time.Second}, bScript(
			bReqs(0, 4),
			bOne(budgetStep{at: 1 * milli, op: "level", want: 2},
				budgetStep{at: 1 * milli, op: "retry", want: 1},
				budgetStep{at: 2 * milli, op: "retry", want: 1},
				budgetStep{at: 3 * milli, op: "retry", want: 0}),
			bReqs(5*time.Second, 2),
			bOne(budgetStep{at: 5 * time.Second, op: "retry", want: 1},
				budgetStep{at: 5 * time.Second, op: "retry", want: 0}),
			// Window rollover: the bucket [0, 1s) leaves at 10s; 2 requests
			// and the retry at 5s remain.
			bOne(budgetStep{at: 9999 * milli, op: "level", want: 0},
				budgetStep{at: 10 * time.Second, op: "level", want: 0},
				budgetStep{at: 15 * time.Second, op: "level", want: 0}),
			bReqs(15*time.Second, 1),
			bOne(budgetStep{at: 15 * time.Second, op: "level", want: 0.5}),
		)},
		{"ratio/min per second reserve", BudgetConfig{Kind: "ratio", Ratio: 0.1, MinPerSec: 0.2, Window: 10 * time.Second}, bScript(
			bOne(budgetStep{at: 0, op: "retry", want: 1},
				budgetStep{at: 0, op: "retry", want: 1},
				budgetStep{at: 0, op: "retry", want: 0}),
			bReqs(time.Second, 10),
			bOne(budgetStep{at: time.Second, op: "retry", want: 1},
				budgetStep{at: time.Second, op: "retry", want: 0}),
		)},
		{"ratio/burst after idle", BudgetConfig{Kind: "ratio", Ratio: 0.2, Window: 10 * time.Second}, bScript(
			bReqs(0, 100),
			bOne(budgetStep{at: 0, op: "level", want: 20}),
			bOne(budgetStep{at: time.Hour, op: "level", want: 0}),
		)},
		{"token_bucket/grpc", BudgetConfig{Kind: "token_bucket", MaxTokens: 10, TokenRatio: 0.1}, bScript(
			bOne(budgetStep{op: "level", want: 10}, budgetStep{op: "retry", want: 1}),
			bOne(budgetStep{op: "result", o: Unavailable}, budgetStep{op: "result", o: Timeout},
				budgetStep{op: "result", o: Error}, budgetStep{op: "result", o: Unavailable}),
			bOne(budgetStep{op: "level", want: 6}, budgetStep{op: "retry", want: 1}),
			// Conflict and InProgress neither cost nor earn.
			bOne(budgetStep{op: "result", o: Conflict}, budgetStep{op: "result", o: InProgress},
				budgetStep{op: "level", want: 6}),
			// The fifth failure, even a call's last attempt, costs a token:
			// 5 is not > 10/2.
			bOne(budgetStep{op: "result", o: Timeout, retry: true}, budgetStep{op: "retry", want: 0}),
			bOne(budgetStep{op: "result", o: OK}, budgetStep{op: "level", want: 5.1}, budgetStep{op: "retry", want: 1}),
			// Floor at 0, cap at max.
			bRepeat(budgetStep{op: "result", o: Error}, 20),
			bOne(budgetStep{op: "level", want: 0}),
			bRepeat(budgetStep{op: "result", o: OK}, 200),
			bOne(budgetStep{op: "level", want: 10}),
		)},
		{"aws_quota/costs and refunds", BudgetConfig{Kind: "aws_quota", Capacity: 20, RetryCost: 5, TimeoutCost: 10, NoRetryIncrement: 1}, bScript(
			bOne(budgetStep{op: "retry", o: Error, want: 1}, budgetStep{op: "level", want: 15},
				budgetStep{op: "retry", o: Timeout, want: 1}, budgetStep{op: "level", want: 5},
				budgetStep{op: "retry", o: Timeout, want: 0},
				budgetStep{op: "retry", o: Unavailable, want: 1}, budgetStep{op: "level", want: 0},
				budgetStep{op: "retry", o: Error, want: 0}),
			// A successful retry refunds its own cost; a failed one refunds nothing.
			bOne(budgetStep{op: "result", o: OK, retry: true, cause: Error}, budgetStep{op: "level", want: 5},
				budgetStep{op: "result", o: Timeout, retry: true, cause: Unavailable}, budgetStep{op: "level", want: 5},
				budgetStep{op: "result", o: OK, retry: true, cause: Timeout}, budgetStep{op: "level", want: 15}),
			// First-try successes refund 1 each, capped at capacity.
			bRepeat(budgetStep{op: "result", o: OK}, 15),
			bOne(budgetStep{op: "level", want: 20}),
		)},
		{"aws_quota/2026 throttle cost", BudgetConfig{Preset: "aws-2026", Capacity: 20}, bScript(
			bOne(budgetStep{op: "retry", o: Error, want: 1}, budgetStep{op: "level", want: 6},
				budgetStep{op: "retry", o: Error, want: 0},
				budgetStep{op: "retry", o: Unavailable, want: 1}, budgetStep{op: "level", want: 1}),
		)},
		{"concurrency/envoy", BudgetConfig{Kind: "concurrency", Percent: 20, MinConcurrency: 3}, bScript(
			bReqs(0, 10),
			bOne(budgetStep{op: "level", want: 3},
				budgetStep{op: "retry", want: 1}, budgetStep{op: "retry", want: 1}, budgetStep{op: "retry", want: 1},
				budgetStep{op: "retry", want: 0}),
			// A retry's end frees its slot; a first attempt's end does not.
			bOne(budgetStep{op: "result", o: Error, retry: false}, budgetStep{op: "retry", want: 0},
				budgetStep{op: "result", o: Error, retry: true}, budgetStep{op: "retry", want: 1}),
			// 12 attempts are active (3 of them retries); 27 more make 39:
			// ⌊0.2·39⌋ = 7 retries allowed, 3 in use.
			bReqs(0, 27),
			bOne(budgetStep{op: "level", want: 4}),
		)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := NewBudget(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			runBudgetScript(t, b, tt.steps)
		})
	}
}

func bRepeat(s budgetStep, n int) []budgetStep {
	out := make([]budgetStep, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// TestRatioBudgetModel checks the bucketed ratio budget against a brute-force
// model that keeps every event: each retry is admitted exactly when, counting
// it, the retries in the window stay within Ratio·requests + MinPerSec·Window.
func TestRatioBudgetModel(t *testing.T) {
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 7))
		ratio := []float64{0.05, 0.1, 0.2, 0.5, 1}[r.IntN(5)]
		minPerSec := []float64{0, 0, 0.5, 10}[r.IntN(4)]
		window := time.Duration(1+r.IntN(20)) * time.Second
		b, err := NewBudget(BudgetConfig{Kind: "ratio", Ratio: ratio, MinPerSec: minPerSec, Window: window})
		if err != nil {
			t.Fatal(err)
		}
		width := window / windowBuckets
		var reqAt, retryAt []time.Duration
		now := time.Duration(0)
		meanGap := time.Duration(1+r.IntN(500)) * milli
		pRetry := r.Float64()
		for range 3000 {
			now += time.Duration(r.ExpFloat64() * float64(meanGap))
			if r.Float64() >= pRetry {
				b.OnRequest(now)
				reqAt = append(reqAt, now)
				continue
			}
			start := (now/width - windowBuckets + 1) * width
			var nReq, nRetry int
			for _, x := range reqAt {
				if x >= start {
					nReq++
				}
			}
			for _, x := range retryAt {
				if x >= start {
					nRetry++
				}
			}
			limit := ratio*float64(nReq) + minPerSec*window.Seconds()
			want := float64(nRetry+1) <= limit+1e-9
			if got := b.TryRetry(now, Error); got != want {
				t.Fatalf("seed %d t=%v: TryRetry = %v, model says %v (retries %d, requests %d, limit %v)",
					seed, now, got, want, nRetry, nReq, limit)
			}
			if want {
				retryAt = append(retryAt, now)
			}
		}
	}
}

// TestRatioBudgetLongRun checks the Google SRE book's claim that a budget of
// retries ≤ 10 % of requests caps the load of a failing backend near 1.1×
// (3× with 3 attempts and no budget): every request fails and asks for two
// retries, and admitted retries settle at Ratio of requests.
func TestRatioBudgetLongRun(t *testing.T) {
	b, err := NewBudget(BudgetConfig{Preset: "sre"})
	if err != nil {
		t.Fatal(err)
	}
	var admitted, requests int
	for i := range 100_000 {
		now := time.Duration(i) * milli
		b.OnRequest(now)
		requests++
		for range 2 {
			if b.TryRetry(now, Unavailable) {
				admitted++
			}
		}
	}
	// Deterministic arrivals: the budget's only slack is one window's worth
	// of rounding, ≤ 0.1·10 000 over 100 000 requests.
	share := float64(admitted) / float64(requests)
	if share > 0.1+1e-9 || share < 0.09 {
		t.Fatalf("retry share = %v, want in [0.09, 0.1]", share)
	}
}

func TestBudgetValidate(t *testing.T) {
	tests := []struct {
		cfg  BudgetConfig
		want string // substring of the error; "" for valid
	}{
		{BudgetConfig{Ratio: 0.1}, ""},
		{BudgetConfig{Kind: "ratio", Ratio: 1.5}, "ratio: must be in (0, 1], got 1.5"},
		{BudgetConfig{Kind: "ratio"}, "ratio: must be in (0, 1], got 0"},
		{BudgetConfig{Kind: "ratio", Ratio: 0.1, MinPerSec: -1}, "budget.min_per_sec"},
		{BudgetConfig{Kind: "ratio", Ratio: 0.1, Window: -time.Second}, "budget.window"},
		{BudgetConfig{Kind: "ratio", Ratio: math.NaN()}, "budget.ratio"},
		{BudgetConfig{Kind: "token_bucket", MaxTokens: 2000}, "budget.max_tokens"},
		{BudgetConfig{Kind: "token_bucket", TokenRatio: -1}, "budget.token_ratio"},
		{BudgetConfig{Kind: "aws_quota", RetryCost: -5}, "budget.retry_cost"},
		{BudgetConfig{Kind: "concurrency", Percent: -1}, "budget.percent"},
		{BudgetConfig{Kind: "concurrency", MinConcurrency: -1}, "budget.min_concurrency"},
		{BudgetConfig{Kind: "leaky"}, `unknown kind "leaky"`},
		{BudgetConfig{}, "budget.kind: missing"},
		{BudgetConfig{Ratio: 0.1, Scope: "global"}, "budget.scope"},
	}
	for _, tt := range tests {
		err := tt.cfg.Validate()
		if tt.want == "" {
			if err != nil {
				t.Errorf("%+v: unexpected error %v", tt.cfg, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: error %v, want it to contain %q", tt.cfg, err, tt.want)
		}
		if _, err := NewBudget(tt.cfg); err == nil {
			t.Errorf("NewBudget(%+v) accepted an invalid config", tt.cfg)
		}
	}
	if _, err := NewBudget(BudgetConfig{Preset: "nope"}); err == nil || !strings.Contains(err.Error(), "budget.preset") {
		t.Errorf("unknown preset: error %v", err)
	}
}

func BenchmarkBudgets(b *testing.B) {
	for _, name := range BudgetPresetNames() {
		b.Run(name, func(b *testing.B) {
			bu, err := NewBudget(BudgetConfig{Preset: name})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for i := range b.N {
				now := time.Duration(i) * time.Microsecond * 100
				bu.OnRequest(now)
				if bu.TryRetry(now, Unavailable) {
					bu.OnResult(now, Report{Outcome: OK, Retry: true, Cause: Unavailable})
				}
				bu.OnResult(now, Report{Outcome: Unavailable, Retryable: true})
				bu.OnRequestDone(now)
			}
		})
	}
}

// TestTokenBucketThreshold checks gRPC's claim for the 10 / 0.1 bucket: it
// throttles at roughly 10 % failures. Each attempt moves the tokens by −1
// with probability f and +0.1 otherwise, a drift of 0.1 − 1.1f that changes
// sign at f = 1/11 ≈ 9 %: below it the bucket stays full and retries pass,
// above it the bucket drains and retries stop. Every logical call sends up
// to 3 attempts, each failing independently with probability f.
func TestTokenBucketThreshold(t *testing.T) {
	for _, tt := range []struct {
		f        float64
		min, max float64 // share of retries admitted
	}{
		{0.03, 0.95, 1},
		{0.20, 0, 0.05},
	} {
		b, _ := NewBudget(BudgetConfig{Preset: "grpc"})
		r := rand.New(rand.NewPCG(8, 9))
		asked, admitted := 0, 0
		for range 50_000 {
			b.OnRequest(0)
			for attempt := 1; attempt <= 3; attempt++ {
				o := OK
				if r.Float64() < tt.f {
					o = Unavailable
				}
				b.OnResult(0, Report{Outcome: o, Retry: attempt > 1, Retryable: true})
				if o == OK || attempt == 3 {
					break
				}
				asked++
				if !b.TryRetry(0, o) {
					break
				}
				admitted++
			}
		}
		share := float64(admitted) / float64(asked)
		t.Logf("f = %v: %d of %d retries admitted (%.3f)", tt.f, admitted, asked, share)
		if share < tt.min || share > tt.max {
			t.Errorf("f = %v: %.3f of retries admitted, want in [%v, %v]", tt.f, share, tt.min, tt.max)
		}
	}
}
