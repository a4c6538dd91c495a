package tune

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Hop is one hop of a call chain: the service called, with the measured
// latency of one attempt of the call into it as its caller sees it
// (everything below it included).
type Hop struct {
	Name    string
	Samples Samples
	// Source says where the samples came from, for reports.
	Source string
	// Note carries a reader's remark, such as how many results it excluded.
	Note string
}

// Options configure Recommend. Zero values take the defaults given per field.
type Options struct {
	// Deadline is the end-to-end deadline of a request at the top of the
	// chain. Required.
	Deadline time.Duration
	// Percentile (0–1) sets each attempt timeout at that quantile of the
	// hop's latency. Default 0.999.
	Percentile float64
	// HedgePercentile (0–1) sets the hedge delay. Default 0.95.
	HedgePercentile float64
	// MaxAmplification bounds worst-case load amplification through the
	// retry budget. Default 1.2.
	MaxAmplification float64
	// Response is the time each hop reserves for its answer to travel back
	// to its caller. Default 0.
	Response time.Duration
	// MaxAttempts caps the attempts recommended at the retry owner.
	// Default 3 (the Google SRE book's per-request limit).
	MaxAttempts int
}

func (o Options) withDefaults() (Options, error) {
	if o.Percentile == 0 {
		o.Percentile = 0.999
	}
	if o.HedgePercentile == 0 {
		o.HedgePercentile = 0.95
	}
	if o.MaxAmplification == 0 {
		o.MaxAmplification = 1.2
	}
	if o.MaxAttempts == 0 {
		o.MaxAttempts = 3
	}
	switch {
	case o.Deadline <= 0:
		return o, fmt.Errorf("deadline: must be > 0, got %v", o.Deadline)
	case !(o.Percentile > 0 && o.Percentile < 1):
		return o, fmt.Errorf("percentile: must be in (0, 1), got %v", o.Percentile)
	case !(o.HedgePercentile > 0 && o.HedgePercentile < 1):
		return o, fmt.Errorf("hedge percentile: must be in (0, 1), got %v", o.HedgePercentile)
	case !(o.MaxAmplification >= 1) || math.IsInf(o.MaxAmplification, 0):
		return o, fmt.Errorf("max amplification: must be ≥ 1, got %v", o.MaxAmplification)
	case o.Response < 0:
		return o, fmt.Errorf("response: must be ≥ 0, got %v", o.Response)
	case o.MaxAttempts < 1:
		return o, fmt.Errorf("max attempts: must be ≥ 1, got %d", o.MaxAttempts)
	}
	return o, nil
}

// Plan is the recommendation for a chain.
type Plan struct {
	Options Options
	// Hops are top-down, as given.
	Hops []HopPlan
	// Owner is the index of the hop whose caller should own retries, or −1
	// when no hop's budget fits a second attempt.
	Owner int
	// OwnerReason explains the choice in a sentence.
	OwnerReason string
	// BudgetRatio is the retry budget ratio r for the owner alone:
	// worst-case amplification 1 + r = MaxAmplification.
	BudgetRatio float64
	// BudgetRatioEveryHop is the ratio that gives the same bound if every
	// one of the N hops retried: (1 + r)^N = MaxAmplification.
	BudgetRatioEveryHop float64
	// Warnings are things a person should look at (mixed populations).
	Warnings []string
}

// HopPlan is the recommendation for one hop (the call into it).
type HopPlan struct {
	Name   string
	Source string
	Note   string
	N      int
	P50    time.Duration
	P99    time.Duration
	P999   time.Duration
	// Quantile is the hop latency at Options.Percentile.
	Quantile time.Duration
	// Timeout is the recommended attempt timeout: Quantile, raised above
	// the retry owner so a caller waits for its callee's retries.
	Timeout time.Duration
	// Spurious is the predicted spurious-timeout rate: the fraction of
	// samples above Timeout, attempts that would have succeeded but are cut.
	Spurious float64
	// OwnP50 and OwnP99 are the hop's own share of its latency, the part
	// not spent in the next hop down: its quantile minus the callee's
	// (the whole latency for the last hop).
	OwnP50 time.Duration
	OwnP99 time.Duration
	// Budget is the time left for the call into this hop, attempts and
	// retries included: the deadline less every caller's own work (OwnP99)
	// and response reserve.
	Budget time.Duration
	// Fit is how many attempts of length Quantile fit in Budget.
	Fit int
	// Attempts is the recommended max attempts (1 except at the owner).
	Attempts int
	// HedgeDelay is the hop latency at Options.HedgePercentile.
	HedgeDelay time.Duration
	// HedgeLoad is the predicted extra load of hedging: P(latency > delay).
	HedgeLoad float64
	// HedgedP99 is the predicted p99 with one hedge after HedgeDelay.
	HedgedP99 time.Duration
	// Modes is set when the samples look like a mix of populations.
	Modes *Modes

	samples Samples
}

