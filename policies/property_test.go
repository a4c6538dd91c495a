package policies

import (
	"math/rand/v2"
	"testing"
	"time"
)

// randomOutcome draws an attempt outcome, failures with probability pFail.
func randomOutcome(r *rand.Rand, pFail float64) Outcome {
	if r.Float64() < pFail {
		return []Outcome{Unavailable, Timeout, Error}[r.IntN(3)]
	}
	return []Outcome{OK, OK, OK, Conflict, InProgress}[r.IntN(5)]
}

// TestBudgetInvariants drives every budget preset with random interleavings
// of requests, retries and results, and checks each kind's invariants
// against an independent model.
func TestBudgetInvariants(t *testing.T) {
	for _, name := range BudgetPresetNames() {
		t.Run(name, func(t *testing.T) {
			cfg, _ := BudgetPreset(name)
			for seed := range uint64(50) {
				r := rand.New(rand.NewPCG(seed, 99))
				b, err := NewBudget(cfg)
				if err != nil {
					t.Fatal(err)
				}
				pFail := r.Float64()
				tokens := cfg.MaxTokens // token_bucket model
				var inflight []bool     // concurrency model: retry flag of each attempt in flight
				now := time.Duration(0)
				for step := range 2000 {
					now += time.Duration(r.IntN(20)) * milli
					switch r.IntN(3) {
					case 0:
						b.OnRequest(now)
						inflight = append(inflight, false)
					case 1:
						cause := randomOutcome(r, 1)
						activeRetries := 0
						for _, rt := range inflight {
							if rt {
								activeRetries++
							}
						}
						ok := b.TryRetry(now, cause)
						switch cfg.Kind {
						case BudgetTokenBucket:
							if ok != (tokens > cfg.MaxTokens/2) {
								t.Fatalf("seed %d step %d: TryRetry %v with %v tokens of %v", seed, step, ok, tokens, cfg.MaxTokens)
							}
						case BudgetConcurrency:
							allowed := max(int(cfg.Percent/100*float64(len(inflight))), cfg.MinConcurrency)
							if ok != (activeRetries < allowed) {
								t.Fatalf("seed %d step %d: TryRetry %v with %d retries of %d allowed (%d active)",
									seed, step, ok, activeRetries, allowed, len(inflight))
							}
						}
						if ok {
							// Sent at once, as a retry without backoff is.
							if s, sends := b.(sendCounter); sends {
								s.onSend(now)
							}
							inflight = append(inflight, true)
						}
					case 2:
						if len(inflight) == 0 {
							continue
						}
						i := r.IntN(len(inflight))
						retry := inflight[i]
						inflight = append(inflight[:i], inflight[i+1:]...)
						o := randomOutcome(r, pFail)
						b.OnResult(now, Report{Outcome: o, Retry: retry, Retryable: true})
						if o == OK {
							tokens = min(cfg.MaxTokens, tokens+cfg.TokenRatio)
						} else if CountsAsFailure(o) {
							tokens = max(0, tokens-1)
						}
					}
					l := b.Level(now)
					if l < 0 {
						t.Fatalf("seed %d step %d: negative level %v", seed, step, l)
					}
					switch cfg.Kind {
					case BudgetAWSQuota:
						if l > float64(cfg.Capacity) {
							t.Fatalf("seed %d step %d: quota %v above capacity %d", seed, step, l, cfg.Capacity)
						}
					case BudgetTokenBucket:
						if d := l - tokens; d > 1e-9 || d < -1e-9 {
							t.Fatalf("seed %d step %d: tokens %v, model %v", seed, step, l, tokens)
						}
					}
				}
			}
		})
	}
}

// TestBreakerInvariants drives the breaker presets (with short open times)
// with random admissions and late results, and checks that an open breaker
// admits nothing before its open time ends, that a half-open generation
// admits at most its probes, and that stale results never change the state.
func TestBreakerInvariants(t *testing.T) {
	for _, name := range BreakerPresetNames() {
		t.Run(name, func(t *testing.T) {
			for seed := range uint64(30) {
				r := rand.New(rand.NewPCG(seed, 5))
				cfg, _ := BreakerPreset(name)
				cfg.OpenFor = time.Duration(1+r.IntN(500)) * milli
				if cfg.Kind == BreakerRate {
					cfg.WindowSize, cfg.MinCalls = 1+r.IntN(20), 1+r.IntN(20)
				}
				b, err := NewBreaker(cfg)
				if err != nil {
					t.Fatal(err)
				}
				core := coreOf(b)
				pFail := r.Float64()
				type pending struct {
					ticket uint64
				}
				var out []pending
				var openedAt time.Duration
				lastOpens := int64(0)
				admittedInGen := map[uint64]int{}
				now := time.Duration(0)
				for step := range 3000 {
					now += time.Duration(r.IntN(10)) * milli
					if r.IntN(2) == 0 {
						state := b.State(now)
						if b.Opens() != lastOpens { // Hystrix opens on its snapshot ticks
							lastOpens, openedAt = b.Opens(), now
						}
						tk, ok := b.Allow(now)
						if state == Open && ok {
							t.Fatalf("seed %d step %d: open breaker admitted at %v (opened %v, open for %v)", seed, step, now, openedAt, cfg.OpenFor)
						}
						if state == Open && now-openedAt > cfg.OpenFor {
							t.Fatalf("seed %d step %d: still open %v after opening at %v", seed, step, now, openedAt)
						}
						if ok {
							out = append(out, pending{tk})
							if state == HalfOpen {
								admittedInGen[tk]++
								if admittedInGen[tk] > cfg.HalfOpenCalls {
									t.Fatalf("seed %d step %d: %d probes admitted, want ≤ %d", seed, step, admittedInGen[tk], cfg.HalfOpenCalls)
								}
							}
						}
						continue
					}
					if len(out) == 0 {
						continue
					}
					i := r.IntN(len(out))
					p := out[i]
					out = append(out[:i], out[i+1:]...)
					stateBefore, gen := b.State(now), core.gen
					b.Done(now, p.ticket, randomOutcome(r, pFail), time.Duration(r.IntN(100))*milli)
					// gobreaker drops results of an earlier generation;
					// resilience4j and Hystrix give them to the current state.
					if cfg.Kind == BreakerConsecutive && p.ticket != gen && (b.State(now) != stateBefore || core.gen != gen) {
						t.Fatalf("seed %d step %d: a stale result moved the breaker from %v to %v", seed, step, stateBefore, b.State(now))
					}
					if b.Opens() != lastOpens {
						lastOpens, openedAt = b.Opens(), now
					}
				}
				if pFail > 0.8 && b.Opens() == 0 {
					t.Fatalf("seed %d: failure rate %.2f never opened the breaker", seed, pFail)
				}
			}
		})
	}
}

func coreOf(b Breaker) *breakerCore {
	switch b := b.(type) {
	case *consecutiveBreaker:
		return &b.breakerCore
	case *rateBreaker:
		return &b.breakerCore
	case *hystrixBreaker:
		return &b.breakerCore
	}
	panic("unknown breaker")
}