// DeadlineError reports a hop whose budget cannot hold even one attempt.
type DeadlineError struct {
	Hop        string
	Budget     time.Duration
	Timeout    time.Duration
	Percentile float64
	// Within is the fraction of the hop's samples no longer than Budget.
	Within float64
}

// ErrDeadlineTooShort is matched by errors.Is on every *DeadlineError.
var ErrDeadlineTooShort = errors.New("deadline too short")

func (e *DeadlineError) Error() string {
	if e.Budget <= 0 {
		return fmt.Sprintf("hop %q: deadline too short: nothing is left for it after its callers' own work (budget %v)", e.Hop, e.Budget)
	}
	return fmt.Sprintf("hop %q: deadline too short: its budget %v cannot hold one attempt with timeout %v (%s); only %.2f%% of its samples finish within the budget",
		e.Hop, round(e.Budget), round(e.Timeout), PercentileName(e.Percentile), 100*e.Within)
}

// Is makes errors.Is(err, ErrDeadlineTooShort) true.
func (e *DeadlineError) Is(target error) bool { return target == ErrDeadlineTooShort }

// Recommend computes timeouts, the retry owner and its attempts, hedge
// delays and the retry budget for a chain of hops given top-down.
//
// The deadline is split top-down: the first hop's budget is the deadline,
// and each next hop gets what remains after its caller's own work (OwnP99)
// and the response reserve. A hop whose budget holds no attempt at its
// timeout is an error naming it. Retries go to one layer only (the deepest
// hop whose budget fits two attempts), since retrying at every one of N
// layers multiplies worst-case load to kᴺ.
func Recommend(hops []Hop, opt Options) (*Plan, error) {
	opt, err := opt.withDefaults()
	if err != nil {
		return nil, err
	}
	if len(hops) == 0 {
		return nil, errors.New("no hops")
	}
	seen := map[string]bool{}
	for _, h := range hops {
		switch {
		case h.Name == "":
			return nil, errors.New("hop with an empty name")
		case seen[h.Name]:
			return nil, fmt.Errorf("hop %q given twice", h.Name)
		case h.Samples.Len() == 0:
			return nil, fmt.Errorf("hop %q: %w", h.Name, errNoSamples)
		}
		seen[h.Name] = true
	}
	p := &Plan{Options: opt, Owner: -1}
	n := len(hops)
	budget := opt.Deadline
	for i, h := range hops {
		s := h.Samples
		hp := HopPlan{
			Name: h.Name, Source: h.Source, Note: h.Note, N: s.Len(),
			P50: s.Quantile(0.5), P99: s.Quantile(0.99), P999: s.Quantile(0.999),
			Quantile: s.Quantile(opt.Percentile),
			Budget:   budget, Attempts: 1,
			samples: s,
		}
		hp.OwnP50, hp.OwnP99 = hp.P50, hp.P99
		if i+1 < n {
			next := hops[i+1].Samples
			hp.OwnP50 = max(0, hp.P50-next.Quantile(0.5))
			hp.OwnP99 = max(0, hp.P99-next.Quantile(0.99))
		}
		if hp.Quantile <= 0 {
			// A timeout of 0 would mean none, and every budget would fit
			// infinitely many attempts: nothing sound to recommend.
			return nil, fmt.Errorf("hop %q: %s of its %d samples is 0, so no timeout can be derived from it: are they in a unit too coarse for them (e.g. ms for a cache hit)?", h.Name, PercentileName(opt.Percentile), s.Len())
		}
		hp.Timeout = hp.Quantile
		if budget > 0 {
			hp.Fit = int(budget / hp.Quantile)
		}
		if hp.Fit < 1 {
			return nil, &DeadlineError{Hop: h.Name, Budget: budget, Timeout: hp.Quantile,
				Percentile: opt.Percentile, Within: 1 - s.Above(budget)}
		}
		hp.HedgeDelay = s.Quantile(opt.HedgePercentile)
		hp.HedgeLoad = s.Above(hp.HedgeDelay)
		hp.HedgedP99 = s.HedgedQuantile(0.99, hp.HedgeDelay)
		if w := smallSampleWarning(opt.Percentile, s.Len(), "its timeout", "collect more samples, or lower --percentile"); w != "" {
			p.Warnings = append(p.Warnings, fmt.Sprintf("hop %q: %s", h.Name, w))
		}
		if w := smallSampleWarning(opt.HedgePercentile, s.Len(), "its hedge delay", "collect more samples, or lower --hedge-percentile"); w != "" {
			p.Warnings = append(p.Warnings, fmt.Sprintf("hop %q: %s", h.Name, w))
		}
		if m := DetectModes(s); m.Multimodal {
			hp.Modes = &m
			p.Warnings = append(p.Warnings, fmt.Sprintf("hop %q: samples look like a mix of populations (%s); one blended threshold serves neither: %s",
				h.Name, m.Describe(), m.Advice(opt.Percentile)))
		}
		p.Hops = append(p.Hops, hp)
		budget -= hp.OwnP99 + opt.Response
	}

	// Retries at the deepest hop that fits two attempts: its retry repeats
	// the least work and it sits right above the layer that fails.
	for i := n - 1; i >= 0; i-- {
		if p.Hops[i].Fit >= 2 && opt.MaxAttempts >= 2 {
			p.Owner = i
			break
		}
	}
	switch {
	case p.Owner < 0:
		p.OwnerReason = "no hop's budget fits a second attempt at its timeout: do not retry; hedge or raise the deadline instead"
	default:
		o := &p.Hops[p.Owner]
		o.Attempts = min(o.Fit, opt.MaxAttempts)
		p.OwnerReason = fmt.Sprintf("retry only on the call into %q, up to %d attempts (%d fit its %v budget)", o.Name, o.Attempts, o.Fit, round(o.Budget))
		if n > 1 {
			p.OwnerReason += fmt.Sprintf(": retrying at one layer bounds the worst case at %d attempts instead of %d^%d = %d; it is the deepest hop with room for a retry, so a retry repeats the least work",
				o.Attempts, o.Attempts, n, pow(o.Attempts, n))
		}
		// Callers above the owner must wait for its retries, or their
		// own timeouts cut them short.
		inner := time.Duration(o.Attempts) * o.Timeout
		for i := p.Owner - 1; i >= 0; i-- {
			h := &p.Hops[i]
			need := h.OwnP99 + opt.Response + inner
			if need > h.Timeout {
				h.Timeout = need
			}
			inner = h.Timeout
		}
	}
	for i := range p.Hops {
		h := &p.Hops[i]
		h.Spurious = hops[i].Samples.Above(h.Timeout)
	}
	p.BudgetRatio = opt.MaxAmplification - 1
	p.BudgetRatioEveryHop = math.Pow(opt.MaxAmplification, 1/float64(n)) - 1
	return p, nil
}

// PercentileName formats a quantile as a percentile label: 0.999 → "p99.9".
func PercentileName(q float64) string {
	return "p" + trimFloat(100*q)
}

func trimFloat(v float64) string {
	s := fmt.Sprintf("%.4f", v)
	for s[len(s)-1] == '0' {
		s = s[:len(s)-1]
	}
	if s[len(s)-1] == '.' {
		s = s[:len(s)-1]
	}
	return s
}

// round shortens a duration for people: 3 significant digits.
func round(d time.Duration) time.Duration {
	for _, u := range []time.Duration{time.Second, time.Millisecond, time.Microsecond} {
		if d >= 100*u {
			return d.Round(u)
		}
		if d >= 10*u {
			return d.Round(u / 10)
		}
		if d >= u {
			return d.Round(u / 100)
		}
	}
	return d
}

func pow(k, n int) int {
	r := 1
	for range n {
		r *= k
	}
	return r
}
